// Where CPython keeps what a Python stack is made of, per interpreter version: the thread state's
// frame pointer, the frame chain, the code object's name, file, first line and line table, and the
// string and bytes objects those are. 3.10-3.12 come from tables (offsets of the release builds,
// checked against each installed interpreter's own headers by tests/python/layout_test.cc); 3.13
// publishes them itself in _Py_DebugOffsets at the start of _PyRuntime, which we read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "interpose/python/line_table.h"

namespace idlescope::python {

// How a version keeps its frames.
enum class FrameModel : uint8_t {
  // 3.10: PyFrameObject, linked by f_back; f_lasti is the instruction index (code units). Every
  // frame runs in a native _PyEval_EvalFrameDefault call of its own.
  kFrameObjects,
  // 3.11-3.13: _PyInterpreterFrame, linked by `previous`, the instruction a pointer into the code
  // object's inline bytecode (co_code_adaptive). One native evaluation loop runs a caller and the
  // Python functions it calls: 3.11 flags the first frame of each loop (`is_entry`), 3.12+ puts a
  // shim frame owned by the C stack (FRAME_OWNED_BY_CSTACK) below it.
  kInterpreterFrames,
};

struct Layout {
  uint32_t major = 0, minor = 0;
  FrameModel model = FrameModel::kInterpreterFrames;
  LineTableFormat line_format = LineTableFormat::kLocations311;

  // PyThreadState.
  uint32_t tstate_thread_id = 0;  // unsigned long, pthread_self() of the thread it belongs to
  int32_t tstate_native_thread_id = -1;  // 3.11+: unsigned long, its tid (gettid); -1: none
  uint32_t tstate_frame = 0;             // 3.10: frame; 3.11-3.12: cframe; 3.13: current_frame
  int32_t cframe_current_frame = -1;     // 3.11-3.12: _PyCFrame.current_frame; -1: none

  // The frame: PyFrameObject (3.10) or _PyInterpreterFrame.
  uint32_t frame_previous = 0;  // f_back / previous
  uint32_t frame_code = 0;      // f_code / f_executable
  uint32_t frame_instr = 0;     // f_lasti (int, 3.10) / prev_instr / instr_ptr
  int32_t frame_owner = -1;     // 3.11+: char owner
  int32_t frame_is_entry = -1;  // 3.11: bool is_entry

  // PyCodeObject.
  uint32_t code_filename = 0;
  uint32_t code_name = 0;  // co_qualname from 3.11 (co_name in 3.10, which has no qualname)
  uint32_t code_firstlineno = 0;
  uint32_t code_linetable = 0;
  int32_t code_adaptive = -1;        // 3.11+: co_code_adaptive, the inline bytecode
  int32_t code_firsttraceable = -1;  // 3.11+: _co_firsttraceable (int); -1 for 3.10
  uint32_t code_bytes = 0;           // the code object's prefix that holds all of the above

  // Objects (release builds: PyObject is refcount + type).
  uint32_t ob_type = 8;
  uint32_t unicode_state = 32;  // bit field: interned:2, kind:3, compact:1, ascii:1
  uint32_t unicode_length = 16;
  uint32_t unicode_ascii_size = 0;    // sizeof(PyASCIIObject): compact ASCII data follows
  uint32_t unicode_compact_size = 0;  // sizeof(PyCompactUnicodeObject): other compact data
  uint32_t bytes_size = 16;           // PyBytesObject ob_size
  uint32_t bytes_data = 32;           // ob_sval
};

// _PyInterpreterFrame.owner values (Include/internal/pycore_frame.h, 3.11-3.13).
inline constexpr char kOwnedByGenerator = 1;
inline constexpr char kOwnedByCStack = 3;

// The layout of CPython 3.`minor` for 3.10-3.12; false for other versions (3.13 has its own).
bool TableLayout(uint32_t minor, Layout* out);

// 3.13: the layout from the _Py_DebugOffsets at the start of _PyRuntime (`runtime`, `size` bytes
// of it readable). False, with the reason in `why`, when the cookie, the version (`py_version`,
// Py_Version's value) or the offsets do not fit a 3.13 release build.
bool DebugOffsetsLayout(const uint8_t* runtime, size_t size, uint64_t py_version, Layout* out,
                        const char** why);

}  // namespace idlescope::python
