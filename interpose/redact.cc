#include "interpose/redact.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace idlescope::redact {
namespace {

std::atomic<int> g_state{0};  // 0 = not read, 1 = being read, 2 = read
bool g_paths = false, g_cmdline = false;
bool g_secrets = true;  // the default: IDLESCOPE_REDACT=none turns it off
uint8_t g_key[16];
char g_key_hex[33] = "";
char g_bad[64] = "";

inline uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool ContainsNoCase(std::string_view text, std::string_view word) {
  for (size_t at = 0; at + word.size() <= text.size(); ++at) {
    size_t i = 0;
    while (i < word.size() && Lower(text[at + i]) == word[i]) ++i;
    if (i == word.size()) return true;
  }
  return false;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != b[i]) return false;
  }
  return true;
}

void AppendHash(std::string* out, std::string_view name, const uint8_t key[16]) {
  static constexpr char kHex[] = "0123456789abcdef";
  uint64_t h = SipHash24(key, name);
  for (int i = 0; i < 12; ++i) out->push_back(kHex[(h >> (60 - 4 * i)) & 15]);
}

// A file name's extension as kept: from its first dot (not a leading one) when that is short and
// plain (".pt", ".tar.gz", ".so.13", ".pt.tmp"), else from its last dot when that is, else none.
std::string_view Extension(std::string_view name) {
  auto plain = [](std::string_view s, size_t max, bool dots) {
    if (s.size() < 2 || s.size() > max) return false;
    for (char c : s.substr(1)) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-' || (dots && c == '.');
      if (!ok) return false;
    }
    return true;
  };
  size_t first = name.find('.', 1);
  if (first == std::string_view::npos) return {};
  if (plain(name.substr(first), 24, true)) return name.substr(first);
  size_t last = name.rfind('.');
  if (last >= 1 && plain(name.substr(last), 13, false)) return name.substr(last);
  return {};
}

// The analyzer's rules that read names (analyzer/analysis/event_classes.cc IsModelCheckpointPath,
// kept in step by tests/interpose/redact_test.cc): a directory named for checkpoints, a ".bin" file
// named for model state.
bool NamesCheckpoints(std::string_view dir) {
  return ContainsNoCase(dir, "checkpoint") || ContainsNoCase(dir, "ckpt");
}
bool NamesModelState(std::string_view file) {
  for (std::string_view word :
       {"model", "weight", "optim", "adapter", "ckpt", "checkpoint", "state", "rng", "scheduler"}) {
    if (ContainsNoCase(file, word)) return true;
  }
  return false;
}

// The directories whose names the analyzer's first-user-frame rule reads (analyzer/analysis/
// python_frames.cc IsUserCode, kept in step by tests/interpose/redact_test.cc): where CPython and
// packages install code (site-packages, dist-packages, the standard library's pythonX.Y) and
// torch. They name software, not the job, and stay readable.
bool NamesLibraryDirectory(std::string_view dir) {
  if (dir == "site-packages" || dir == "dist-packages" || dir == "torch") return true;
  if (!dir.starts_with("python")) return false;
  dir.remove_prefix(6);
  if (dir.ends_with('t')) dir.remove_suffix(1);  // free-threaded builds: python3.13t
  size_t dot = dir.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot + 1 == dir.size()) return false;
  for (size_t i = 0; i < dir.size(); ++i) {
    if (i != dot && (dir[i] < '0' || dir[i] > '9')) return false;
  }
  return true;
}

// analyzer/analysis/event_classes.cc IsInstallerName / IsInstallVerb (same test).
bool IsInstallerWord(std::string_view word) {
  size_t slash = word.rfind('/');
  std::string_view name = slash == std::string_view::npos ? word : word.substr(slash + 1);
  for (std::string_view installer : {"pip", "pip3", "conda", "mamba", "micromamba", "apt",
                                     "apt-get", "yum", "dnf", "uv", "poetry"}) {
    if (name == installer) return true;
  }
  if (name.starts_with("pip3.") || name.starts_with("pip-")) return true;
  for (std::string_view verb : {"install", "add", "sync", "create", "update", "upgrade"}) {
    if (word == verb) return true;
  }
  return false;
}

