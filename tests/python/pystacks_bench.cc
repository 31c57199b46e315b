// What a Python stack adds to a hooked event (issue 12, targets: < 1 us for a 30-frame Python
// stack whose code objects were seen before, < 5 us for a first-seen code object), against the
// same event without it, in the same run. The recorder core is linked in and started by hand, and
// CPython is embedded (the interpreter tests/python/CMakeLists.txt picked); Python code calls into
// this program's `_bench` module, whose functions time, on the calling thread's CPU clock:
//   - an event as the I/O and CUDA hooks record one (CaptureStack + Record), Python stacks on and
//     off, 31 interleaved repetitions of 200 events;
//   - the Python walk alone (python::CaptureFrames);
//   - the thread sampler's read of a thread's 4 innermost frames from outside
//     (python::ReadThreadFrames through process_vm_readv, and the stack interned): here of the
//     calling thread's own state, which is the same work as another thread's;
//   - a first-seen code object: 200 functions made with exec, each capturing at the top of the
//     same 30-frame stack once (its code is new) and then again (seen).
// Medians are printed; the process exits 1 when a target is missed by more than the machine's
// noise could explain (twice the target). CPU time: on a shared VM wall time also counts waiting
// for a core (host preemption of the VM still shows, as outliers: hence medians).
#include <Python.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "interpose/python/pystacks.h"
#include "interpose/recorder.h"
#include "interpose/recorder_internal.h"

