// proto_writer.h: the protobuf encoding of one message's fields, as the recorder writes them.
//
// The injected library must not carry libprotobuf into the user's process (it may hold another
// version), so the flusher writes the fixed schema by hand. Proto3 rules: a scalar equal to its
// default (0, false, "") is not written; `optional` fields are written whenever present. Tests
// parse this output with libprotobuf and compare field by field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <gapwatch/utf8_text.h>

#include <gapwatch/wire_primitives.h>

namespace gapwatch {

// Every method takes the field as its schema entry (wire::M::kXField from <gapwatch/wire_schema.h>)
// and checks at compile time that the field's declared type is one the method encodes correctly:
// writing a sint64 without zigzag, or a repeated field as a single one, does not compile.
class ProtoWriter {
 public:
  explicit ProtoWriter(std::string& out) : out_(out) {}

  void varint(uint64_t v) { wire::appendVarint(out_, v); }

  // uint32/uint64/bool/enum with non-negative values.
  template <wire::Field F>
  void u64(uint64_t v) {
    static_assert(F.wire_type == wire::WireType::kVarint && !F.repeated && wire::isUnsignedVarint(F.type),
                  "u64: not a singular unsigned varint field");
    if (v) tag<F>(), varint(v);
  }
  // int32/int64/enum: negative values are sign-extended to ten bytes, as protobuf does.
  template <wire::Field F>
  void i64(int64_t v) {
    static_assert(F.wire_type == wire::WireType::kVarint && !F.repeated && wire::isSignExtendedVarint(F.type),
                  "i64: not a singular int32/int64/enum field");
    if (v) tag<F>(), varint(uint64_t(v));
  }
  template <wire::Field F>
  void s64(int64_t v) {
    static_assert(F.wire_type == wire::WireType::kVarint && !F.repeated && wire::isZigZagVarint(F.type),
                  "s64: not a singular sint32/sint64 field");
    if (v) tag<F>(), varint(wire::zigZagEncode(v));
  }
  template <wire::Field F>
  void boolean(bool v) {
    static_assert(F.type == wire::FieldType::kBool && !F.repeated, "boolean: not a singular bool field");
    if (v) tag<F>(), varint(1);
  }
  // proto3 `optional`: written whenever present, 0 included.
  template <wire::Field F>
  void optional_i64(int64_t v) {
    static_assert(F.explicit_presence && wire::isSignExtendedVarint(F.type),
                  "optional_i64: not an optional int32/int64 field");
    tag<F>(), varint(uint64_t(v));
  }
  template <wire::Field F>
  void string(std::string_view s) {
    static_assert(F.type == wire::FieldType::kString && !F.repeated, "string: not a singular string field");
    if (s.empty()) return;
    string_bytes<F>(s);
  }
  // A repeated string element: written even when empty, since its position matters.
  template <wire::Field F>
  void repeated_string(std::string_view s) {
    static_assert(F.type == wire::FieldType::kString && F.repeated, "repeated_string: not a repeated string");
    string_bytes<F>(s);
  }
  // A packed repeated unsigned varint field (a proto3 repeated enum): one run, length first.
  template <wire::Field F, class Values>
  void packed(const Values& values, std::string& scratch) {
    static_assert(F.packed && wire::isUnsignedVarint(F.type), "packed: not a packed unsigned varint field");
    if (values.empty()) return;
    scratch.clear();
    for (auto v : values) wire::appendVarint(scratch, uint64_t(v));
    tag<F>();
    varint(scratch.size());
    out_.append(scratch);
  }
  // A nested message: `body` writes it into `scratch`, then it is appended with its length.
  template <wire::Field F, class Body>
  void message(std::string& scratch, Body&& body) {
    static_assert(F.type == wire::FieldType::kMessage, "message: not a message field");
    scratch.clear();
    ProtoWriter inner(scratch);
    body(inner);
    bytes<F>(scratch);
  }
  // An already encoded message (or bytes) as field F.
  template <wire::Field F>
  void bytes(std::string_view encoded) {
    static_assert(F.wire_type == wire::WireType::kLengthDelimited, "bytes: not a length-delimited field");
    tag<F>();
    varint(encoded.size());
    out_.append(encoded.data(), encoded.size());
  }

 private:
  template <wire::Field F>
  void tag() {
    varint(wire::tag(F));
  }
  // proto3 strings must be UTF-8 (libprotobuf rejects the whole frame otherwise), and what the
  // recorder writes comes from the outside: a host name, argv, a thread or kernel name. Each
  // invalid byte becomes U+FFFD, the rule of everything gapwatch writes (gapwatch/utf8_text.h).
  template <wire::Field F>
  void string_bytes(std::string_view s) {
    if (isValidUtf8(s)) {
      bytes<F>(s);
    } else {
      bytes<F>(validUtf8(s));
    }
  }

  std::string& out_;
};

}  // namespace gapwatch