// Whether an option, variable or header name names a secret: one of its words (split at
// anything not a letter or digit, any case) is a secret's ("--hf-token", "AWS_SECRET_ACCESS_KEY",
// "--db_password", "Authorization"), or "key" follows "api", "access", "private", "secret",
// "signing", "encryption" or "client" ("--wandb-api-key"); "--max-tokens", "--author" and
// "--tokenizer" are other words.
bool NamesASecret(std::string_view name) {
  static constexpr std::string_view kSecretWords[] = {
      "token",       "secret", "password", "passwd",        "passphrase", "credential",
      "credentials", "apikey", "auth",     "authorization", "cookie",     "pat"};
  static constexpr std::string_view kKeyKinds[] = {"api",     "access",     "private", "secret",
                                                   "signing", "encryption", "client"};
  char word[32];
  size_t len = 0;
  bool long_word = false, key_kind = false;
  for (size_t i = 0; i <= name.size(); ++i) {
    const char c = i < name.size() ? Lower(name[i]) : '\0';
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      if (len < sizeof(word)) {
        word[len++] = c;
      } else {
        long_word = true;
      }
      continue;
    }
    if (len > 0 && !long_word) {
      const std::string_view w(word, len);
      for (std::string_view secret : kSecretWords) {
        if (w == secret) return true;
      }
      if (w == "key" && key_kind) return true;
      key_kind = false;
      for (std::string_view kind : kKeyKinds) key_kind |= w == kind;
    }
    len = 0;
    long_word = false;
  }
  return false;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

constexpr std::string_view kRedacted = "<redacted>";

// `word` with a URL's password ("scheme://user:PASSWORD@host") redacted.
void AppendWithUrlPasswordRedacted(std::string_view word, std::string* out) {
  const size_t scheme = word.find("://");
  if (scheme == std::string_view::npos) {
    out->append(word);
    return;
  }
  const size_t host = scheme + 3;
  const size_t authority_end = std::min(word.find_first_of("/?#", host), word.size());
  const size_t at = word.rfind('@', authority_end - 1);
  const size_t colon = at == std::string_view::npos || at < host
                           ? std::string_view::npos
                           : word.substr(host, at - host).find(':');
  if (colon == std::string_view::npos) {
    out->append(word);
    return;
  }
  out->append(word.substr(0, host + colon + 1));
  out->append(kRedacted);
  out->append(word.substr(at));
}

}  // namespace

std::string SecretsRedacted(std::string_view argv) {
  std::string out;
  out.reserve(argv.size());
  bool value_next = false;   // the word after "--token"
  bool rest_of_arg = false;  // the words after "Authorization:" in this argument
  size_t pos = 0;
  while (pos <= argv.size()) {
    size_t end = argv.find_first_of(std::string_view("\0 ", 2), pos);
    if (end == std::string_view::npos) end = argv.size();
    const std::string_view word = argv.substr(pos, end - pos);
    if (word.empty()) {
    } else if (rest_of_arg || (value_next && word[0] != '-')) {
      out.append(kRedacted);
      value_next = false;
    } else {
      value_next = false;
      const size_t eq = word.find('=');
      const size_t colon = word.find(':');
      size_t name_start = 0;
      while (name_start < word.size() && word[name_start] == '-') ++name_start;
      const std::string_view head = word.substr(0, std::min(eq, word.size()));
      bool name_like = head.size() > name_start;
      for (char c : head.substr(name_start)) name_like &= IsNameChar(c);
      if (eq != std::string_view::npos && name_like && NamesASecret(head)) {
        // --token=VALUE, HF_TOKEN=VALUE
        out.append(word.substr(0, eq + 1));
        if (eq + 1 < word.size()) out.append(kRedacted);
      } else if (name_start > 0 && eq == std::string_view::npos && name_like &&
                 NamesASecret(head)) {
        out.append(word);  // --token VALUE
        value_next = true;
      } else if (name_start == 0 && colon != std::string_view::npos && colon > 0 &&
                 colon + 1 == word.size() && NamesASecret(word.substr(0, colon))) {
        out.append(word);  // "Authorization: Bearer VALUE"
        rest_of_arg = true;
      } else if (name_start == 0 && colon != std::string_view::npos && colon > 0 &&
                 word.find("://") == std::string_view::npos &&
                 NamesASecret(word.substr(0, colon))) {
        out.append(word.substr(0, colon + 1));  // "X-Api-Key:VALUE"
        out.append(kRedacted);
      } else {
        AppendWithUrlPasswordRedacted(word, &out);
      }
    }
    if (end == argv.size()) break;
    out.push_back(argv[end]);
    if (argv[end] == '\0') rest_of_arg = false;
    pos = end + 1;
  }
  return out;
}

