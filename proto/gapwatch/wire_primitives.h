// gapwatch/wire_primitives.h: the protobuf wire-format pieces every hand-written encoder and
// decoder of gapwatch shares: wire types, field types, tags, varints, zigzag.
//
// Header-only and free of libprotobuf, so that the injected library (which must not carry
// libprotobuf into the user's process), the reader's batch fast path and the test writers all use
// the same few lines instead of a copy each. The generated <gapwatch/wire_schema.h> describes
// every field with the types below, so code that writes or reads a field by hand can check at
// compile time that the schema still has the field it assumes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gapwatch::wire {

// How a field's value travels (the low three bits of its tag).
enum class WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// A field's declared type: two fields of one wire type can still need different encodings (a
// sint64 is zigzagged, an int32 is sign-extended to ten bytes, a uint64 is neither).
enum class FieldType : uint32_t {
  kUint32, kUint64, kInt32, kInt64, kSint32, kSint64, kBool, kEnum,
  kFixed32, kFixed64, kSfixed32, kSfixed64, kFloat, kDouble,
  kString, kBytes, kMessage,
};

// One field of a message, as the schema declares it. `packed`: a repeated scalar written as one
// length-delimited run (proto3's default), so its wire type is kLengthDelimited.
struct Field {
  uint32_t number;
  WireType wire_type;
  FieldType type;
  bool repeated;
  bool packed;
  // proto3 `optional` (or a oneof member): written whenever present, even when 0.
  bool explicit_presence;
};

constexpr uint32_t tag(uint32_t field_number, WireType wire_type) {
  return (field_number << 3) | static_cast<uint32_t>(wire_type);
}
constexpr uint32_t tag(const Field& field) { return tag(field.number, field.wire_type); }
constexpr uint32_t tagFieldNumber(uint32_t tag) { return tag >> 3; }
constexpr WireType tagWireType(uint32_t tag) { return static_cast<WireType>(tag & 7); }

// sint32/sint64: small magnitudes of either sign become small unsigned numbers.
constexpr uint64_t zigZagEncode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
constexpr int64_t zigZagDecode(uint64_t n) {
  return static_cast<int64_t>((n >> 1) ^ (~(n & 1) + 1));
}

// Bytes of a base-128 varint of `v` (1 to 10).
constexpr std::size_t varintSize(uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) v >>= 7, ++n;
  return n;
}

// Appends a base-128 varint: 7 bits per byte, low bits first, the high bit on all but the last.
inline void appendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(static_cast<uint8_t>(v) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Whether a field of type `t` goes on the wire as a plain varint of its value (no zigzag, no
// sign extension needed beyond what uint64_t already holds).
constexpr bool isUnsignedVarint(FieldType t) {
  return t == FieldType::kUint32 || t == FieldType::kUint64 || t == FieldType::kBool ||
         t == FieldType::kEnum;
}
// Whether a field of type `t` is a varint of its value sign-extended to 64 bits.
constexpr bool isSignExtendedVarint(FieldType t) {
  return t == FieldType::kInt32 || t == FieldType::kInt64 || t == FieldType::kEnum;
}
constexpr bool isZigZagVarint(FieldType t) {
  return t == FieldType::kSint32 || t == FieldType::kSint64;
}

}  // namespace gapwatch::wire
