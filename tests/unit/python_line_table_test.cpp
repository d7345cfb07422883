// tests/unit/python_line_table_test.cpp: python_line_at() (interpose/python_line_table.h).
//
// Hand-made tables of both formats, garbage that must not be read past its end, and, in the hidden
// [cases] test, every code object that python_line_table_cases.py found in an interpreter: the
// line of each instruction offset must be the one that interpreter's co_lines() gives. ctest runs
// that one per installed interpreter (tests/unit/CMakeLists.txt); by hand:
//   GAPWATCH_PYTHON_LINE_CASES=cases.txt[:more.txt] python_line_table_test '[cases]'

#include <catch2/catch.hpp>

#include "python_line_table.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using gapwatch::python_line_at;

int line(int minor, const std::vector<uint8_t>& table, int firstlineno, int offset) {
  return python_line_at(minor, table.data(), table.size(), firstlineno, offset);
}

// Bytes placed against an inaccessible page, after them or before them: a read one byte outside
// the table is a SIGSEGV in any build, not only under a sanitizer.
class GuardedBytes {
 public:
  GuardedBytes() : page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
    void* mapping = mmap(nullptr, 3 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mapping != MAP_FAILED);
    base_ = static_cast<uint8_t*>(mapping);
    REQUIRE(mprotect(base_, page_, PROT_NONE) == 0);
    REQUIRE(mprotect(base_ + 2 * page_, page_, PROT_NONE) == 0);
  }
  ~GuardedBytes() { munmap(base_, 3 * page_); }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;

  size_t capacity() const { return page_; }
  // The copy ends where the guard page after it begins.
  const uint8_t* at_end(const uint8_t* data, size_t len) {
    uint8_t* where = base_ + 2 * page_ - len;
    if (len) std::memcpy(where, data, len);
    return where;
  }
  // The copy starts where the guard page before it ends.
  const uint8_t* at_start(const uint8_t* data, size_t len) {
    uint8_t* where = base_ + page_;
    if (len) std::memcpy(where, data, len);
    return where;
  }

 private:
  size_t page_;
  uint8_t* base_ = nullptr;
};

}  // namespace

TEST_CASE("3.10: address and line deltas in pairs, -128 for no line, empty pairs only move the line") {
  const std::vector<uint8_t> table = {
      6,   0,                          // [0, 6): the first line
      0,   127,                        // a jump of 137 lines, spread over two pairs
      4,   10,                         // [6, 10)
      2,   static_cast<uint8_t>(-128), // [10, 12): no line; the running line stays
      4,   static_cast<uint8_t>(-3),   // [12, 16)
      254, 1,                          // [16, 270): 254 is the largest delta CPython writes
      6,   0,                          // [270, 276)
  };
  CHECK(line(10, table, 5, 0) == 5);
  CHECK(line(10, table, 5, 4) == 5);
  CHECK(line(10, table, 5, 6) == 142);
  CHECK(line(10, table, 5, 8) == 142);
  CHECK(line(10, table, 5, 10) == -1);
  CHECK(line(10, table, 5, 12) == 139);
  CHECK(line(10, table, 5, 16) == 140);
  CHECK(line(10, table, 5, 268) == 140);
  CHECK(line(10, table, 5, 274) == 140);
  CHECK(line(10, table, 5, 276) == -1);  // past the last range
  CHECK(line(10, table, 5, -2) == -1);
}

TEST_CASE("3.11+: each form of the location table") {
  const std::vector<uint8_t> table = {
      0x81, 0x05,                    // short form (code 0), 2 code units: [0, 4), same line
      0xd8, 0x02, 0x07,              // one-line form, code 11 (+1 line), 1 unit: [4, 6)
      0xea, 0x0b,                    // no-column form (13), 3 units, line -5 (zigzag 11): [6, 12)
      0xf8,                          // no location (15), 1 unit: [12, 14)
      0xf7, 0x58, 0x09, 0x00, 0x01, 0x02,  // long form (14), 8 units, line +300 (600 in two
                                           // chunks), end line +0, columns 0 to 1: [14, 30)
      0xe0, 0x00,                    // one-line form, code 12 (+2 lines), 1 unit: [30, 32)
  };
  for (int minor : {11, 12, 13, 14}) {
    INFO("3." << minor);
    CHECK(line(minor, table, 10, 0) == 10);
    CHECK(line(minor, table, 10, 2) == 10);
    CHECK(line(minor, table, 10, 4) == 11);
    CHECK(line(minor, table, 10, 6) == 6);
    CHECK(line(minor, table, 10, 10) == 6);
    CHECK(line(minor, table, 10, 12) == -1);
    CHECK(line(minor, table, 10, 14) == 306);  // after "no location", from the line before it
    CHECK(line(minor, table, 10, 28) == 306);
    CHECK(line(minor, table, 10, 30) == 308);
    CHECK(line(minor, table, 10, 32) == -1);
    CHECK(line(minor, table, 10, -1) == -1);
  }
}

