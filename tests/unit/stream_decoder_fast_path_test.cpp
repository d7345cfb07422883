// tests/unit/stream_decoder_fast_path_test.cpp: the StreamDecoder's fast path for batch frames
// (takeFrameBytes, which decodes the wire bytes itself instead of libprotobuf's messages) gives
// exactly what decoding libprotobuf's parse gives, and leaves to libprotobuf every frame it does
// not read the same way: it must never accept a frame libprotobuf refuses.
//
// The frames are written by hand at the wire level, at random: fields in and out of order,
// repeated, unknown, with the wrong wire type, varints padded to non-minimal lengths (up to the
// 10-byte limit and past it), 10-byte varints with stray high bits, two-byte tags, strings that
// are not ASCII or not UTF-8, a base time after the events, extra frame fields; then mangled
// (bytes flipped, cut, inserted). Each frame goes to two decoders: one offered the bytes first,
// the other only the parsed frame. Their batches, string tables and stream health must agree.

#include <catch2/catch.hpp>

#include "reader/stream_decoder.h"
#include "stream_compare.h"

#include <gapwatch/v1/stream.pb.h>
#include <gapwatch/wire_schema.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace gapwatch;
namespace batch = gapwatch::wire::EventBatch;
using test::healthFields;
using test::sameBatch;
using test::tableOf;

// ---- Writing the wire format by hand ------------------------------------------------------------

class Wire {
 public:
  // The oddities a frame may have; each frame picks a few (or none: the recorder's own frames).
  enum Quirk : uint32_t {
    kPadded = 1 << 0,      // non-minimal varints
    kOverlong = 1 << 1,    // varints padded past the 10-byte limit
    kStray = 1 << 2,       // 10-byte varints with bits past the 64th
    kShuffled = 1 << 3,    // fields out of order, lists interleaved
    kRepeated = 1 << 4,    // a field twice
    kUnknown = 1 << 5,     // unknown fields
    kWrongType = 1 << 6,   // a known field with another wire type
    kNotAscii = 1 << 7,    // UTF-8 names
    kNotUtf8 = 1 << 8,     // names that are not UTF-8
    kLateBase = 1 << 9,    // the base time after the events
    kFrameExtra = 1 << 10, // more in the frame than one batch
    kMangled = 1 << 11,    // bytes flipped, cut, inserted
    kQuirkCount = 12,
  };

  explicit Wire(std::mt19937_64& rng) : rng_(rng) {}

  // Picks the next frame's oddities.
  void newFrame() {
    quirks_ = 0;
    if (chance(3)) return;
    for (uint32_t q = 0; q < kQuirkCount; ++q) {
      if (chance(4)) quirks_ |= 1u << q;
    }
  }
  bool has(Quirk quirk) const { return (quirks_ & quirk) != 0; }

  // A varint, sometimes padded with 0x80 groups to a longer (non-minimal) encoding: libprotobuf
  // reads those up to 10 bytes and refuses longer ones.
  void varint(std::string& out, uint64_t value) {
    std::size_t groups = 1;
    while (groups < 10 && (value >> (7 * groups)) != 0) ++groups;
    if (has(kPadded) && chance(6)) groups = std::min<std::size_t>(10, groups + 1 + rng_() % 4);
    if (has(kOverlong) && chance(50)) groups = 11 + rng_() % 3;
    for (std::size_t i = 0; i < groups; ++i) {
      const uint8_t bits = i < 10 ? static_cast<uint8_t>((value >> (7 * i)) & 0x7f) : 0;
      out.push_back(static_cast<char>(bits | (i + 1 < groups ? 0x80 : 0)));
    }
  }
  // A 10-byte varint whose last byte carries bits past the 64th (libprotobuf drops them).
  void strayVarint(std::string& out, uint64_t value) {
    for (int i = 0; i < 9; ++i) out.push_back(static_cast<char>(((value >> (7 * i)) & 0x7f) | 0x80));
    out.push_back(static_cast<char>(((value >> 63) & 1) | ((rng_() % 64) << 1)));
  }
  void tag(std::string& out, uint32_t field, uint32_t wire_type) { varint(out, uint64_t{field} << 3 | wire_type); }
  void lengthDelimited(std::string& out, uint32_t field, const std::string& bytes) {
    tag(out, field, 2);
    varint(out, bytes.size());
    out += bytes;
  }

