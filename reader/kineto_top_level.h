// reader/kineto_top_level.h: the top-level walker of a Kineto trace: the object's keys in file
// order, the metadata (distributedInfo, baseTimeNanoseconds, schemaVersion, traceName) parsed
// whole, traceEvents handed to the reader at its '[', every other key skipped without parsing.
#pragma once

#include "reader/json_splitter.h"

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gapwatch::kineto {

// What the trace says about itself, outside traceEvents.
struct TraceMetadata {
  std::optional<int32_t> rank, world_size;
  bool has_distributed_info = false;
  uint64_t base_time_ns = 0;
  bool has_base_time = false;
  uint32_t schema_version = 0;  // schemaVersion and traceName: what the trace says it is (Hello)
  std::string trace_name;
  // Counted while the events are read (all before the Hello): the profiler's own host events.
  uint64_t python_events = 0, cpu_ops = 0;
  uint64_t host_first_ns = UINT64_MAX, host_last_ns = 0;
};

// One top-level value (distributedInfo, baseTimeNanoseconds), parsed whole.
class MetadataParser {
 public:
  // Refused with one line where a value is not what the format says (distributedInfo.rank not an
  // integer, baseTimeNanoseconds negative, ...); schemaVersion and traceName of another type are
  // left out.
  std::optional<std::string> parse(std::string_view key, std::string_view text, TraceMetadata& meta);

 private:
  simdjson::ondemand::parser parser_;
};

// A refusal for a scan that did not end a value, or for a trace cut short `where`.
std::string scanError(JsonSplitter::Scan scan, const JsonSplitter& s, const std::string& what);
std::string cutShort(const JsonSplitter& s, const std::string& where);

using EventsReader = std::optional<std::string> (*)(void* context, JsonSplitter& s);

// Walks the top-level object: metadata keys into `meta`; traceEvents (at its '[') handed to
// `read_events`, or skipped when that is null. Checks that nothing but whitespace follows.
std::optional<std::string> walkTopLevel(JsonSplitter& s, MetadataParser& parser, TraceMetadata& meta,
                                        EventsReader read_events, void* context);

}  // namespace gapwatch::kineto
