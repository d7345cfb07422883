// reader/kineto_event_fields.h: the field walker: the fields of one traceEvents element that the
// Kineto import uses, read with simdjson's on-demand API, stopping as soon as ph and cat say the
// element is not used. Numbers are kept as their raw text and checked only for a used event
// (intField, streamField), so that an unused event never refuses a trace.
#pragma once

#include "reader/kineto_event_filter.h"
#include "reader/kineto_host_events.h"

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gapwatch::kineto {

// A number as found: its raw text, checked only when the event is one the import uses (the
// design skips unused events without looking at their fields).
struct RawNumber {
  bool present = false;
  bool is_number = false;
  bool is_string = false;  // a number written as a string ("bytes": "4096"): its unescaped text
  std::string_view text;
};

// The fields of one traceEvents element that the import uses, as found. The views point into the
// simdjson parser's buffers and live until the next batch. (Not interpose/raw_event.h's RawEvent,
// the recorder's ring slot: this was called that too until issue 20.)
struct TraceEventFields {
  std::string_view ph, cat, name;
  bool has_ph = false, has_cat = false;
  Category category = Category::kSkip;
  RawNumber ts, dur, correlation, stream, bytes, cbid, device;
  // A cuda_sync record's event (Kineto writes them with enable_cuda_sync_events): the recording
  // call's correlation id and its stream, -1 where unknown.
  RawNumber wait_on_correlation, wait_on_stream;
  bool has_pid = false, has_tid = false;
  int64_t pid = 0, tid = 0;
  std::string_view tid_text;  // a tid given as a string
  bool tid_is_text = false;
  std::string_view sync_kind;
  std::string_view arg_name;  // M events: args.name
  KinetoCommsArgs comms;      // record_param_comms' args (kineto_host_events.h)
};

// Reads the fields of one element; stops once ph and cat say the import does not use it. A
// refusal names the element and field.
std::optional<std::string> parseEvent(simdjson::ondemand::object event, uint64_t index, TraceEventFields& raw);

// A used event's integer field (all are args): absent is fine (value untouched, `has` false); a
// number, or a string that holds one ("4096": ROCm's writers), is read; anything else is refused.
std::optional<std::string> intField(const RawNumber& n, int64_t& value, bool& has, uint64_t index, std::string_view field);

// args.stream: as intField, or a pointer string ("0x55d3c8a0e000": Kineto's ROCm back ends write
// a HIP call's stream so), whose bits are the stream's id.
std::optional<std::string> streamField(const RawNumber& n, int64_t& value, bool& has, uint64_t index);

}  // namespace gapwatch::kineto