  // A value for a varint field: absent-like, small, large, negative (as int64), or any.
  uint64_t value() {
    switch (rng_() % 6) {
      case 0: return 0;
      case 1: return rng_() % 4;
      case 2: return rng_() % 100000;
      case 3: return static_cast<uint64_t>(-static_cast<int64_t>(rng_() % 1000));
      case 4: return uint64_t{1} << (rng_() % 64);
      default: return rng_();
    }
  }

  // A message of `max_field` varint fields (StringDef, with its string field 3, separately).
  std::string varintMessage(uint32_t max_field) {
    std::vector<std::pair<uint32_t, uint64_t>> fields;
    for (uint32_t f = 1; f <= max_field; ++f) {
      if (!chance(2)) fields.emplace_back(f, value());
    }
    if (has(kShuffled) && chance(4)) std::shuffle(fields.begin(), fields.end(), rng_);
    if (has(kRepeated) && chance(4) && !fields.empty()) fields.push_back(fields[rng_() % fields.size()]);
    std::string out;
    for (const auto& [f, v] : fields) {
      tag(out, f, 0);
      if (has(kStray) && chance(20)) strayVarint(out, v);
      else varint(out, v);
    }
    if (has(kUnknown) && chance(10)) {  // an unknown field
      tag(out, max_field + 1 + static_cast<uint32_t>(rng_() % 100), 0);
      varint(out, value());
    }
    if (has(kWrongType) && chance(10)) {  // a known field with another wire type
      const std::string junk(rng_() % 3, 'x');
      lengthDelimited(out, 1 + static_cast<uint32_t>(rng_() % max_field), junk);
    }
    return out;
  }

  std::string stringDef() {
    std::string out;
    if (!chance(4)) {
      tag(out, wire::StringDef::kId, 0);
      varint(out, value());
    }
    if (!chance(4)) {
      tag(out, wire::StringDef::kKind, 0);
      varint(out, rng_() % 8);
    }
    std::string text;
    const std::size_t length = rng_() % 12;
    for (std::size_t i = 0; i < length; ++i) text.push_back(static_cast<char>('a' + rng_() % 26));
    if (has(kNotAscii) && chance(2)) text += "\xc3\xa9";  // UTF-8, not ASCII
    if (has(kNotUtf8) && chance(2)) text.push_back(static_cast<char>(0x80 + rng_() % 0x40));
    if (!chance(8)) lengthDelimited(out, wire::StringDef::kText, text);
    if (has(kRepeated) && chance(4)) lengthDelimited(out, wire::StringDef::kText, "again");  // the last one wins
    return out;
  }

  // An EventBatch's bytes.
  std::string batch() {
    std::string out;
    const bool base_late = has(kLateBase);
    if (!chance(10)) {
      tag(out, batch::kSequence, 0);
      varint(out, value());
    }
    if (!base_late && !chance(10)) {
      tag(out, batch::kBaseTimeNs, 0);
      varint(out, value());
    }
    std::vector<std::string> items;
    const auto add = [&](uint32_t field, std::string bytes) {
      std::string item;
      lengthDelimited(item, field, bytes);
      items.push_back(std::move(item));
    };
    for (std::size_t i = rng_() % 4; i > 0; --i) add(batch::kStrings, stringDef());
    for (std::size_t i = rng_() % 12; i > 0; --i) add(batch::kApiCalls, varintMessage(wire::ApiCall::kMaxFieldNumber));
    for (std::size_t i = rng_() % 12; i > 0; --i)
      add(batch::kActivities, varintMessage(wire::DeviceActivity::kMaxFieldNumber));
    for (std::size_t i = rng_() % 5; i > 0; --i) add(batch::kNcclCalls, varintMessage(wire::NcclCall::kMaxFieldNumber));
    for (std::size_t i = rng_() % 5; i > 0; --i) add(batch::kMarkers, varintMessage(wire::Marker::kMaxFieldNumber));
    for (std::size_t i = rng_() % 3; i > 0; --i) add(batch::kDrops, varintMessage(wire::DropCounter::kMaxFieldNumber));
    for (std::size_t i = rng_() % 6; i > 0; --i)
      add(batch::kPythonSamples, varintMessage(wire::PythonSample::kMaxFieldNumber));
    if (has(kShuffled)) std::shuffle(items.begin(), items.end(), rng_);  // lists interleaved
    for (const std::string& item : items) out += item;
    if (base_late) {
      tag(out, batch::kBaseTimeNs, 0);
      varint(out, value());
    }
    if (has(kUnknown) && chance(4)) {  // an unknown batch field
      tag(out, batch::kMaxFieldNumber + 1 + static_cast<uint32_t>(rng_() % 20), 0);
      varint(out, value());
    }
    return out;
  }

