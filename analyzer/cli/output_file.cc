#include "analyzer/cli/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace idlescope {

bool ParseOutputFlag(int argc, char** argv, int* i, std::string* path) {
  std::string_view arg = argv[*i];
  if (arg.starts_with("--output=")) {
    *path = std::string(arg.substr(9));
    return true;
  }
  if (arg != "-o" && arg != "--output") return false;
  if (*i + 1 >= argc) {
    path->clear();
    return true;
  }
  *path = argv[++*i];
  return true;
}

bool WriteOutput(std::string_view command, const std::string& path, std::string_view bytes) {
  if (path.empty() || path == "-") {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    return std::fflush(stdout) == 0;
  }
  std::string tmp = absl::StrCat(path, ".tmp-", getpid());
  auto fail = [&](int error) {
    std::fprintf(stderr, "idlescope %.*s: cannot write %s: %s\n", static_cast<int>(command.size()),
                 command.data(), path.c_str(), std::strerror(error));
    std::remove(tmp.c_str());
    return false;
  };
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return fail(errno);
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int error = written == bytes.size() ? 0 : errno;
  if (std::fclose(f) != 0 && error == 0) error = errno;
  if (error != 0) return fail(error);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace idlescope
