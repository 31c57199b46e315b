#include "tests/io/trace_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "analyzer/trace/trace_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "tests/interpose/without_compression.h"

extern char** environ;

namespace idlescope::testing {

std::string TraceFile::Str(uint64_t id) const {
  auto it = strings.find(id);
  return it == strings.end() ? std::string() : it->second;
}

std::vector<const TraceEvent*> TraceFile::OfType(EventType type) const {
  std::vector<const TraceEvent*> out;
  for (const TraceEvent& e : events) {
    if (e.event.type() == type) out.push_back(&e);
  }
  return out;
}

TraceFile ReadTraceFile(const std::string& path) {
  TraceFile file;
  file.path = path;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = testing::WithoutCompression(ss.str());
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(data.data()),
                                                static_cast<int>(data.size()));
  stream.SetTotalBytesLimit(INT32_MAX);
  FormatExpander expander(kTraceFormatV1);  // the header says which version
  for (;;) {
    uint32_t tag = stream.ReadTag();
    if (tag != 0x0a) break;
    uint32_t len;
    if (!stream.ReadVarint32(&len)) break;
    std::string bytes;
    if (!stream.ReadString(&bytes, static_cast<int>(len))) break;  // cut last packet
    Packet packet;
    if (!packet.ParseFromString(bytes)) break;
    if (packet.has_header()) expander = FormatExpander(packet.header().format_version());
    std::string error;
    if (!expander.Expand(&packet, &error)) break;  // v2 launch runs: one Event per launch
    switch (packet.data_case()) {
      case Packet::kHeader:
        file.header = packet.header();
        break;
      case Packet::kInterned:
        for (const auto& s : packet.interned().strings()) file.strings[s.id()] = s.str();
        break;
      case Packet::kEvents: {
        const EventBatch& batch = packet.events();
        file.dropped += batch.dropped();
        int64_t ts = 0;
        for (const Event& e : batch.events()) {
          ts += e.ts();
          file.events.push_back({e, static_cast<uint64_t>(ts), batch.tid()});
        }
        break;
      }
      case Packet::kFooter:
        file.has_footer = true;
        file.footer = packet.footer();
        break;
      default:
        break;
    }
  }
  return file;
}

std::vector<TraceFile> ReadTraceDir(const std::string& dir) {
  std::vector<TraceFile> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name.size() > 10 && name.substr(name.size() - 10) == ".idlescope") {
      files.push_back(ReadTraceFile(dir + "/" + name));
    }
  }
  closedir(d);
  return files;
}

std::string MakeTempDir(const std::string& base) {
  std::string root = base;
  if (root.empty()) {
    const char* tmp = getenv("TMPDIR");
    root = tmp != nullptr ? tmp : "/tmp";
  }
  std::string templ = root + "/idlescope-io-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) return "";
  return buf.data();
}

namespace {

int Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env_strings) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (const auto& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), env.data()) != 0) return -1;
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<std::string> CurrentEnv() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s = *e;
    if (s.rfind("LD_PRELOAD=", 0) == 0 || s.rfind("IDLESCOPE_", 0) == 0) continue;
    env.push_back(s);
  }
  return env;
}

}  // namespace

int RunTraced(const std::vector<std::string>& argv, const std::string& out_dir,
              const std::vector<std::string>& extra_env) {
  std::vector<std::string> env = CurrentEnv();
  // IDLESCOPE_TEST_PRELOAD_LIB: another build of the library (a test shown to fail before a fix).
  const char* lib = getenv("IDLESCOPE_TEST_PRELOAD_LIB");
  env.push_back(std::string("LD_PRELOAD=") +
                (lib != nullptr && *lib != '\0' ? lib : IDLESCOPE_PRELOAD_LIB));
  env.push_back("IDLESCOPE_OUT=" + out_dir);
  env.push_back("IDLESCOPE_QUIET=1");
  for (const auto& e : extra_env) env.push_back(e);
  return Spawn(argv, env);
}

int RunWithCli(const std::string& cli, const std::vector<std::string>& argv,
               const std::string& out_dir, const std::vector<std::string>& extra_env) {
  std::vector<std::string> full = {cli, "run", "-o", out_dir, "--quiet", "--"};
  full.insert(full.end(), argv.begin(), argv.end());
  std::vector<std::string> env = CurrentEnv();
  for (const auto& e : extra_env) env.push_back(e);
  return Spawn(full, env);
}

int RunBare(const std::vector<std::string>& argv) { return Spawn(argv, CurrentEnv()); }

TracedChild StartTraced(const std::vector<std::string>& argv, const std::string& out_dir,
                        const std::vector<std::string>& extra_env) {
  std::vector<std::string> env = CurrentEnv();
  env.push_back(std::string("LD_PRELOAD=") + IDLESCOPE_PRELOAD_LIB);
  env.push_back("IDLESCOPE_OUT=" + out_dir);
  for (const auto& e : extra_env) env.push_back(e);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {};
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return {};
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  TracedChild child;
  pid_t pid;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data()) == 0) {
    child = {pid, out[0], err[0]};
  } else {
    close(out[0]);
    close(err[0]);
  }
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  return child;
}

std::string ReadAll(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    s.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return s;
}

int Wait(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace idlescope::testing