  // A Frame holding a batch, sometimes with something more.
  std::string frame() {
    std::string out;
    lengthDelimited(out, wire::Frame::kBatch, batch());
    if (!has(kFrameExtra)) return out;
    switch (rng_() % 4) {
      case 0: lengthDelimited(out, wire::Frame::kBatch, batch()); break;  // a second batch: merged
      case 1: lengthDelimited(out, wire::Frame::kHello, ""); break;       // then a Hello: the oneof switches
      case 2: lengthDelimited(out, wire::Frame::kGoodbye, ""); break;     // then a Goodbye
      case 3: tag(out, wire::Frame::kMaxFieldNumber + 4, 0), varint(out, 1); break;  // an unknown frame field
    }
    return out;
  }

  // The frame, sometimes damaged.
  std::string mangle(std::string bytes) {
    if (bytes.empty() || !has(kMangled)) return bytes;
    switch (rng_() % 4) {
      case 0: bytes[rng_() % bytes.size()] ^= static_cast<char>(1 << (rng_() % 8)); break;
      case 1: bytes.resize(rng_() % bytes.size()); break;
      case 2: bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(rng_() % bytes.size()), static_cast<char>(rng_())); break;
      case 3: bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(rng_() % bytes.size())); break;
    }
    return bytes;
  }

  bool chance(unsigned one_in) { return rng_() % one_in == 0; }

 private:
  std::mt19937_64& rng_;
  uint32_t quirks_ = 0;
};

// ---- Comparing what two decoders produced -------------------------------------------------------

class Capture final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t offset) override { log.push_back("hello " + std::to_string(hello.pid()) + " " + std::to_string(offset)); }
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override {
    log.push_back("goodbye " + std::to_string(goodbye.batches()) + " " + std::to_string(offset));
  }
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override {
    batches.push_back(batch);
    table_sizes.push_back(strings.size());
  }
  std::vector<std::string> log;
  std::vector<DecodedBatch> batches;
  std::vector<std::size_t> table_sizes;
};

std::string helloFrame(uint32_t pid) {
  v1::Frame frame;
  frame.mutable_hello()->set_wire_version(1);
  frame.mutable_hello()->set_pid(pid);
  return frame.SerializeAsString();
}

}  // namespace

