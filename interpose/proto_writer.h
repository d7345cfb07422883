// proto_writer.h: the few protobuf wire-format primitives the recorder needs.
//
// The injected library must not carry libprotobuf into the user's process (it may hold another
// version), so the flusher writes the fixed schema by hand. Proto3 rules: a scalar equal to its
// default (0, false, "") is not written; `optional` fields are written whenever present. Tests
// parse this output with libprotobuf and compare field by field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gapwatch {

class ProtoWriter {
 public:
  explicit ProtoWriter(std::string& out) : out_(out) {}

  void varint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(char(uint8_t(v) | 0x80));
      v >>= 7;
    }
    out_.push_back(char(v));
  }
  void tag(uint32_t field, uint32_t wire_type) { varint((uint64_t(field) << 3) | wire_type); }

  void u64(uint32_t field, uint64_t v) {
    if (v) tag(field, 0), varint(v);
  }
  // int32/int64/enum: negative values are sign-extended to ten bytes, as protobuf does.
  void i64(uint32_t field, int64_t v) {
    if (v) tag(field, 0), varint(uint64_t(v));
  }
  void s64(uint32_t field, int64_t v) {  // sint64: zigzag
    if (v) tag(field, 0), varint((uint64_t(v) << 1) ^ uint64_t(v >> 63));
  }
  void boolean(uint32_t field, bool v) {
    if (v) tag(field, 0), varint(1);
  }
  void optional_i64(uint32_t field, int64_t v) { tag(field, 0), varint(uint64_t(v)); }
  void string(uint32_t field, std::string_view s) {
    if (s.empty()) return;
    tag(field, 2);
    varint(s.size());
    out_.append(s.data(), s.size());
  }
  // A repeated string element: written even when empty, since its position matters.
  void repeated_string(uint32_t field, std::string_view s) {
    tag(field, 2);
    varint(s.size());
    out_.append(s.data(), s.size());
  }
  // A nested message: `body` writes it into `scratch`, then it is appended with its length.
  template <class Body>
  void message(uint32_t field, std::string& scratch, Body&& body) {
    scratch.clear();
    ProtoWriter inner(scratch);
    body(inner);
    tag(field, 2);
    varint(scratch.size());
    out_.append(scratch);
  }

 private:
  std::string& out_;
};

}  // namespace gapwatch