namespace {

void ParseRedact(const char* v) {
  size_t bad = 0;
  while (v != nullptr && *v != '\0') {
    const char* comma = strchr(v, ',');
    size_t len = comma == nullptr ? strlen(v) : static_cast<size_t>(comma - v);
    std::string_view item(v, len);
    if (item == "paths") {
      g_paths = true;
    } else if (item == "cmdline") {
      g_cmdline = true;
    } else if (item == "all") {
      g_paths = g_cmdline = true;
    } else if (item == "secrets") {
      g_secrets = true;
    } else if (item == "none") {
      g_secrets = false;
    } else if (!item.empty() && bad + len + 2 < sizeof(g_bad)) {
      if (bad > 0) g_bad[bad++] = ',';
      memcpy(g_bad + bad, v, len);
      bad += len;
      g_bad[bad] = '\0';
    }
    v = comma == nullptr ? nullptr : comma + 1;
  }
}

bool ParseKey(const char* hex) {
  if (hex == nullptr || strlen(hex) != 32) return false;
  for (int i = 0; i < 16; ++i) {
    int v = 0;
    for (int j = 0; j < 2; ++j) {
      char c = hex[2 * i + j];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    g_key[i] = static_cast<uint8_t>(v);
  }
  return true;
}

}  // namespace

uint64_t SipHash24(const uint8_t key[16], std::string_view data) {
  // Aumasson and Bernstein, "SipHash: a fast short-input PRF" (2012): 2 compression rounds per
  // 8-byte word, 4 finalization rounds.
  uint64_t k0 = Load64(key), k1 = Load64(key + 8);
  uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
  uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
  auto round = [&] {
    v0 += v1;
    v1 = Rotl(v1, 13);
    v1 ^= v0;
    v0 = Rotl(v0, 32);
    v2 += v3;
    v3 = Rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = Rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = Rotl(v1, 17);
    v1 ^= v2;
    v2 = Rotl(v2, 32);
  };
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  size_t words = n / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t m = Load64(p + 8 * i);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
  for (size_t i = 0; i < (n & 7); ++i) last |= static_cast<uint64_t>(p[8 * words + i]) << (8 * i);
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

std::string PathWithKey(std::string_view path, PathKind kind, const uint8_t key[16]) {
  if (kind == PathKind::kAddress) {
    if (path.starts_with("unix:@")) {
      std::string out = "unix:@";
      AppendHash(&out, path.substr(6), key);
      return out;
    }
    if (path.starts_with("unix:"))
      return "unix:" + PathWithKey(path.substr(5), PathKind::kFile, key);
    return std::string(path);  // ip:port
  }
  if (path.empty()) return {};
  if (path[0] != '/') {
    // Descriptor pseudo-paths from /proc/self/fd ("pipe:[123]", "socket:[4]", "anon_inode:...").
    size_t colon = path.find(':');
    if (colon != std::string_view::npos && path.find('/') > colon) return std::string(path);
  }
  for (std::string_view system : {"/proc", "/sys", "/dev"}) {
    if (path.starts_with(system) && (path.size() == system.size() || path[system.size()] == '/') &&
        !path.starts_with("/dev/shm/")) {
      return std::string(path);
    }
  }
  std::string out;
  std::string_view rest = path;
  if (rest.starts_with("/dev/shm/")) {
    out = "/dev/shm/";
    rest.remove_prefix(9);
  }
  while (!rest.empty()) {
    if (rest[0] == '/') {
      out.push_back('/');
      rest.remove_prefix(1);
      continue;
    }
    size_t slash = rest.find('/');
    std::string_view name = rest.substr(0, slash);
    bool last = slash == std::string_view::npos;
    rest = last ? std::string_view() : rest.substr(slash);
    if (name == "." || name == "..") {
      out.append(name);
    } else if (!last && NamesLibraryDirectory(name)) {
      out.append(name);
    } else if (!last) {
      if (NamesCheckpoints(name)) out.append("ckpt-");
      AppendHash(&out, name, key);
    } else if (kind == PathKind::kProgram) {
      out.append(name);
    } else {
      std::string_view ext = Extension(name);
      if (EqualsNoCase(ext, ".bin") && NamesModelState(name.substr(0, name.size() - 4))) {
        out.append("model-");
      }
      AppendHash(&out, name, key);
      out.append(ext);
    }
  }
  return out;
}

std::string ArgvWithKey(std::string_view argv, bool cmdline, bool paths, const uint8_t key[16]) {
  std::string out;
  size_t pos = 0;
  bool first = true;
  while (pos <= argv.size() && !argv.empty()) {
    size_t end = argv.find('\0', pos);
    if (end == std::string_view::npos) end = argv.size();
    std::string_view arg = argv.substr(pos, end - pos);
    pos = end + 1;
    std::string kept;
    if (first) {
      kept = paths ? PathWithKey(arg, PathKind::kProgram, key) : std::string(arg);
    } else if (cmdline) {
      // Only the words that tell an installer run ("python -m pip install", "sh -c 'pip ...'").
      size_t w = 0;
      while (w <= arg.size()) {
        size_t space = arg.find(' ', w);
        if (space == std::string_view::npos) space = arg.size();
        std::string_view word = arg.substr(w, space - w);
        if (IsInstallerWord(word)) {
          if (!kept.empty()) kept.push_back(' ');
          kept.append(paths ? PathWithKey(word, PathKind::kProgram, key) : std::string(word));
        }
        w = space + 1;
      }
      if (kept.empty()) continue;
    } else if (paths && arg.find('/') != std::string_view::npos) {
      // "--data=/x/y" keeps "--data=".
      size_t eq = arg.starts_with("-") ? arg.find('=') : std::string_view::npos;
      std::string_view head =
          eq == std::string_view::npos ? std::string_view() : arg.substr(0, eq + 1);
      kept = std::string(head) + PathWithKey(arg.substr(head.size()), PathKind::kFile, key);
    } else {
      kept = std::string(arg);
    }
    if (!first) out.push_back('\0');
    out.append(kept);
    first = false;
  }
  return out;
}

void Init() {
  int expected = 0;
  if (!g_state.compare_exchange_strong(expected, 1)) {
    while (g_state.load(std::memory_order_acquire) != 2) {
    }
    return;
  }
  ParseRedact(getenv("IDLESCOPE_REDACT"));
  if (g_paths || g_cmdline) {
    if (!ParseKey(getenv("IDLESCOPE_REDACT_KEY"))) {
      // One key per job: the first process makes it, the ones it starts inherit it
      // (interpose/hooks/process.cc passes IDLESCOPE_REDACT_KEY on).
      if (syscall(SYS_getrandom, g_key, sizeof(g_key), 0) != static_cast<long>(sizeof(g_key))) {
        timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t seed[2] = {static_cast<uint64_t>(ts.tv_nsec) ^ static_cast<uint64_t>(getpid()),
                            static_cast<uint64_t>(ts.tv_sec)};
        memcpy(g_key, seed, sizeof(g_key));
      }
    }
    static constexpr char kHex[] = "0123456789abcdef";
    for (int i = 0; i < 16; ++i) {
      g_key_hex[2 * i] = kHex[g_key[i] >> 4];
      g_key_hex[2 * i + 1] = kHex[g_key[i] & 15];
    }
    g_key_hex[32] = '\0';
  }
  g_state.store(2, std::memory_order_release);
}

bool Paths() { return g_paths; }
bool Cmdline() { return g_cmdline; }
bool Secrets() { return g_secrets; }
const char* KeyHex() { return g_key_hex; }
const char* BadValue() { return g_bad; }

std::string Path(std::string_view path, PathKind kind) {
  if (!g_paths) return std::string(path);
  return PathWithKey(path, kind, g_key);
}

std::string Argv(std::string_view argv) {
  std::string kept = g_secrets ? SecretsRedacted(argv) : std::string(argv);
  if (!g_paths && !g_cmdline) return kept;
  return ArgvWithKey(kept, g_cmdline, g_paths, g_key);
}

}  // namespace idlescope::redact