TEST_CASE("the fast path decodes batch frames exactly as libprotobuf's parse, and refuses what it refuses") {
  // libprotobuf logs every string that is not UTF-8; the refusals are the point here.
  google::protobuf::LogSilencer quiet;
  std::mt19937_64 rng(20240611);
  Wire wire(rng);
  Capture fast_out, parsed_out;
  StreamDecoder fast(fast_out), parsed(parsed_out);
  std::size_t taken = 0, left = 0, refused = 0;

  for (int i = 0; i < 6000; ++i) {
    std::string bytes;
    if (i == 200) bytes = helloFrame(77);  // some batches before the Hello, some after
    else {
      wire.newFrame();
      bytes = wire.mangle(wire.frame());
    }
    const uint64_t offset = 12 + 1000 * static_cast<uint64_t>(i);
    const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());

    v1::Frame frame;
    const bool parses = frame.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    const bool delivered = parses && !bytes.empty() && frame.body_case() != v1::Frame::BODY_NOT_SET;
    // A Hello of wire version 0 (an empty one) is refused: by both decoders alike.
    const bool parsed_error = delivered && parsed.onFrame(frame, offset).has_value();

    const bool took = !bytes.empty() && fast.takeFrameBytes(span, offset);
    INFO("frame " << i << " of " << bytes.size() << " bytes; libprotobuf parses it: " << parses);
    if (took) {
      REQUIRE(delivered);  // never a frame libprotobuf refuses or skips
      REQUIRE_FALSE(parsed_error);
      ++taken;
    } else if (delivered) {
      REQUIRE(fast.onFrame(frame, offset).has_value() == parsed_error);
      ++left;
    } else {
      ++refused;
    }
    REQUIRE(fast_out.batches.size() == parsed_out.batches.size());
    if (!fast_out.batches.empty()) REQUIRE(sameBatch(fast_out.batches.back(), parsed_out.batches.back()));
    REQUIRE(fast_out.table_sizes == parsed_out.table_sizes);
    REQUIRE(healthFields(fast.health()) == healthFields(parsed.health()));
  }
  CHECK(fast_out.log == parsed_out.log);
  CHECK(tableOf(fast.strings()) == tableOf(parsed.strings()));
  // Every kind of frame was seen: taken by the fast path, left to libprotobuf, refused by both.
  CHECK(taken > 1000);
  CHECK(left > 500);
  CHECK(refused > 500);
}

TEST_CASE("the fast path takes the frames the recorder writes") {
  // A batch as the recorder's encoder lays it out: fields in order, minimal varints, ASCII names.
  v1::Frame frame;
  v1::EventBatch* batch = frame.mutable_batch();
  batch->set_sequence(3);
  batch->set_base_time_ns(1'000'000);
  auto* name = batch->add_strings();
  name->set_id(1);
  name->set_kind(v1::STRING_KIND_KERNEL_NAME);
  name->set_text("_Z6kernelv");
  auto* call = batch->add_api_calls();
  call->set_kind(v1::API_KIND_LAUNCH);
  call->set_thread_id(9);
  call->set_start_delta_ns(500);
  call->set_duration_ns(4000);
  call->set_correlation_delta(7);
  call->set_return_code(-1);  // ten bytes on the wire
  call->set_cbid(211);        // a two-byte tag
  auto* kernel = batch->add_activities();
  kernel->set_kind(v1::ACTIVITY_KIND_KERNEL);
  kernel->set_stream(13);
  kernel->set_start_delta_ns(9000);
  kernel->set_duration_ns(2500);
  kernel->set_correlation_delta(7);
  kernel->set_name_id(1);
  const std::string bytes = frame.SerializeAsString();

  Capture out;
  StreamDecoder decoder(out);
  REQUIRE(decoder.takeFrameBytes(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 12));
  REQUIRE(out.batches.size() == 1);
  const DecodedBatch& decoded = out.batches[0];
  CHECK(decoded.sequence == 3);
  CHECK(decoded.frame_offset == 12);
  REQUIRE(decoded.api_calls.size() == 1);
  CHECK(decoded.api_calls[0].thread_id == 9);
  CHECK(decoded.api_calls[0].start_ns == 1'000'500);
  CHECK(decoded.api_calls[0].end_ns == 1'004'500);
  CHECK(decoded.api_calls[0].correlation_id == 7);
  CHECK(decoded.api_calls[0].return_code == -1);
  CHECK(decoded.api_calls[0].cbid == 211);
  REQUIRE(decoded.activities.size() == 1);
  CHECK(decoded.activities[0].start_ns == 1'009'000);
  CHECK(decoded.activities[0].correlation_id == 7);
  CHECK(decoder.strings().display(v1::STRING_KIND_KERNEL_NAME, 1) == "_Z6kernelv");
  CHECK(decoder.health().batches == 1);
}