TEST_CASE("versions before 3.10 and a missing table give no line") {
  const std::vector<uint8_t> table = {6, 0};
  CHECK(line(9, table, 1, 0) == -1);
  CHECK(python_line_at(10, nullptr, 2, 1, 0) == -1);
  CHECK(python_line_at(12, nullptr, 0, 1, 0) == -1);
  CHECK(python_line_at(12, table.data(), 0, 1, 0) == -1);
}

TEST_CASE("a line the table would make negative or too large is no line") {
  // 3.11: the long form moves the line by -(2^31 - 1) at most; twice from line 1 is far below 0.
  const std::vector<uint8_t> down = {0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0, 0, 0,
                                     0xf0, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0, 0, 0};
  CHECK(line(11, down, 1, 2) == -1);
  const std::vector<uint8_t> up = {0xf0, 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x03, 0, 0, 0};
  CHECK(line(11, up, INT_MAX, 0) == -1);
  CHECK(line(10, std::vector<uint8_t>{2, 100}, INT_MAX, 0) == -1);
  CHECK(line(10, std::vector<uint8_t>{2, static_cast<uint8_t>(-100)}, 50, 0) == -1);
}

TEST_CASE("garbage tables are never read outside their bytes") {
  GuardedBytes guarded;
  std::mt19937 random(20240611);
  std::vector<uint8_t> bytes(guarded.capacity());
  const int offsets[] = {INT_MIN, -2, -1, 0, 1, 2, 3, 100, 4096, 65534, 1 << 20, INT_MAX - 1, INT_MAX};
  const int firstlines[] = {INT_MIN, -1, 0, 1, 1000, INT_MAX};
  long calls = 0;
  auto check_all = [&](const uint8_t* table, size_t len) {
    for (int minor : {9, 10, 11, 12, 13, 14}) {
      for (int firstlineno : firstlines) {
        for (int offset : offsets) {
          const int got = python_line_at(minor, table, len, firstlineno, offset);
          ++calls;
          if (got < -1) FAIL("line " << got << " below -1");
        }
        // An offset inside the table's ranges, wherever those are.
        const int got = python_line_at(minor, table, len, firstlineno, static_cast<int>(random() % (8 * len + 2)));
        ++calls;
        if (got < -1) FAIL("line " << got << " below -1");
      }
    }
  };
  for (int round = 0; round < 300; ++round) {
    const size_t len = round < 64 ? static_cast<size_t>(round) : random() % bytes.size();
    for (size_t i = 0; i < len; ++i) bytes[i] = static_cast<uint8_t>(random());
    if (round % 3 == 1) {
      // Varints that never end: continuation bytes up to the last byte.
      for (size_t i = 1; i < len; ++i) bytes[i] = 0x7f;
      if (len) bytes[0] = 0xf0;
    }
    if (round % 3 == 2) {
      // Only first bytes, no form bytes: every entry a long form missing its varints.
      for (size_t i = 0; i < len; ++i) bytes[i] |= 0x80;
    }
    check_all(guarded.at_end(bytes.data(), len), len);
    check_all(guarded.at_start(bytes.data(), len), len);
  }
  // Every prefix of a well-formed table of each format, ending against the guard page.
  const std::vector<uint8_t> tables[] = {
      {6, 0, 0, 127, 4, 10, 2, 0x80, 4, 0xfd},
      {0x81, 0x05, 0xd8, 0x02, 0x07, 0xea, 0x0b, 0xf8, 0xf7, 0x58, 0x09, 0x00, 0x01, 0x02, 0xe0, 0x00},
  };
  for (const auto& table : tables) {
    for (size_t len = 0; len <= table.size(); ++len) check_all(guarded.at_end(table.data(), len), len);
  }
  // The whole page of garbage.
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(random());
  check_all(guarded.at_end(bytes.data(), bytes.size()), bytes.size());
  std::printf("garbage: %ld calls, none read outside its table\n", calls);
}

