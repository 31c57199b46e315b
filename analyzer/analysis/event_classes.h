// The rules that classify one host event into what it says about a gap it overlaps (an event
// class and a cause), and the path and program predicates they rest on. docs/attribution.md,
// "Candidates", explains every rule.
#pragma once

#include <cstdint>
#include <string_view>

#include "analyzer/model/causes.h"
#include "analyzer/model/job_model.h"
#include "analyzer/model/vocabulary.h"
#include "trace.pb.h"

namespace idlescope {

// Model checkpoint files by their name: by suffix (.pt, .pth, .ckpt, .safetensors, .h5, .pkl,
// .npz, .msgpack, .distcp, ...; .bin with a model word in the name). A file is also a model file
// by what the job does with it (analysis/identities.h), which this does not see.
bool IsModelCheckpointPath(std::string_view path);

// A read of (or a wait on) stdin when it is a pipe: input from the program before this one.
bool IsStdinPipe(const HostEvent& event);

// Program code: Python source or bytecode (.py, .pyc), a shared library (.so, .so.N). Reading it
// is importing or loading a library, not loading data.
bool IsCodeFilePath(std::string_view path);

// Kernel and device state: /proc, /sys, /dev but /dev/shm (polling memory or GPU state, entropy),
// anonymous inodes (eventfd, timerfd: wakeups of driver threads); and system configuration a
// library reads for itself: /etc, /usr/share (terminfo, locales, time zones), /usr/lib/locale,
// a user's .inputrc (GNU readline's, read when a prompt starts: issue 13 counted it as data).
bool IsSystemPath(std::string_view path);

// A data file, as opposed to code or system state: not Python source or bytecode, not a shared
// library, not under /proc, /sys or /dev, not a model checkpoint. A training thread that reads such
// files between its kernels is loading (and preprocessing) data itself.
bool IsDataFilePath(std::string_view path);

// A package installer: pip, pip3, conda, mamba, micromamba, apt, apt-get, yum, dnf, uv, poetry,
// or "python -m pip". `program` is a path or a command name; `argv` the NUL-separated arguments
// (may be empty).
bool IsInstallerCommand(std::string_view program, std::string_view argv);

// Remote filesystems (the paper's "remote data reading").
bool IsRemoteFs(FsType fs);

// A read of, or a wait on, stdin or a terminal (/dev/pts/N, /dev/tty*): the job waits for a
// person.
bool IsTerminalEvent(const HostEvent& event);

// A WAIT that is its thread idling, not a read in waiting: a sleep, a signal wait, an epoll event
// loop, a listening socket's accept, a poll/select on a mix of descriptors or on descriptors that
// are neither a terminal, pipes nor connected sockets (docs/attribution.md, "Waits").
bool IsIdleWait(const HostEvent& event);

struct EventClassification {
  EventClass event_class = EventClass::kNone;
  Cause cause = Cause::kUnknown;
};

EventClassification ClassifyHostEvent(const HostEvent& event);

// A THREAD_SAMPLE run: CPU work when the thread ran most of it, a wait for a CPU when it was
// runnable but not running most of it (docs/attribution.md, "Samples"); nothing when it was
// blocked.
EventClassification ClassifySample(const HostEvent& event);

// A class only THREAD_SAMPLE runs have: it explains only the device its thread feeds.
inline bool IsSampledClass(EventClass c) {
  return c == EventClass::kCpuWork || c == EventClass::kCpuWait || c == EventClass::kMappedRead;
}

// A sampled run of a worker process's thread: it explains only the waits of a launching thread
// for its workers (attribution.cc, Winner).
inline bool IsWorkerSampleClass(EventClass c) {
  return c == EventClass::kWorkerCpuWork || c == EventClass::kWorkerCpuWait ||
         c == EventClass::kWorkerRead;
}

}  // namespace idlescope
