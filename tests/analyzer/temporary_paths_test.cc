// The CLI's temporary paths (analyzer/cli/temporary_paths.h): a signal that ends the command
// while it makes one, in the thread that makes it or in another, leaves nothing behind.
#include "analyzer/cli/temporary_paths.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace idlescope {
namespace {

// Makes and removes paths under `dir`, as the commands do, until the process ends.
[[noreturn]] void MakeForever(const std::string& dir) {
  for (;;) {
    std::string pattern = dir + "/d-XXXXXX";
    int slot = -1;
    if (MakeTemporaryDirectory(pattern, &slot)) {
      rmdir(pattern.c_str());
      ForgetTemporaryPath(slot);
    }
    pattern = dir + "/f-XXXXXX";
    const int fd = MakeTemporaryFile(pattern, &slot);
    if (fd >= 0) {
      close(fd);
      unlink(pattern.c_str());
      ForgetTemporaryPath(slot);
    }
  }
}

void* MakeForeverThread(void* dir) { MakeForever(*static_cast<std::string*>(dir)); }

// Forks a child that makes paths (on a second thread when `threaded`, its main thread waiting
// for the signal), ends it with SIGTERM after `delay_us`, and returns what it left.
size_t LeftAfterSignal(const std::string& dir, bool threaded, unsigned delay_us) {
  std::atomic<bool>* started = static_cast<std::atomic<bool>*>(
      mmap(nullptr, sizeof(std::atomic<bool>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
           -1, 0));
  new (started) std::atomic<bool>(false);
  const pid_t child = fork();
  if (child == 0) {
    RemoveTemporaryPathsOnSignals();
    started->store(true);
    if (!threaded) MakeForever(dir);
    std::string copy = dir;
    pthread_t thread;
    if (pthread_create(&thread, nullptr, MakeForeverThread, &copy) != 0) _exit(3);
    for (;;) pause();
  }
  while (!started->load()) usleep(10);
  usleep(delay_us);
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  munmap(started, sizeof(std::atomic<bool>));
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  size_t left = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++left;
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directory(dir);
  return left;
}

TEST(TemporaryPaths, ASignalWhileAPathIsMadeLeavesNothing) {
  char base[] = "/tmp/idlescope-temporary-paths-test-XXXXXX";
  ASSERT_NE(mkdtemp(base), nullptr);
  const std::string dir = std::string(base) + "/work";
  std::filesystem::create_directory(dir);
  // Most signals land in the few system calls of a make and its removal.
  for (int round = 0; round < 100; ++round) {
    const bool threaded = round % 2 == 1;
    EXPECT_EQ(LeftAfterSignal(dir, threaded, 200 + 37 * static_cast<unsigned>(round)), 0u)
        << "round " << round << (threaded ? ", made on another thread" : "");
  }
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace idlescope