namespace {

struct CaseTotals {
  long code_objects = 0;
  long offsets = 0;
  long mismatches = 0;
};

std::vector<uint8_t> from_hex(const std::string& hex, bool* ok) {
  std::vector<uint8_t> out;
  *ok = hex.size() % 2 == 0;
  if (hex == "-" || !*ok) return out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    char* end = nullptr;
    const std::string pair = hex.substr(i, 2);
    out.push_back(static_cast<uint8_t>(std::strtoul(pair.c_str(), &end, 16)));
    if (*end != '\0') *ok = false;
  }
  return out;
}

// The expected line of every byte offset in [0, limit) from co_lines()' START:END:LINE ranges;
// bytes no range covers have no line.
bool expand_ranges(const std::string& ranges, std::vector<int>* lines) {
  lines->clear();
  if (ranges == "-") return true;
  std::istringstream in(ranges);
  std::string range;
  while (std::getline(in, range, ',')) {
    long start = 0, end = 0;
    char text[32] = {};
    if (std::sscanf(range.c_str(), "%ld:%ld:%31s", &start, &end, text) != 3 || start < 0 || end < start ||
        end > (1L << 26)) {
      return false;
    }
    const int value = std::strcmp(text, "-") == 0 ? -1 : std::atoi(text);
    if (lines->size() < static_cast<size_t>(end)) lines->resize(static_cast<size_t>(end), -1);
    for (long offset = start; offset < end; ++offset) (*lines)[static_cast<size_t>(offset)] = value;
  }
  return true;
}

void check_case_file(const std::string& path, CaseTotals* totals) {
  std::ifstream in(path);
  INFO("case file " << path);
  REQUIRE(in.good());
  std::string text;
  long line_number = 0;
  std::vector<int> expected;
  while (std::getline(in, text)) {
    ++line_number;
    if (text.empty() || text[0] == '#') continue;
    std::istringstream fields(text);
    int minor = 0, firstlineno = 0;
    long code_bytes = 0;
    std::string hex, ranges, label;
    fields >> minor >> firstlineno >> code_bytes >> hex >> ranges;
    bool ok = !fields.fail();
    if (ok) std::getline(fields >> std::ws, label);
    const std::vector<uint8_t> table = from_hex(hex, &ok);
    ok = ok && expand_ranges(ranges, &expected);
    if (!ok) FAIL(path << ":" << line_number << ": not a case line: " << text.substr(0, 200));
    ++totals->code_objects;
    // Every instruction offset, and a few past the end of the code and of the ranges: none.
    const long limit = std::max<long>(code_bytes, static_cast<long>(expected.size())) + 6;
    for (long offset = 0; offset < limit; offset += 2) {
      const int want = offset < static_cast<long>(expected.size()) ? expected[static_cast<size_t>(offset)] : -1;
      const int got = python_line_at(minor, table.data(), table.size(), firstlineno, static_cast<int>(offset));
      ++totals->offsets;
      if (got != want && ++totals->mismatches <= 20) {
        FAIL_CHECK(path << ":" << line_number << ": " << label << " (3." << minor << ", co_firstlineno "
                        << firstlineno << "): byte offset " << offset << ": python_line_at gives " << got
                        << ", co_lines() gives " << want);
      }
    }
  }
}

}  // namespace

TEST_CASE("every instruction of every code object: the line co_lines() gives", "[.][cases]") {
  const char* paths = std::getenv("GAPWATCH_PYTHON_LINE_CASES");
  if (paths == nullptr || *paths == '\0') {
    FAIL("GAPWATCH_PYTHON_LINE_CASES names no case file (python_line_table_cases.py dump writes them)");
  }
  std::istringstream list(paths);
  std::string path;
  while (std::getline(list, path, ':')) {
    if (path.empty()) continue;
    CaseTotals totals;
    check_case_file(path, &totals);
    std::printf("%s: %ld code objects, %ld offsets checked, %ld wrong\n", path.c_str(), totals.code_objects,
                totals.offsets, totals.mismatches);
    CHECK(totals.code_objects > 0);
    CHECK(totals.mismatches == 0);
  }
}
