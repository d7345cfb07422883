// tools/dump_json.cpp: see dump_json.h.
#include "tools/dump_json.h"

#include <gapwatch/json_text.h>

#include "reader/enum_labels.h"
#include "reader/python_stack_text.h"

namespace gapwatch::cli {
namespace {

using json = nlohmann::ordered_json;

// The frames of a recorded Python stack, innermost first; null when the call has none.
json pythonStackJson(const StringTable& strings, uint32_t id) {
  const std::string* text = id ? strings.find(v1::STRING_KIND_PYTHON_STACK, id) : nullptr;
  if (!text) return nullptr;
  json frames = json::array();
  for (const PythonFrame& f : parsePythonStack(*text))
    frames.push_back({{"function", f.function}, {"file", f.file}, {"line", f.line}});
  return frames;
}

json dropJson(v1::DropSource source, uint64_t id, uint64_t dropped) {
  return {{"source", enumLabel(source)}, {"id", id}, {"dropped", dropped}};
}

std::string threadName(uint32_t thread_id, const StringTable& strings) {
  const std::string* name = strings.find(v1::STRING_KIND_THREAD_NAME, thread_id);
  return name ? *name : std::string();
}

}  // namespace

void JsonDumpPrinter::print(const nlohmann::ordered_json& object) {
  // Recorded strings are untrusted: never let one stop the dump.
  out_ << jsonText(object) << '\n';
}

void JsonDumpPrinter::onHello(const v1::Hello& h, uint64_t offset) {
  json probes = json::array();
  for (int probe : h.probes()) probes.push_back(enumLabel(static_cast<v1::Probe>(probe)));
  json command_line = json::array();
  for (const std::string& arg : h.command_line()) command_line.push_back(arg);
  print({{"type", "hello"},
         {"offset", offset},
         {"wire_version", h.wire_version()},
         {"pid", h.pid()},
         {"host", h.host()},
         {"rank", h.has_rank() ? json(h.rank()) : json(nullptr)},
         {"local_rank", h.has_local_rank() ? json(h.local_rank()) : json(nullptr)},
         {"world_size", h.has_world_size() ? json(h.world_size()) : json(nullptr)},
         {"command_line", command_line},
         {"clock", enumLabel(h.clock())},
         {"probes", probes},
         {"library_version", h.library_version()},
         {"cupti_version", h.cupti_version()},
         {"cuda_driver_version", h.cuda_driver_version()},
         {"start_time_ns", h.start_time_ns()},
         {"process_start_ns", h.process_start_ns()},
         {"start_unix_ns", h.start_unix_ns()},
         {"cupti_unavailable", h.cupti_unavailable()},
         {"source", enumLabel(h.source())},
         {"trace_schema_version", h.trace_schema_version()},
         {"trace_name", h.trace_name()}});
}

void JsonDumpPrinter::onBatch(const DecodedBatch& batch, const StringTable& strings) {
  print({{"type", "batch"},
         {"offset", batch.frame_offset},
         {"sequence", batch.sequence},
         {"base_time_ns", batch.base_time_ns},
         {"strings", batch.strings.size()},
         {"api_calls", batch.api_calls.size()},
         {"activities", batch.activities.size()},
         {"nccl_calls", batch.nccl_calls.size()},
         {"markers", batch.markers.size()},
         {"drops", batch.drops.size()}});

  for (const StringDefinition& s : batch.strings) {
    print({{"type", "string"}, {"kind", enumLabel(s.kind)}, {"id", s.id}, {"text", s.text}});
  }
  for (const ApiCallEvent& e : batch.api_calls) {
    print({{"type", "api_call"},
           {"kind", enumLabel(e.kind)},
           {"name", strings.display(v1::STRING_KIND_API_NAME, e.api_name_id)},
           {"api_name_id", e.api_name_id},
           {"thread_id", e.thread_id},
           {"thread_name", threadName(e.thread_id, strings)},
           {"start_ns", e.start_ns},
           {"end_ns", e.end_ns},
           {"duration_ns", e.end_ns - e.start_ns},
           {"correlation_id", e.correlation_id},
           {"stream", e.stream},
           {"device", e.device},
           {"bytes", e.bytes},
           {"copy_kind", enumLabel(e.copy_kind)},
           {"src_memory", enumLabel(e.src_memory)},
           {"dst_memory", enumLabel(e.dst_memory)},
           {"blocked", e.blocked},
           {"return_code", e.return_code},
           {"call_site", strings.display(v1::STRING_KIND_CALL_SITE, e.call_site_id)},
           {"call_site_id", e.call_site_id},
           {"python_stack", pythonStackJson(strings, e.python_stack_id)},
           {"python_stack_id", e.python_stack_id},
           {"cbid", e.cbid},
           {"domain", enumLabel(e.domain)}});
  }
  for (const DeviceActivityEvent& e : batch.activities) {
    print({{"type", "activity"},
           {"kind", enumLabel(e.kind)},
           {"name", strings.display(v1::STRING_KIND_KERNEL_NAME, e.name_id)},
           {"name_id", e.name_id},
           {"device", e.device},
           {"stream", e.stream},
           {"start_ns", e.start_ns},
           {"end_ns", e.end_ns},
           {"duration_ns", e.end_ns - e.start_ns},
           {"correlation_id", e.correlation_id},
           {"bytes", e.bytes},
           {"copy_kind", enumLabel(e.copy_kind)},
           {"src_memory", enumLabel(e.src_memory)},
           {"dst_memory", enumLabel(e.dst_memory)},
           {"graph_id", e.graph_id},
           {"sync_kind", enumLabel(e.sync_kind)}});
  }
  for (const NcclCallEvent& e : batch.nccl_calls) {
    print({{"type", "nccl_call"},
           {"op", enumLabel(e.op)},
           {"thread_id", e.thread_id},
           {"thread_name", threadName(e.thread_id, strings)},
           {"start_ns", e.start_ns},
           {"end_ns", e.end_ns},
           {"duration_ns", e.end_ns - e.start_ns},
           {"comm", strings.display(v1::STRING_KIND_COMM, e.comm_id)},
           {"comm_id", e.comm_id},
           {"bytes", e.bytes},
           {"count", e.count},
           {"data_type", enumLabel(e.data_type)},
           {"peer", e.peer},
           {"rank", e.rank},
           {"nranks", e.nranks},
           {"stream", e.stream},
           {"return_code", e.return_code},
           {"group_depth", e.group_depth}});
  }
  for (const MarkerEvent& e : batch.markers) {
    print({{"type", "marker"},
           {"kind", enumLabel(e.kind)},
           {"name", strings.display(v1::STRING_KIND_MARKER_NAME, e.name_id)},
           {"name_id", e.name_id},
           {"thread_id", e.thread_id},
           {"thread_name", threadName(e.thread_id, strings)},
           {"time_ns", e.time_ns},
           {"step", e.step}});
  }
  for (const HostRangeEvent& e : batch.host_ranges) {
    print({{"type", "host_range"},
           {"kind", enumLabel(e.kind)},
           {"name", strings.display(v1::STRING_KIND_HOST_RANGE_NAME, e.name_id)},
           {"name_id", e.name_id},
           {"thread_id", e.thread_id},
           {"thread_name", threadName(e.thread_id, strings)},
           {"start_ns", e.start_ns},
           {"end_ns", e.end_ns}});
  }
  for (const PythonSampleEvent& e : batch.python_samples) {
    print({{"type", "python_sample"},
           {"thread_id", e.thread_id},
           {"thread_name", threadName(e.thread_id, strings)},
           {"time_ns", e.time_ns},
           {"period_ns", e.period_ns},
           {"python_stack", pythonStackJson(strings, e.python_stack_id)},
           {"python_stack_id", e.python_stack_id}});
  }
  for (const DropCount& d : batch.drops) {
    json drop = dropJson(d.source, d.id, d.dropped);
    drop["type"] = "drop";
    drop["final"] = false;
    print(drop);
  }
}

void JsonDumpPrinter::onGoodbye(const v1::Goodbye& g, uint64_t offset) {
  json drops = json::array();
  for (const v1::DropCounter& d : g.drops()) drops.push_back(dropJson(d.source(), d.id(), d.dropped()));
  print({{"type", "goodbye"},
         {"offset", offset},
         {"end_time_ns", g.end_time_ns()},
         {"exit_reason", enumLabel(g.exit_reason())},
         {"exit_status", g.has_exit_status() ? json(g.exit_status()) : json(nullptr)},
         {"signal", g.signal()},
         {"batches", g.batches()},
         {"api_calls", g.api_calls()},
         {"activities", g.activities()},
         {"nccl_calls", g.nccl_calls()},
         {"markers", g.markers()},
         {"events_dropped", g.events_dropped()},
         {"cupti_records_dropped", g.cupti_records_dropped()},
         {"drops", drops}});
}

void JsonDumpPrinter::onHeartbeat(const v1::Heartbeat& h, uint64_t offset) {
  json calls = json::array();
  for (const v1::CallInProgress& c : h.calls())
    calls.push_back({{"thread_id", c.thread_id()},
                     {"start_ns", c.start_ns()},
                     {"correlation_id", c.correlation_id()},
                     {"api_name", c.api_name()}});
  json unfinished = json::array();
  for (const v1::UnfinishedLaunch& u : h.unfinished())
    unfinished.push_back({{"correlation_id", u.correlation_id()},
                          {"launch_ns", u.launch_ns()},
                          {"kernel_name", u.kernel_name()},
                          {"thread_id", u.thread_id()}});
  print({{"type", "heartbeat"}, {"offset", offset}, {"time_ns", h.time_ns()}, {"calls", calls}, {"unfinished", unfinished}});
}

void JsonDumpPrinter::printEnd(const ReadSummary& summary, const StreamHealth& health) {
  print({{"type", "end"},
         {"format_version", summary.format_version},
         {"bytes", summary.bytes_read},
         {"frames", summary.frames},
         {"skipped_frames", summary.skipped_frames},
         {"truncated", summary.truncated},
         {"truncated_at", summary.truncated_at},
         {"dropped_bytes", summary.dropped_bytes},
         {"has_hello", health.has_hello},
         {"has_goodbye", health.has_goodbye},
         {"batches", health.batches},
         {"batches_missing", health.batches_missing},
         {"batches_out_of_order", health.batches_out_of_order}});
}

}  // namespace gapwatch::cli