namespace idlescope {
namespace {

uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The event of a write hook: stack, then Record (the ring is drained by the writer thread).
uint64_t RecordEventWithStack() {
  RawEvent e;
  e.ts = NowNs();
  e.type = ev::kFileWrite;
  e.bytes = 4096;
  e.stack = CaptureStack(1);
  Record(e);
  return e.stack;
}

// _bench.events(n, python): CPU ns per event over n events.
PyObject* Events(PyObject*, PyObject* args) {
  int n = 0, python = 0;
  if (!PyArg_ParseTuple(args, "ip", &n, &python)) return nullptr;
  python::SetActiveForTesting(python != 0);
  uint64_t t0 = ThreadCpuNs();
  for (int i = 0; i < n; ++i) RecordEventWithStack();
  uint64_t t1 = ThreadCpuNs();
  python::SetActiveForTesting(true);
  FlushNow();
  return PyFloat_FromDouble(static_cast<double>(t1 - t0) / n);
}

// _bench.walk(n): CPU ns per Python walk, and the frames it found.
PyObject* Walk(PyObject*, PyObject* args) {
  int n = 0;
  if (!PyArg_ParseTuple(args, "i", &n)) return nullptr;
  uint64_t keys[python::kMaxFrames];
  int frames = 0;
  uint64_t t0 = ThreadCpuNs();
  for (int i = 0; i < n; ++i) frames = python::CaptureFrames(nullptr, 0, keys, python::kMaxFrames);
  uint64_t t1 = ThreadCpuNs();
  return Py_BuildValue("(di)", static_cast<double>(t1 - t0) / n, frames);
}

// _bench.sampled(n): CPU ns per read of the calling thread's 4 innermost frames as the sampler
// reads a thread's (python::ReadThreadFrames + InternPythonStack), and the frames it found.
PyObject* Sampled(PyObject*, PyObject* args) {
  int n = 0;
  if (!PyArg_ParseTuple(args, "i", &n)) return nullptr;
  python::ThreadStateRef ref;
  if (!python::ThisThreadState(&ref)) return Py_BuildValue("(di)", 0.0, 0);
  const int pid = getpid();
  const uint32_t tid = static_cast<uint32_t>(gettid());
  uint64_t keys[4];
  int frames = 0;
  uint64_t t0 = ThreadCpuNs();
  for (int i = 0; i < n; ++i) {
    frames = python::ReadThreadFrames(pid, tid, ref, keys, 4);
    InternPythonStack(keys, frames);
  }
  uint64_t t1 = ThreadCpuNs();
  return Py_BuildValue("(di)", static_cast<double>(t1 - t0) / n, frames);
}

// _bench.once(): CPU ns of one walk and of one event (each on its own fresh stack when the
// caller's code object is new).
PyObject* Once(PyObject*, PyObject*) {
  uint64_t keys[python::kMaxFrames];
  uint64_t t0 = ThreadCpuNs();
  python::CaptureFrames(nullptr, 0, keys, python::kMaxFrames);
  uint64_t t1 = ThreadCpuNs();
  return PyFloat_FromDouble(static_cast<double>(t1 - t0));
}

PyObject* OnceEvent(PyObject*, PyObject*) {
  uint64_t t0 = ThreadCpuNs();
  RecordEventWithStack();
  uint64_t t1 = ThreadCpuNs();
  return PyFloat_FromDouble(static_cast<double>(t1 - t0));
}

PyMethodDef kMethods[] = {
    {"events", Events, METH_VARARGS, nullptr},       {"walk", Walk, METH_VARARGS, nullptr},
    {"sampled", Sampled, METH_VARARGS, nullptr},     {"once", Once, METH_NOARGS, nullptr},
    {"once_event", OnceEvent, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr},
};
PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_bench", nullptr, -1, kMethods, nullptr, nullptr, nullptr, nullptr};
PyObject* InitModule() { return PyModule_Create(&kModule); }

// The driver. deep(k, f) calls f at the top of k more frames; with <module>, run() and the
// lambda, captures see 30 Python frames.
const char kDriver[] = R"PY(
import random, statistics, sys, _bench

def deep(k, f):
    return f() if k == 0 else deep(k - 1, f)

CAPTURE_TWICE = """
def %s():
    times = []
    for _ in range(2):
        times.append(%s)
    return times
"""

FRAMES = 30
DEPTH = FRAMES - 4  # <module>, run(), deep(0) and the lambda come on top

def run():
    # Warm up: every code object of the stack seen, every trie node made.
    ns, frames = deep(DEPTH, lambda: _bench.walk(1000))
    assert frames == FRAMES, frames
    deep(DEPTH, lambda: (_bench.events(2000, True), _bench.events(2000, False)))
    ns, frames = deep(DEPTH, lambda: _bench.sampled(100))
    assert frames == 4, frames
    on, off, walk, sampled = [], [], [], []
    for _ in range(31):
        modes = [True, False]
        random.shuffle(modes)
        for mode in modes:
            (on if mode else off).append(deep(DEPTH, lambda: _bench.events(200, mode)))
        walk.append(deep(DEPTH, lambda: _bench.walk(200))[0])
        sampled.append(deep(DEPTH, lambda: _bench.sampled(200))[0])
    # First-seen code objects: functions made at run time, captured once new and once seen (both
    # calls from one call site: the second capture is the first one's stack), as the innermost
    # frame and as an outer one.
    first, seen, outer_first, outer_seen, first_event, seen_event = [], [], [], [], [], []
    for i in range(200):
        scope = {"_bench": _bench, "deep": deep}
        exec(CAPTURE_TWICE % ("outer_%d" % i, "deep(1, _bench.once)"), scope)
        a, b = deep(DEPTH - 3, scope["outer_%d" % i])
        outer_first.append(a)
        outer_seen.append(b)
        exec(CAPTURE_TWICE % ("inner_%d" % i, "_bench.once()"), scope)
        a, b = deep(DEPTH - 1, scope["inner_%d" % i])
        first.append(a)
        seen.append(b)
        exec(CAPTURE_TWICE % ("event_%d" % i, "_bench.once_event()"), scope)
        a, b = deep(DEPTH - 1, scope["event_%d" % i])
        first_event.append(a)
        seen_event.append(b)
    med = statistics.median
    print("python %s, %d Python frames, native stack depth %s" %
          (sys.version.split()[0], FRAMES, "24"))
    print("event (CaptureStack + Record), Python stacks off: %8.0f ns  [%.0f-%.0f]" %
          (med(off), min(off), max(off)))
    print("event (CaptureStack + Record), Python stacks on:  %8.0f ns  [%.0f-%.0f]" %
          (med(on), min(on), max(on)))
    added = med([a - b for a, b in zip(on, off)])
    print("added by the Python stack (median of paired reps): %.0f ns  (target < 1000)" % added)
    print("Python walk alone (python::CaptureFrames, seen):   %.0f ns" % med(walk))
    print("sampler's read of 4 frames from outside (python::ReadThreadFrames, process_vm_readv, "
          "+ InternPythonStack): %.0f ns" % med(sampled))
    new_inner = med([a - b for a, b in zip(first, seen)])
    new_outer = med([a - b for a, b in zip(outer_first, outer_seen)])
    new_event = med([a - b for a, b in zip(first_event, seen_event)])
    print("first-seen code object, innermost frame: %6.0f ns more than seen  (target < 5000)" %
          new_inner)
    print("first-seen code object, outer frame:     %6.0f ns more than seen" % new_outer)
    print("whole event with a first-seen innermost code: %.0f ns more than seen (the copy, and a "
          "new stack trie node: its table pages are touched for the first time)" % new_event)
    print("(one capture timed alone includes two thread-CPU clock reads: seen walk %.0f ns)" %
          med(seen))
    return added, max(new_inner, new_outer)

added, new_code = run()
# Twice the targets: beyond the noise of a loaded machine.
failed = added > 2000 or new_code > 10000
)PY";

}  // namespace
}  // namespace idlescope

int main() {
  char tmpl[] = "/tmp/idlescope-pybench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  setenv("IDLESCOPE_OUT", tmpl, 1);
  setenv("IDLESCOPE_QUIET", "1", 1);
  idlescope::internal::Init();
  idlescope::python::Start();
  if (!idlescope::RecorderActive()) return 1;
  if (idlescope::python::Version()[0] == '\0') {
    fprintf(stderr, "pystacks_bench: Python stacks are off for this interpreter\n");
    return 1;
  }
  PyImport_AppendInittab("_bench", idlescope::InitModule);
  Py_Initialize();
  PyObject* main = PyImport_AddModule("__main__");
  PyObject* globals = PyModule_GetDict(main);
  PyObject* result = PyRun_String(idlescope::kDriver, Py_file_input, globals, globals);
  int status = 1;
  if (result == nullptr) {
    PyErr_Print();
  } else {
    PyObject* failed = PyDict_GetItemString(globals, "failed");
    status = failed != nullptr && PyObject_IsTrue(failed) ? 1 : 0;
    Py_DECREF(result);
  }
  Py_FinalizeEx();
  idlescope::internal::Shutdown(idlescope::trace::kExitNormal, 0, false);
  std::string cmd = std::string("rm -rf '") + tmpl + "'";
  if (system(cmd.c_str()) != 0) return 1;
  return status;
}
