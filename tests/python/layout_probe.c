// Prints, for the CPython whose headers it is compiled against, the offsets and sizes that
// interpose/python/layout.cc holds for that version, as "field value" lines named like the
// fields of python::Layout; for 3.13 also the bytes of _PyRuntime's _Py_DebugOffsets (linked
// against libpython3.13), which the recorder reads instead of a table. layout_test.cc compares.
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#endif
#if PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_runtime.h"
#endif

#define FIELD(name, value) printf("%s %lld\n", name, (long long)(value))

int main(void) {
  FIELD("major", PY_MAJOR_VERSION);
  FIELD("minor", PY_MINOR_VERSION);
  FIELD("tstate_thread_id", offsetof(PyThreadState, thread_id));
#if PY_VERSION_HEX < 0x030B0000
  FIELD("tstate_native_thread_id", -1);
#else
  FIELD("tstate_native_thread_id", offsetof(PyThreadState, native_thread_id));
#endif
#if PY_VERSION_HEX < 0x030B0000
  FIELD("tstate_frame", offsetof(PyThreadState, frame));
  FIELD("cframe_current_frame", -1);
  FIELD("frame_previous", offsetof(PyFrameObject, f_back));
  FIELD("frame_code", offsetof(PyFrameObject, f_code));
  FIELD("frame_instr", offsetof(PyFrameObject, f_lasti));
  FIELD("frame_owner", -1);
  FIELD("frame_is_entry", -1);
  FIELD("code_name", offsetof(PyCodeObject, co_name));
  FIELD("code_adaptive", -1);
  FIELD("code_firsttraceable", -1);
#else
#if PY_VERSION_HEX < 0x030D0000
  FIELD("tstate_frame", offsetof(PyThreadState, cframe));
  FIELD("cframe_current_frame", offsetof(_PyCFrame, current_frame));
  FIELD("frame_code", offsetof(_PyInterpreterFrame, f_code));
  FIELD("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
  FIELD("code_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#else
  FIELD("tstate_frame", offsetof(PyThreadState, current_frame));
  FIELD("cframe_current_frame", -1);
  FIELD("frame_code", offsetof(_PyInterpreterFrame, f_executable));
  FIELD("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
  FIELD("code_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#endif
  FIELD("frame_previous", offsetof(_PyInterpreterFrame, previous));
  FIELD("frame_owner", offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030C0000
  FIELD("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#else
  FIELD("frame_is_entry", -1);
#endif
  FIELD("code_name", offsetof(PyCodeObject, co_qualname));
  FIELD("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
#endif
  FIELD("code_filename", offsetof(PyCodeObject, co_filename));
  FIELD("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
  FIELD("code_linetable", offsetof(PyCodeObject, co_linetable));
  FIELD("ob_type", offsetof(PyObject, ob_type));
  FIELD("unicode_state", offsetof(PyASCIIObject, state));
  FIELD("unicode_length", offsetof(PyASCIIObject, length));
  FIELD("unicode_ascii_size", sizeof(PyASCIIObject));
  FIELD("unicode_compact_size", sizeof(PyCompactUnicodeObject));
  FIELD("bytes_size", offsetof(PyVarObject, ob_size));
  FIELD("bytes_data", offsetof(PyBytesObject, ob_sval));
#if PY_VERSION_HEX >= 0x030D0000
  FIELD("py_version", PY_VERSION_HEX);
  printf("debug_offsets ");
  const unsigned char* p = (const unsigned char*)&_PyRuntime.debug_offsets;
  for (size_t i = 0; i < sizeof(_Py_DebugOffsets); ++i) printf("%02x", p[i]);
  printf("\n");
#endif
  return 0;
}
