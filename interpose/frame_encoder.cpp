// Field numbers are those of proto/gapwatch/v1/{stream,events}.proto; the round-trip test
// (tests/unit/frame_encoder_test.cpp) parses what this writes with libprotobuf.
#include "frame_encoder.h"

#include <gapwatch/recording_format.h>

#include <algorithm>

#include "proto_writer.h"

namespace gapwatch {
namespace {

constexpr uint32_t kClockMonotonic = 1;

// The smallest time in a list: the batch's base, so most deltas are small and positive.
uint64_t base_time(const BatchContent& b) {
  uint64_t base = UINT64_MAX;
  for (const auto* list : {&b.api_calls, &b.activities, &b.nccl_calls})
    if (!list->empty()) base = std::min(base, (*list)[0].start_ns);
  return base == UINT64_MAX ? 0 : base;
}

void drop_counter(ProtoWriter& w, const DropCount& d) {
  w.u64(1, d.source);
  w.u64(2, d.id);
  w.u64(3, d.dropped);
}

}  // namespace

void FrameEncoder::frame(uint32_t body_field, std::string& out) {
  // Frame { oneof body { Hello hello = 1; EventBatch batch = 2; Goodbye goodbye = 3; } }
  message_.clear();
  ProtoWriter m(message_);
  m.tag(body_field, 2);
  m.varint(body_.size());
  message_.append(body_);
  ProtoWriter o(out);
  o.varint(message_.size());
  out.append(message_);
}

void FrameEncoder::hello(const HelloInfo& h, std::string& out) {
  body_.clear();
  ProtoWriter w(body_);
  w.u64(1, kWireVersion);
  w.u64(2, h.pid);
  w.string(3, h.host);
  if (h.has_rank) w.optional_i64(4, h.rank);
  if (h.has_local_rank) w.optional_i64(5, h.local_rank);
  if (h.has_world_size) w.optional_i64(6, h.world_size);
  for (const auto& arg : h.command_line) w.repeated_string(7, arg);
  w.u64(8, kClockMonotonic);
  if (!h.probes.empty()) {  // packed repeated enum
    item_.clear();
    ProtoWriter p(item_);
    for (uint32_t probe : h.probes) p.varint(probe);
    w.tag(9, 2);
    w.varint(item_.size());
    body_.append(item_);
  }
  w.string(10, kLibraryVersion);
  w.u64(11, h.cupti_version);
  w.u64(12, h.cuda_driver_version);
  w.u64(13, h.start_time_ns);
  w.u64(14, h.process_start_ns);
  w.u64(15, h.start_unix_ns);
  w.string(16, h.cupti_unavailable);
  frame(1, out);
}

void FrameEncoder::batch(const BatchContent& b, std::string& out) {
  body_.clear();
  ProtoWriter w(body_);
  uint64_t base = base_time(b);
  w.u64(1, b.sequence);
  w.u64(2, base);
  for (const auto& s : b.strings) {
    w.message(3, item_, [&](ProtoWriter& m) {
      m.u64(1, s.id);
      m.u64(2, s.kind);
      m.string(3, s.text);
    });
  }
  {
    uint64_t t = base, c = 0;
    uint32_t thread = 0;
    for (size_t i = 0; i < b.api_calls.size(); ++i) {
      const RawEvent& e = b.api_calls[i];
      uint32_t call_site = i < b.api_call_sites.size() ? b.api_call_sites[i] : 0;
      w.message(4, item_, [&](ProtoWriter& m) {
        m.u64(1, e.kind);
        if (e.thread != thread) m.u64(2, e.thread);
        m.s64(3, int64_t(e.start_ns - t));
        m.u64(4, e.end_ns >= e.start_ns ? e.end_ns - e.start_ns : 0);
        m.s64(5, int64_t(e.correlation - c));
        m.u64(6, e.stream);
        m.u64(7, e.bytes);
        m.u64(8, e.copy_kind);
        m.u64(9, e.src_memory);
        m.u64(10, e.dst_memory);
        m.boolean(11, e.flags & kFlagBlocked);
        m.i64(12, e.return_code);
        // The interned API name says which call it was. cbid and domain are left out: two more
        // fields on every launch would break the 16-bytes-per-event budget.
        m.u64(13, uint32_t(e.peer));
        m.u64(15, call_site);
      });
      t = e.start_ns, c = e.correlation, thread = e.thread;
    }
  }
  {
    uint64_t t = base, c = 0;
    for (const RawEvent& e : b.activities) {
      w.message(5, item_, [&](ProtoWriter& m) {
        m.u64(1, e.kind);
        m.u64(2, e.thread);  // device
        m.u64(3, e.stream);
        m.s64(4, int64_t(e.start_ns - t));
        m.u64(5, e.end_ns >= e.start_ns ? e.end_ns - e.start_ns : 0);
        m.s64(6, int64_t(e.correlation - c));
        m.u64(7, uint32_t(e.peer));  // the interned kernel name
        m.u64(8, e.bytes);
        m.u64(9, e.copy_kind);
        m.u64(10, e.src_memory);
        m.u64(11, e.dst_memory);
        m.u64(12, e.cbid);  // graph id
        m.u64(13, e.domain);  // sync kind
      });
      t = e.start_ns, c = e.correlation;
    }
  }
  {
    uint64_t t = base;
    uint32_t thread = 0;
    for (size_t i = 0; i < b.nccl_calls.size(); ++i) {
      const RawEvent& e = b.nccl_calls[i];
      const NcclRankInfo r = i < b.nccl_ranks.size() ? b.nccl_ranks[i] : NcclRankInfo{};
      w.message(6, item_, [&](ProtoWriter& m) {
        m.u64(1, e.kind);
        if (e.thread != thread) m.u64(2, e.thread);
        m.s64(3, int64_t(e.start_ns - t));
        m.u64(4, e.end_ns >= e.start_ns ? e.end_ns - e.start_ns : 0);
        m.u64(5, e.correlation);  // communicator id
        m.u64(6, e.bytes);
        m.u64(7, e.cbid);  // element count
        m.u64(8, e.data_type);
        m.i64(9, e.peer);
        if (r.nranks > 0) m.i64(10, r.rank), m.i64(11, r.nranks);
        m.u64(12, e.stream);
        m.i64(13, e.return_code);
        m.u64(14, e.domain);  // group depth
      });
      t = e.start_ns, thread = e.thread;
    }
  }
  for (const auto& d : b.drops) w.message(8, item_, [&](ProtoWriter& m) { drop_counter(m, d); });
  frame(2, out);
}

void FrameEncoder::goodbye(const GoodbyeInfo& g, std::string& out) {
  body_.clear();
  ProtoWriter w(body_);
  w.u64(1, g.end_time_ns);
  w.u64(2, g.exit_reason);
  w.u64(5, g.batches);
  w.u64(6, g.api_calls);
  w.u64(7, g.activities);
  w.u64(8, g.nccl_calls);
  w.u64(10, g.events_dropped);
  w.u64(11, g.cupti_records_dropped);
  for (const auto& d : g.drops) w.message(12, item_, [&](ProtoWriter& m) { drop_counter(m, d); });
  frame(3, out);
}

}  // namespace gapwatch
