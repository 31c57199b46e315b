#include "interpose/python/layout.h"

#include <algorithm>
#include <cstring>

namespace idlescope::python {

namespace {

void FinishCodeBytes(Layout* l) {
  uint32_t end = std::max({l->code_filename, l->code_name, l->code_firstlineno, l->code_linetable});
  if (l->code_firsttraceable >= 0) end = std::max(end, uint32_t(l->code_firsttraceable));
  l->code_bytes = end + 8;
}

}  // namespace

bool TableLayout(uint32_t minor, Layout* out) {
  Layout l;
  l.major = 3;
  l.minor = minor;
  switch (minor) {
    case 10:
      l.model = FrameModel::kFrameObjects;
      l.line_format = LineTableFormat::kPairs310;
      l.tstate_thread_id = 176;
      l.tstate_frame = 24;
      l.frame_previous = 24;
      l.frame_code = 32;
      l.frame_instr = 96;
      l.code_filename = 104;
      l.code_name = 112;
      l.code_firstlineno = 40;
      l.code_linetable = 120;
      l.unicode_ascii_size = 48;
      l.unicode_compact_size = 72;
      break;
    case 11:
      l.tstate_thread_id = 152;
      l.tstate_native_thread_id = 160;
      l.tstate_frame = 56;
      l.cframe_current_frame = 8;
      l.frame_previous = 48;
      l.frame_code = 32;
      l.frame_instr = 56;
      l.frame_owner = 69;
      l.frame_is_entry = 68;
      l.code_filename = 112;
      l.code_name = 128;
      l.code_firstlineno = 72;
      l.code_linetable = 136;
      l.code_adaptive = 184;
      l.code_firsttraceable = 168;
      l.unicode_ascii_size = 48;
      l.unicode_compact_size = 72;
      break;
    case 12:
      l.tstate_thread_id = 136;
      l.tstate_native_thread_id = 144;
      l.tstate_frame = 56;
      l.cframe_current_frame = 0;
      l.frame_previous = 8;
      l.frame_code = 0;
      l.frame_instr = 56;
      l.frame_owner = 70;
      l.code_filename = 112;
      l.code_name = 128;
      l.code_firstlineno = 68;
      l.code_linetable = 136;
      l.code_adaptive = 192;
      l.code_firsttraceable = 176;
      // 3.12 dropped PyASCIIObject.wstr (and PyCompactUnicodeObject.wstr_length).
      l.unicode_ascii_size = 40;
      l.unicode_compact_size = 56;
      break;
    default:
      return false;
  }
  FinishCodeBytes(&l);
  *out = l;
  return true;
}

namespace {

// _Py_DebugOffsets of 3.13 (Include/internal/pycore_runtime.h): an 8-byte cookie, the version,
// the free-threaded flag, then groups of uint64 offsets, each group starting with the size of the
// structure it describes. Indexes below are uint64 words from the start.
constexpr char kCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
enum Word : size_t {
  kVersion = 1,
  kFreeThreaded = 2,
  kRuntimeSize = 3,          // runtime_state: size, finalizing, interpreters_head
  kThreadSize = 3 + 3 + 13,  // after interpreter_state's 13 words
  kThreadThreadId = kThreadSize + 5,
  kThreadNativeThreadId = kThreadSize + 6,
  kThreadCurrentFrame = kThreadSize + 4,
  kFrameSize = kThreadSize + 9,  // interpreter_frame: size, previous, executable, instr_ptr,
                                 // localsplus, owner
  kFramePrevious = kFrameSize + 1,
  kFrameExecutable = kFrameSize + 2,
  kFrameInstrPtr = kFrameSize + 3,
  kFrameOwner = kFrameSize + 5,
  kCodeSize = kFrameSize + 6,  // code_object: size, filename, name, qualname, linetable,
                               // firstlineno, argcount, localsplusnames, localspluskinds,
                               // co_code_adaptive
  kCodeFilename = kCodeSize + 1,
  kCodeQualname = kCodeSize + 3,
  kCodeLinetable = kCodeSize + 4,
  kCodeFirstlineno = kCodeSize + 5,
  kCodeAdaptive = kCodeSize + 9,
  kPyObjectSize = kCodeSize + 10,  // pyobject: size, ob_type
  kPyObjectType = kPyObjectSize + 1,
  // type_object (4), tuple_object (3), list_object (3), dict_object (3), float_object (2),
  // long_object (3)
  kBytesSize = kPyObjectSize + 2 + 4 + 3 + 3 + 3 + 2 + 3,  // bytes_object: size, ob_size, ob_sval
  kBytesObSize = kBytesSize + 1,
  kBytesObSval = kBytesSize + 2,
  kUnicodeSize = kBytesSize + 3,  // unicode_object: size, state, length, asciiobject_size
  kUnicodeState = kUnicodeSize + 1,
  kUnicodeLength = kUnicodeSize + 2,
  kUnicodeAsciiSize = kUnicodeSize + 3,
  kWords = kUnicodeSize + 4,
};

}  // namespace

bool DebugOffsetsLayout(const uint8_t* runtime, size_t size, uint64_t py_version, Layout* out,
                        const char** why) {
  if (size < kWords * 8 || memcmp(runtime, kCookie, sizeof(kCookie)) != 0) {
    *why = "no _Py_DebugOffsets at the start of _PyRuntime";
    return false;
  }
  uint64_t w[kWords];
  memcpy(w, runtime, sizeof(w));
  if ((w[kVersion] >> 16) != (py_version >> 16)) {
    *why = "_Py_DebugOffsets names another version than Py_Version";
    return false;
  }
  if (w[kFreeThreaded] != 0) {
    *why = "a free-threaded build (its objects have another header)";
    return false;
  }
  // Sanity: every offset must lie inside the structure it belongs to (a misread group shows up
  // as sizes and offsets that do not fit), and the object headers must be those of a release
  // build.
  auto inside = [&](size_t field, size_t group) { return w[field] + 8 <= w[group]; };
  const bool fits =
      w[kThreadSize] < 65536 && w[kFrameSize] < 4096 && w[kCodeSize] < 4096 &&
      inside(kThreadThreadId, kThreadSize) && inside(kThreadNativeThreadId, kThreadSize) &&
      inside(kThreadCurrentFrame, kThreadSize) && inside(kFramePrevious, kFrameSize) &&
      inside(kFrameExecutable, kFrameSize) && inside(kFrameInstrPtr, kFrameSize) &&
      w[kFrameOwner] < w[kFrameSize] && inside(kCodeFilename, kCodeSize) &&
      inside(kCodeQualname, kCodeSize) && inside(kCodeLinetable, kCodeSize) &&
      w[kCodeFirstlineno] + 4 <= w[kCodeSize] && w[kCodeAdaptive] <= w[kCodeSize] &&
      w[kPyObjectType] == 8 && w[kBytesObSize] == 16 && w[kBytesObSval] < 64 &&
      w[kUnicodeState] < 64 && w[kUnicodeLength] < 64 && w[kUnicodeAsciiSize] < 128;
  if (!fits) {
    *why = "_Py_DebugOffsets does not look like a 3.13 release build's";
    return false;
  }
  Layout l;
  l.major = 3;
  l.minor = static_cast<uint32_t>((py_version >> 16) & 0xff);
  l.tstate_thread_id = static_cast<uint32_t>(w[kThreadThreadId]);
  l.tstate_native_thread_id = static_cast<int32_t>(w[kThreadNativeThreadId]);
  l.tstate_frame = static_cast<uint32_t>(w[kThreadCurrentFrame]);
  l.frame_previous = static_cast<uint32_t>(w[kFramePrevious]);
  l.frame_code = static_cast<uint32_t>(w[kFrameExecutable]);
  l.frame_instr = static_cast<uint32_t>(w[kFrameInstrPtr]);
  l.frame_owner = static_cast<int32_t>(w[kFrameOwner]);
  l.code_filename = static_cast<uint32_t>(w[kCodeFilename]);
  l.code_name = static_cast<uint32_t>(w[kCodeQualname]);
  l.code_firstlineno = static_cast<uint32_t>(w[kCodeFirstlineno]);
  l.code_linetable = static_cast<uint32_t>(w[kCodeLinetable]);
  l.code_adaptive = static_cast<int32_t>(w[kCodeAdaptive]);
  // Not published, but fixed by cpython/code.h: `int _co_firsttraceable; void *co_extra;` right
  // before co_code_adaptive. Needed to skip frames that have not started, such as the cleanup
  // frame 3.13 pushes under an __init__ it calls (_Py_InitCleanup: file and name "__init__").
  l.code_firsttraceable = l.code_adaptive - 16;
  l.ob_type = static_cast<uint32_t>(w[kPyObjectType]);
  l.bytes_size = static_cast<uint32_t>(w[kBytesObSize]);
  l.bytes_data = static_cast<uint32_t>(w[kBytesObSval]);
  l.unicode_state = static_cast<uint32_t>(w[kUnicodeState]);
  l.unicode_length = static_cast<uint32_t>(w[kUnicodeLength]);
  l.unicode_ascii_size = static_cast<uint32_t>(w[kUnicodeAsciiSize]);
  // PyCompactUnicodeObject = PyASCIIObject + utf8_length + utf8 (3.12+).
  l.unicode_compact_size = l.unicode_ascii_size + 16;
  FinishCodeBytes(&l);
  *out = l;
  return true;
}

}  // namespace idlescope::python
