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
    repeated_string(field, s);
  }
  // A repeated string element: written even when empty, since its position matters.
  // proto3 strings must be UTF-8 (libprotobuf rejects the whole frame otherwise), and what the
  // recorder writes comes from the outside: a host name, argv, a kernel name. Invalid bytes
  // become '?'.
  void repeated_string(uint32_t field, std::string_view s) {
    tag(field, 2);
    if (valid_utf8(s)) {
      varint(s.size());
      out_.append(s.data(), s.size());
    } else {
      std::string clean = sanitize_utf8(s);
      varint(clean.size());
      out_.append(clean);
    }
  }

  // Length of the UTF-8 sequence at s[i], or 0 when it is not one (overlong forms, surrogates and
  // code points past U+10FFFF included).
  static size_t utf8_sequence(std::string_view s, size_t i) {
    auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = at(i);
    if (c < 0x80) return 1;
    size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
      if ((at(i + k) & 0xC0) != 0x80) return 0;
    if (n == 3 && ((c == 0xE0 && at(i + 1) < 0xA0) || (c == 0xED && at(i + 1) >= 0xA0))) return 0;
    if (n == 4 && ((c == 0xF0 && at(i + 1) < 0x90) || (c == 0xF4 && at(i + 1) >= 0x90))) return 0;
    return n;
  }
  static bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
      size_t n = utf8_sequence(s, i);
      if (!n) return false;
      i += n;
    }
    return true;
  }
  static std::string sanitize_utf8(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
      size_t n = utf8_sequence(s, i);
      if (n) out.append(s.substr(i, n)), i += n;
      else out.push_back('?'), ++i;
    }
    return out;
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
