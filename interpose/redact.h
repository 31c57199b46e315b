// IDLESCOPE_REDACT=paths,cmdline: traces that can leave the machine without the names in them;
// secrets in command lines are redacted by default.
//
// What a redacted trace keeps (docs/architecture.md, "Redaction"), so that the analysis still
// classifies every event as it would the clear trace:
//   - paths (file events, renames, unix socket addresses, the header's exe, exec'd programs,
//     loaded modules): each directory name becomes a 12-hex-digit keyed hash of it (SipHash-2-4,
//     the key per job: the same name gives the same hash in every process of the job, a name
//     cannot be tested without the key), so paths keep their shape (same directory, same
//     prefix). Kept in the clear: /proc/, /sys/ and /dev/ paths (not /dev/shm/'s names),
//     descriptor pseudo-paths ("pipe:[...]", "anon_inode:..."), a file name's extension
//     (from its first dot when short and plain: ".pt", ".tar.gz", ".so.13"), the file name of
//     programs and modules ("python3.11", "libcudart.so.13"), and two tags the analyzer's rules
//     need: "ckpt-" before a directory hash whose name contains "checkpoint" or "ckpt", "model-"
//     before a ".bin" file's hash whose name contains a model word (model, weight, optim, ...).
//   - command lines (the header's, exec'd and spawned programs' argv): with "cmdline", only
//     argv[0] and the words that name an installer ("pip", "conda", "install", ...); without it
//     but with "paths", every argument is kept with the paths in it redacted as above.
//   - secrets, on by default (IDLESCOPE_REDACT=none turns it off): in every command line, the
//     value of an option, variable or header that names a secret ("--hf-token X",
//     "--api-key=X", "AWS_SECRET_ACCESS_KEY=X", "Authorization: Bearer X", inside "sh -c" strings
//     too) and a URL's password ("https://user:X@host") become "<redacted>" (SecretsRedacted).
// Host names, kernel and function names, thread names and network addresses other than unix
// sockets are kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace idlescope::redact {

enum class PathKind : uint8_t {
  kFile,     // a file the program used: directories hashed, the name hashed but its extension
  kProgram,  // a program or a loaded module: directories hashed, the file name kept
  kAddress,  // a socket address ("ip:port", "unix:/path", "unix:@name"): only unix names hashed
};

// Reads IDLESCOPE_REDACT and IDLESCOPE_REDACT_KEY (32 hex digits; made from getrandom when
// absent, for this process and the ones it starts). Idempotent; allocation-free.
void Init();

bool Paths();
bool Cmdline();
// "secrets", on unless IDLESCOPE_REDACT has "none": the values of arguments that name a secret.
bool Secrets();
// "IDLESCOPE_REDACT_KEY" value for the processes this one starts ("" when not redacting).
const char* KeyHex();
// What IDLESCOPE_REDACT was not understood in ("" if all of it was), for a warning.
const char* BadValue();

// The path as the trace keeps it (the path itself when not redacting paths).
std::string Path(std::string_view path, PathKind kind);
// A command line (arguments separated by NUL) as the trace keeps it.
std::string Argv(std::string_view nul_separated);

// `nul_separated` with the secrets in it redacted (as Argv does unless IDLESCOPE_REDACT=none).
std::string SecretsRedacted(std::string_view nul_separated);

// Pure forms with an explicit key, for tests.
std::string PathWithKey(std::string_view path, PathKind kind, const uint8_t key[16]);
std::string ArgvWithKey(std::string_view nul_separated, bool cmdline, bool paths,
                        const uint8_t key[16]);
uint64_t SipHash24(const uint8_t key[16], std::string_view data);

}  // namespace idlescope::redact
