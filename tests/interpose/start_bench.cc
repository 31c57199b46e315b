// What a traced process costs at start and end: a tiny program (start_tiny: main returns 0, or
// one write to /dev/null with --io) started N times bare and N times under the preload library,
// interleaved (bare, traced, bare, ...) so a change of load hits both alike. Prints the median and
// quartiles of the wall time from posix_spawn to waitpid for each, and the median difference: the
// per-process cost that `make -j`, shell scripts and DataLoader worker respawns pay for tracing.
//
// Usage: start_bench TINY PRELOAD_LIB [--runs N] [--io] [--dir DIR] [--env NAME=VALUE]...
//   --dir: where the traces go (default /tmp; on a disk, creating each trace file is part of the
//   cost: ~0.7 ms on the build VMs' ext4, 5 us on tmpfs); --env adds a variable to the traced runs
//   (e.g. IDLESCOPE_STACK_DEPTH=0).
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct Sample {
  uint64_t wall_ns = 0;  // spawn to reaped exit
  uint64_t cpu_ns = 0;   // the child's user + system time, all its threads
};

uint64_t Ns(const timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000000000ull +
         static_cast<uint64_t>(tv.tv_usec) * 1000;
}

// One start of `argv` with `env`; wall_ns 0 on failure.
Sample RunOnce(char* const* argv, char* const* env) {
  Sample s;
  uint64_t t0 = NowNs();
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv, env) != 0) return s;
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return s;
  s.wall_ns = NowNs() - t0;
  s.cpu_ns = Ns(ru.ru_utime) + Ns(ru.ru_stime);
  return s;
}

struct Summary {
  double p25, median, p75;
};

Summary Summarize(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; };
  return {at(0.25) / 1e3, at(0.5) / 1e3, at(0.75) / 1e3};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr,
            "usage: start_bench TINY PRELOAD_LIB [--runs N] [--io] [--dir DIR] [--env "
            "NAME=VALUE]...\n");
    return 2;
  }
  std::string tiny = argv[1], lib = argv[2];
  int runs = 200;
  bool io = false;
  std::vector<std::string> extra_env;
  std::string parent = "/tmp";
  for (int i = 3; i < argc; ++i) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--io") == 0) {
      io = true;
    } else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      parent = argv[++i];
    } else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
      extra_env.push_back(argv[++i]);
    } else {
      fprintf(stderr, "start_bench: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  std::string dir_template = parent + "/idlescope-start-bench-XXXXXX";
  char* dir = mkdtemp(dir_template.data());
  if (dir == nullptr) {
    fprintf(stderr, "start_bench: cannot create a directory in %s\n", parent.c_str());
    return 1;
  }

  // The environment of both runs: ours, minus any LD_PRELOAD/IDLESCOPE_*; the traced one adds them.
  std::vector<std::string> base;
  for (char** e = environ; *e != nullptr; ++e) {
    if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "IDLESCOPE_", 10) != 0) {
      base.push_back(*e);
    }
  }
  std::vector<std::string> traced = base;
  traced.push_back("LD_PRELOAD=" + lib);
  traced.push_back(std::string("IDLESCOPE_OUT=") + dir);
  for (const std::string& e : extra_env) traced.push_back(e);
  auto pointers = [](std::vector<std::string>& v) {
    std::vector<char*> p;
    for (std::string& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  };
  std::vector<char*> bare_env = pointers(base), traced_env = pointers(traced);
  std::string mode = io ? "io" : "";
  std::vector<char*> args = {tiny.data()};
  if (io) args.push_back(mode.data());
  args.push_back(nullptr);

  // Warm-up: page cache, dynamic loader caches.
  for (int i = 0; i < 10; ++i) {
    RunOnce(args.data(), bare_env.data());
    RunOnce(args.data(), traced_env.data());
  }
  std::vector<uint64_t> bare, with, bare_cpu, with_cpu;
  for (int i = 0; i < runs; ++i) {
    Sample b = RunOnce(args.data(), bare_env.data());
    Sample t = RunOnce(args.data(), traced_env.data());
    if (b.wall_ns == 0 || t.wall_ns == 0) {
      fprintf(stderr, "start_bench: a run of %s failed\n", tiny.c_str());
      return 1;
    }
    bare.push_back(b.wall_ns);
    with.push_back(t.wall_ns);
    bare_cpu.push_back(b.cpu_ns);
    with_cpu.push_back(t.cpu_ns);
  }
  std::string cleanup = std::string("rm -rf '") + dir + "'";
  if (system(cleanup.c_str()) != 0) return 1;

  double load[3] = {0, 0, 0};
  if (FILE* f = fopen("/proc/loadavg", "r")) {
    if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    fclose(f);
  }
  Summary sb = Summarize(bare), st = Summarize(with);
  Summary cb = Summarize(bare_cpu), ct = Summarize(with_cpu);
  printf(
      "process start+exit of %s%s, traces in %s, %d runs each, interleaved (load average %.2f)\n",
      tiny.c_str(), io ? " io" : "", parent.c_str(), runs, load[0]);
  printf("%-8s %12s %12s %12s %12s\n", "mode", "wall p25 us", "wall med us", "wall p75 us",
         "cpu med us");
  printf("%-8s %12.0f %12.0f %12.0f %12.0f\n", "bare", sb.p25, sb.median, sb.p75, cb.median);
  printf("%-8s %12.0f %12.0f %12.0f %12.0f\n", "traced", st.p25, st.median, st.p75, ct.median);
  printf("traced - bare, median: wall %.0f us, cpu %.0f us per process\n", st.median - sb.median,
         ct.median - cb.median);
  return 0;
}
