// tests/unit/python_debug_offsets_test.cpp: check_debug_offsets() (interpose/python_debug_offsets.h).
//
// The start of a 3.13 _PyRuntime as the interpreter writes it (the cookie, PY_VERSION_HEX, the
// free-threaded flag, then the offsets), built here from gapwatch's own 3.13 table: it agrees; a
// free-threaded build, one offset moved, another cookie or another version each refuse the table.
// That a real 3.13 agrees is tests/interpose/python_stacks_test.py's 3.13 runs (a refusal would
// leave every call without its stack, counted as miss 9).

#include <catch2/catch.hpp>

#include "python_debug_offsets.h"
#include "python_layout.h"

#include <cstring>
#include <vector>

namespace {

using gapwatch::check_debug_offsets;
using gapwatch::DebugOffsetsVerdict;
using gapwatch::PythonLayout;

constexpr uint64_t kVersion3130 = 0x030d00f0;  // 3.13.0 final

void put(std::vector<uint8_t>& bytes, size_t at, uint64_t value) { std::memcpy(bytes.data() + at, &value, 8); }

// What 3.13's _Py_DebugOffsets holds for a build laid out as `l` (positions: offsetof against
// 3.13.0's pycore_runtime.h; the struct's other fields are left zero: the check does not read them).
std::vector<uint8_t> described_by(const PythonLayout& l, uint64_t version = kVersion3130) {
  std::vector<uint8_t> bytes(gapwatch::kDebugOffsetsBytes, 0);
  std::memcpy(bytes.data(), "xdebugpy", 8);
  put(bytes, 8, version);
  put(bytes, 16, 0);
  put(bytes, 176, l.tstate_interp);
  put(bytes, 184, l.tstate_frame);
  put(bytes, 192, l.tstate_thread_id);
  put(bytes, 232, l.frame_previous);
  put(bytes, 240, l.frame_code);
  put(bytes, 248, l.frame_instr);
  put(bytes, 264, l.frame_owner);
  put(bytes, 280, l.code_filename);
  put(bytes, 288, l.code_name);
  put(bytes, 296, l.code_qualname);
  put(bytes, 304, l.code_linetable);
  put(bytes, 312, l.code_firstlineno);
  put(bytes, 344, l.code_code_adaptive);
  put(bytes, 360, l.object_type);
  put(bytes, 520, l.var_size);
  put(bytes, 528, l.bytes_data);
  put(bytes, 544, l.unicode_state);
  put(bytes, 552, l.unicode_length);
  put(bytes, 560, l.unicode_ascii_size);
  return bytes;
}

}  // namespace

TEST_CASE("a 3.13 that describes the table's layout agrees with it", "[python_debug_offsets]") {
  const PythonLayout* l = gapwatch::python_layout_for(13);
  REQUIRE(l);
  const char* field = nullptr;
  CHECK(check_debug_offsets(described_by(*l).data(), kVersion3130, *l, &field) == DebugOffsetsVerdict::kAgrees);
  // Any patch level or release stage of 3.13 is 3.13.
  CHECK(check_debug_offsets(described_by(*l, 0x030d07f0).data(), 0x030d07f0, *l, &field) == DebugOffsetsVerdict::kAgrees);
}

TEST_CASE("a free-threaded 3.13 refuses the table", "[python_debug_offsets]") {
  const PythonLayout* l = gapwatch::python_layout_for(13);
  std::vector<uint8_t> bytes = described_by(*l);
  put(bytes, 16, 1);
  const char* field = nullptr;
  CHECK(check_debug_offsets(bytes.data(), kVersion3130, *l, &field) == DebugOffsetsVerdict::kFreeThreaded);
}

TEST_CASE("one offset moved refuses the table and names the field", "[python_debug_offsets]") {
  const PythonLayout* l = gapwatch::python_layout_for(13);
  // A build with one more pointer in its code objects before co_filename (a debug build's extra
  // fields move what follows them).
  PythonLayout moved = *l;
  moved.code_filename += 8;
  const char* field = nullptr;
  CHECK(check_debug_offsets(described_by(moved).data(), kVersion3130, *l, &field) == DebugOffsetsVerdict::kDiffers);
  REQUIRE(field);
  CHECK(std::string(field) == "code_object.filename");
  PythonLayout frame_moved = *l;
  frame_moved.frame_previous += 8;
  CHECK(check_debug_offsets(described_by(frame_moved).data(), kVersion3130, *l, &field) == DebugOffsetsVerdict::kDiffers);
  CHECK(std::string(field) == "interpreter_frame.previous");
}

TEST_CASE("no cookie, another version or a version gapwatch cannot place refuses or skips", "[python_debug_offsets]") {
  const PythonLayout* l = gapwatch::python_layout_for(13);
  const char* field = nullptr;
  std::vector<uint8_t> bytes = described_by(*l);
  bytes[0] = 'y';
  CHECK(check_debug_offsets(bytes.data(), kVersion3130, *l, &field) == DebugOffsetsVerdict::kNoCookie);
  // The struct says 3.12 while the interpreter says 3.13.
  CHECK(check_debug_offsets(described_by(*l, 0x030c01f0).data(), kVersion3130, *l, &field) ==
        DebugOffsetsVerdict::kOtherVersion);
  // 3.12 has no _Py_DebugOffsets; 3.14's is laid out otherwise and not placed here.
  if (const PythonLayout* l12 = gapwatch::python_layout_for(12))
    CHECK(check_debug_offsets(described_by(*l12).data(), 0x030c01f0, *l12, &field) == DebugOffsetsVerdict::kNotDescribed);
  CHECK(check_debug_offsets(described_by(*l, 0x030e00f0).data(), 0x030e00f0, *l, &field) ==
        DebugOffsetsVerdict::kNotDescribed);
}
