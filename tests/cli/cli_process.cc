#include "tests/cli/cli_process.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace idlescope::testing {

pid_t StartProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& out_path, const std::string& err_path,
                   const std::string& cwd) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  // Child: only async-signal-safe work would be strictly required after fork in a threaded
  // parent; the test binaries are single-threaded when they call this.
  int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0 || err < 0) _exit(120);
  dup2(out, 1);
  dup2(err, 2);
  for (const std::string& e : env) {
    size_t eq = e.find('=');
    std::string name = e.substr(0, eq);
    if (eq + 1 == e.size()) {
      unsetenv(name.c_str());
    } else {
      setenv(name.c_str(), e.c_str() + eq + 1, 1);
    }
  }
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(121);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(122);
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcessResult RunProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& cwd) {
  char tmpl[] = "/tmp/idlescope-cli-XXXXXX";
  std::string dir = mkdtemp(tmpl) ? tmpl : "/tmp";
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  ProcessResult r;
  pid_t pid = StartProcess(argv, env, out_path, err_path, cwd);
  while (waitpid(pid, &r.wait_status, 0) < 0 && errno == EINTR) {
  }
  r.out = ReadFileOrEmpty(out_path);
  r.err = ReadFileOrEmpty(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  rmdir(dir.c_str());
  return r;
}

std::string DescribeWaitStatus(int s) {
  if (WIFEXITED(s)) return "exited " + std::to_string(WEXITSTATUS(s));
  if (WIFSIGNALED(s)) return "killed by signal " + std::to_string(WTERMSIG(s));
  return "status " + std::to_string(s);
}

}  // namespace idlescope::testing
