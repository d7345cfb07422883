// tests/unit/python_debug_offsets_test.cpp: check_debug_offsets() (interpose/python_debug_offsets.h).
//
// The start of a 3.13 or 3.14 _PyRuntime as the interpreter writes it (the cookie, PY_VERSION_HEX, the
// free-threaded flag, then the offsets), built here from gapwatch's own 3.13 table: it agrees; a
// free-threaded build, one offset moved, another cookie or another version each refuse the table.
// That a real 3.13 and 3.14 agree is tests/interpose/python_stacks_test.py's 3.13 and 3.14 runs (a
// refusal would leave every call without its stack, counted as miss 9).

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

// Where each offset the check reads sits in _Py_DebugOffsets: (3.13, 3.14) (offsetof against
// 3.13.0's pycore_runtime.h and 3.14.10's pycore_debug_offsets.h).
struct Position {
  size_t at_313, at_314;
  int32_t PythonLayout::*field;
};
constexpr Position kPositions[] = {
    {176, 200, &PythonLayout::tstate_interp},   {184, 208, &PythonLayout::tstate_frame},
    {192, 216, &PythonLayout::tstate_thread_id}, {232, 256, &PythonLayout::frame_previous},
    {240, 264, &PythonLayout::frame_code},      {248, 272, &PythonLayout::frame_instr},
    {264, 288, &PythonLayout::frame_owner},     {280, 320, &PythonLayout::code_filename},
    {288, 328, &PythonLayout::code_name},       {296, 336, &PythonLayout::code_qualname},
    {304, 344, &PythonLayout::code_linetable},  {312, 352, &PythonLayout::code_firstlineno},
    {344, 384, &PythonLayout::code_code_adaptive}, {360, 408, &PythonLayout::object_type},
    {520, 600, &PythonLayout::var_size},        {528, 608, &PythonLayout::bytes_data},
    {544, 624, &PythonLayout::unicode_state},   {552, 632, &PythonLayout::unicode_length},
    {560, 640, &PythonLayout::unicode_ascii_size},
};

// What a 3.13 or 3.14 _Py_DebugOffsets holds for a build laid out as `l` (the struct's other
// fields are left zero: the check does not read them).
std::vector<uint8_t> described_by(const PythonLayout& l, uint64_t version = kVersion3130) {
  std::vector<uint8_t> bytes(gapwatch::kDebugOffsetsBytes, 0);
  std::memcpy(bytes.data(), "xdebugpy", 8);
  put(bytes, 8, version);
  put(bytes, 16, 0);
  const bool is_314 = ((version >> 16) & 0xff) == 14;
  for (const Position& p : kPositions) put(bytes, is_314 ? p.at_314 : p.at_313, uint64_t(int64_t(l.*p.field)));
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

TEST_CASE("a 3.14 that describes the table's layout agrees with it", "[python_debug_offsets]") {
  const PythonLayout* l = gapwatch::python_layout_for(14);
  REQUIRE(l);
  const char* field = nullptr;
  constexpr uint64_t kVersion3140 = 0x030e0af0;  // 3.14.10
  CHECK(check_debug_offsets(described_by(*l, kVersion3140).data(), kVersion3140, *l, &field) ==
        DebugOffsetsVerdict::kAgrees);
  // 3.14's struct read at 3.13's positions: a field differs (the struct grew between them).
  std::vector<uint8_t> wrong = described_by(*l, kVersion3140);
  const std::vector<uint8_t> as_313 = described_by(*l, kVersion3130);
  std::memcpy(wrong.data() + 24, as_313.data() + 24, wrong.size() - 24);
  CHECK(check_debug_offsets(wrong.data(), kVersion3140, *l, &field) == DebugOffsetsVerdict::kDiffers);
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
  // 3.12 has no _Py_DebugOffsets; 3.15's is not placed here.
  if (const PythonLayout* l12 = gapwatch::python_layout_for(12))
    CHECK(check_debug_offsets(described_by(*l12).data(), 0x030c01f0, *l12, &field) == DebugOffsetsVerdict::kNotDescribed);
  CHECK(check_debug_offsets(described_by(*l, 0x030f00f0).data(), 0x030f00f0, *l, &field) ==
        DebugOffsetsVerdict::kNotDescribed);
}
