#include "python_debug_offsets.h"

#include <string.h>

namespace gapwatch {
namespace {

// A field of _Py_DebugOffsets (3.13): where it sits in that struct, and the table's value it must
// equal. Positions: offsetof(_Py_DebugOffsets, ...) against 3.13.0's Include/internal/pycore_runtime.h.
struct Described {
  const char* name;
  size_t position;
  int32_t PythonLayout::*ours;
};

constexpr Described kDescribed313[] = {
    {"thread_state.interp", 176, &PythonLayout::tstate_interp},
    {"thread_state.current_frame", 184, &PythonLayout::tstate_frame},
    {"thread_state.thread_id", 192, &PythonLayout::tstate_thread_id},
    {"interpreter_frame.previous", 232, &PythonLayout::frame_previous},
    {"interpreter_frame.executable", 240, &PythonLayout::frame_code},
    {"interpreter_frame.instr_ptr", 248, &PythonLayout::frame_instr},
    {"interpreter_frame.owner", 264, &PythonLayout::frame_owner},
    {"code_object.filename", 280, &PythonLayout::code_filename},
    {"code_object.name", 288, &PythonLayout::code_name},
    {"code_object.qualname", 296, &PythonLayout::code_qualname},
    {"code_object.linetable", 304, &PythonLayout::code_linetable},
    {"code_object.firstlineno", 312, &PythonLayout::code_firstlineno},
    {"code_object.co_code_adaptive", 344, &PythonLayout::code_code_adaptive},
    {"pyobject.ob_type", 360, &PythonLayout::object_type},
    {"bytes_object.ob_size", 520, &PythonLayout::var_size},
    {"bytes_object.ob_sval", 528, &PythonLayout::bytes_data},
    {"unicode_object.state", 544, &PythonLayout::unicode_state},
    {"unicode_object.length", 552, &PythonLayout::unicode_length},
    {"unicode_object.asciiobject_size", 560, &PythonLayout::unicode_ascii_size},
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
  if (((version_hex >> 24) & 0xff) != 3 || ((version_hex >> 16) & 0xff) != 13 || layout.minor != 13)
    return DebugOffsetsVerdict::kNotDescribed;
  if (memcmp(runtime_start, "xdebugpy", 8) != 0) return DebugOffsetsVerdict::kNoCookie;
  // The same minor version, whatever the patch level or release stage.
  if ((u64_at(runtime_start, kVersionAt) >> 16) != (version_hex >> 16)) return DebugOffsetsVerdict::kOtherVersion;
  if (u64_at(runtime_start, kFreeThreadedAt) != 0) return DebugOffsetsVerdict::kFreeThreaded;
  for (const Described& d : kDescribed313) {
    if (u64_at(runtime_start, d.position) != uint64_t(int64_t(layout.*d.ours))) {
      *field = d.name;
      return DebugOffsetsVerdict::kDiffers;
    }
  }
  return DebugOffsetsVerdict::kAgrees;
}

}  // namespace gapwatch
