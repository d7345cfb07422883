#include "python_debug_offsets.h"

#include <string.h>

namespace gapwatch {
namespace {

// A field of _Py_DebugOffsets: its name, where it sits in that struct in 3.13 and in 3.14, and
// the table's value it must equal. Positions: offsetof(_Py_DebugOffsets, ...) against 3.13.0's
// Include/internal/pycore_runtime.h and 3.14.10's Include/internal/pycore_debug_offsets.h (the
// struct grew fields between them; docs/design/python-stacks.md has the probe).
struct Described {
  const char* name;
  size_t position_313, position_314;
  int32_t PythonLayout::*ours;
};

constexpr Described kDescribed[] = {
    {"thread_state.interp", 176, 200, &PythonLayout::tstate_interp},
    {"thread_state.current_frame", 184, 208, &PythonLayout::tstate_frame},
    {"thread_state.thread_id", 192, 216, &PythonLayout::tstate_thread_id},
    {"interpreter_frame.previous", 232, 256, &PythonLayout::frame_previous},
    {"interpreter_frame.executable", 240, 264, &PythonLayout::frame_code},
    {"interpreter_frame.instr_ptr", 248, 272, &PythonLayout::frame_instr},
    {"interpreter_frame.owner", 264, 288, &PythonLayout::frame_owner},
    {"code_object.filename", 280, 320, &PythonLayout::code_filename},
    {"code_object.name", 288, 328, &PythonLayout::code_name},
    {"code_object.qualname", 296, 336, &PythonLayout::code_qualname},
    {"code_object.linetable", 304, 344, &PythonLayout::code_linetable},
    {"code_object.firstlineno", 312, 352, &PythonLayout::code_firstlineno},
    {"code_object.co_code_adaptive", 344, 384, &PythonLayout::code_code_adaptive},
    {"pyobject.ob_type", 360, 408, &PythonLayout::object_type},
    {"bytes_object.ob_size", 520, 600, &PythonLayout::var_size},
    {"bytes_object.ob_sval", 528, 608, &PythonLayout::bytes_data},
    {"unicode_object.state", 544, 624, &PythonLayout::unicode_state},
    {"unicode_object.length", 552, 632, &PythonLayout::unicode_length},
    {"unicode_object.asciiobject_size", 560, 640, &PythonLayout::unicode_ascii_size},
};
constexpr size_t kVersionAt = 8, kFreeThreadedAt = 16;

uint64_t u64_at(const uint8_t* bytes, size_t position) {
  uint64_t value;
  memcpy(&value, bytes + position, sizeof value);
  return value;
}

}  // namespace

DebugOffsetsVerdict check_debug_offsets(const uint8_t* runtime_start, uint64_t version_hex, const PythonLayout& layout,
                                        const char** field) {
  *field = nullptr;
  const int minor = int((version_hex >> 16) & 0xff);
  if (((version_hex >> 24) & 0xff) != 3 || (minor != 13 && minor != 14) || layout.minor != minor)
    return DebugOffsetsVerdict::kNotDescribed;
  if (memcmp(runtime_start, "xdebugpy", 8) != 0) return DebugOffsetsVerdict::kNoCookie;
  // The same minor version, whatever the patch level or release stage.
  if ((u64_at(runtime_start, kVersionAt) >> 16) != (version_hex >> 16)) return DebugOffsetsVerdict::kOtherVersion;
  if (u64_at(runtime_start, kFreeThreadedAt) != 0) return DebugOffsetsVerdict::kFreeThreaded;
  for (const Described& d : kDescribed) {
    if (u64_at(runtime_start, minor == 13 ? d.position_313 : d.position_314) != uint64_t(int64_t(layout.*d.ours))) {
      *field = d.name;
      return DebugOffsetsVerdict::kDiffers;
    }
  }
  return DebugOffsetsVerdict::kAgrees;
}

}  // namespace gapwatch
