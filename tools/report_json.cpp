// tools/report_json.cpp: see report_json.h; every key is documented in docs/report-json.md.
#include "tools/report_json.h"

#include "analysis/diagnosis.h"
#include <gapwatch/json_text.h>
#include "analysis/sync_advice.h"
#include "reader/enum_labels.h"
#include "analysis/gap_histogram.h"

#include <gapwatch/recording_format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace gapwatch::cli {
namespace {

using json = nlohmann::ordered_json;
using analysis::DeviceAnalysis;
using analysis::ProcessAnalysis;

double ratio(double part, double whole) { return whole > 0 ? part / whole : 0.0; }


// Spans with another client of CUPTI's activity API; an open span ends with the recording.
json activityApiSpans(const ProcessAnalysis& p, const analysis::RecordingOverview& o) {
  json spans = json::array();
  for (const ActivityApiSpan& s : p.activity_api_spans)
    spans.push_back({{"state", s.state == v1::ACTIVITY_API_STATE_BLIND ? "blind" : "shared"},
                     {"start_ns", s.start_ns},
                     {"end_ns", s.end_ns ? s.end_ns : o.span_end_ns},
                     {"open", s.end_ns == 0},
                     {"client", s.client}});
  return spans;
}

json causesJson(const std::array<uint64_t, analysis::kIdleCauseCount>& by_cause) {
  json out = json::object();
  for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
    out[analysis::idleCauseName(static_cast<analysis::IdleCause>(c))] = by_cause[c];
  }
  return out;
}

json partsJson(const std::array<uint64_t, analysis::kHostPartCount>& by_part) {
  json out = json::object();
  for (std::size_t c = 0; c < analysis::kHostPartCount; ++c) {
    out[analysis::hostPartName(static_cast<analysis::HostPart>(c))] = by_part[c];
  }
  return out;
}

json partLabelsJson(const std::array<std::vector<analysis::HostLabel>, analysis::kHostPartCount>& labels) {
  json out = json::object();
  for (std::size_t c = 0; c < analysis::kHostPartCount; ++c) {
    json names = json::array();
    for (const analysis::HostLabel& l : labels[c]) {
      names.push_back({{"name", l.name.empty() ? json(nullptr) : json(l.name)}, {"ns", l.ns}});
    }
    out[analysis::hostPartName(static_cast<analysis::HostPart>(c))] = names;
  }
  return out;
}

json histogramJson(const GapHistogram& gaps) {
  json buckets = json::array();
  for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
    const bool last = b + 1 == GapHistogram::kBucketCount;
    buckets.push_back({{"lo_ns", GapHistogram::lowerNs(b)},
                       {"hi_ns", last ? json(nullptr) : json(GapHistogram::upperNs(b))},
                       {"count", gaps.bucket(b).count},
                       {"total_ns", gaps.bucket(b).total_ns}});
  }
  return buckets;
}

// A number of the evidence: an integer when it is one (counts, nanoseconds), else a double.
json numberJson(double value) {
  if (std::isfinite(value) && std::floor(value) == value && std::fabs(value) < 9.0e15) {
    return json(static_cast<int64_t>(value));
  }
  return std::isfinite(value) ? json(value) : json(nullptr);
}

json findingJson(const analysis::Finding& f) {
  json evidence = json::array();
  for (const auto& [name, value] : f.evidence) evidence.push_back({{"name", name}, {"value", value}});
  json numbers = json::object();
  for (const auto& [key, value] : f.numbers) numbers[key] = numberJson(value);
  return {{"id", f.id},
          {"cause", analysis::causeOfFinding(f.id)},
          {"host_part", analysis::hostPartOfFinding(f.id).empty() ? json(nullptr) : json(analysis::hostPartOfFinding(f.id))},
          {"title", f.title},
          {"idle_ns", f.idle_ns},
          {"idle_share", f.idle_share},
          {"evidence", evidence},
          {"numbers", numbers},
          {"fix", f.fix},
          {"python_site", f.python_site.empty() ? json(nullptr) : json(f.python_site)}};
}

json gapActivityJson(const analysis::GapActivity& a) {
  const char* kind = a.kind == v1::ACTIVITY_KIND_KERNEL   ? "kernel"
                     : a.kind == v1::ACTIVITY_KIND_MEMCPY ? "memcpy"
                     : a.kind == v1::ACTIVITY_KIND_MEMSET ? "memset"
                                                          : nullptr;
  if (!kind) return nullptr;
  return {{"kind", kind},
          {"name", a.name},
          {"start_ns", a.start_ns},
          {"end_ns", a.end_ns},
          {"stream", a.stream},
          {"correlation_id", a.correlation_id},
          {"bytes", a.bytes}};
}

// A Python stack's frames, innermost first; null when there is none.
json pythonStackJson(const std::vector<PythonFrame>& frames) {
  if (frames.empty()) return nullptr;
  json out = json::array();
  for (const PythonFrame& f : frames) out.push_back({{"function", f.function}, {"file", f.file}, {"line", f.line}});
  return out;
}

json gapCallJson(const analysis::GapCall& c) {
  if (!c.known) return nullptr;
  return {{"api_name", c.api_name},
          {"thread_id", c.thread_id},
          {"enter_ns", c.enter_ns},
          {"exit_ns", c.exit_ns},
          {"ns", c.exit_ns - std::min(c.enter_ns, c.exit_ns)},
          {"in_gap_ns", c.in_gap_ns},
          {"python_site", c.python_site.empty() ? json(nullptr) : json(c.python_site)}};
}

json kernelStatsJson(const std::vector<analysis::KernelStats>& rows) {
  json out = json::array();
  for (const analysis::KernelStats& k : rows) {
    out.push_back({{"name", k.name},
                   {"count", k.count},
                   {"total_ns", k.total_ns},
                   {"busy_share", k.busy_share},
                   {"mean_ns", k.meanNs()},
                   {"median_ns", k.median_ns},
                   {"min_ns", k.min_ns},
                   {"max_ns", k.max_ns},
                   {"under_20us", k.under_20us},
                   {"shorter_than_launch", k.shorter_than_launch},
                   {"short", k.short_kernel}});
  }
  return out;
}

json kernelsJson(const analysis::KernelTable& t) {
  json by_class = json::object();  // kernel_class.h's keys, most time first
  for (const auto& [key, ns] : t.by_class) by_class[key] = ns;
  return {{"kernels", t.kernels},
          {"distinct", t.distinct},
          {"total_ns", t.total_ns},
          {"busy_ns", t.busy_ns},
          {"top_by_time", kernelStatsJson(t.top_by_time)},
          {"short_by_count", kernelStatsJson(t.short_by_count)},
          {"by_class", by_class}};
}

// The device's first pass (DeviceAnalysis::first_pass), null when all of the window is steady state.
json firstPassJson(const analysis::DeviceAnalysis& d) {
  if (!d.first_pass) return nullptr;
  const analysis::DeviceAnalysis& f = *d.first_pass;
  return {{"window_start_ns", f.window_start_ns},
          {"window_end_ns", f.window_end_ns},
          {"window_ns", f.window_end_ns - f.window_start_ns},
          {"busy_ns", f.busy_ns},
          {"idle_ns", f.idle_ns},
          {"one_time_ns", f.one_time_ns},
          {"idle_by_cause", causesJson(f.idle_by_cause_ns)},
          {"kernels", f.kernels},
          {"first_runs", f.first_runs}};
}

json deviceJson(const DeviceAnalysis& d, bool kineto_trace) {
  json gaps = json::array();
  for (const analysis::IdleGap& g : d.longest_gaps) {
    gaps.push_back({{"start_ns", g.start_ns},
                    {"end_ns", g.end_ns},
                    {"ns", g.end_ns - g.start_ns},
                    {"after_sync", g.after_sync},
                    {"by_cause", causesJson(g.by_cause_ns)},
                    {"host_cpu_by_part", partsJson(g.host_by_part_ns)},
                    {"before", gapActivityJson(g.before)},
                    {"after", gapActivityJson(g.after)},
                    {"call", gapCallJson(g.call)},
                    {"queued_by", gapCallJson(g.queued_by)}});
  }
  json host_sites = json::array();
  for (const analysis::HostReturnSite& s : d.long_host_gap_sites) {
    host_sites.push_back({{"name", s.name},
                          {"gaps", s.gaps},
                          {"host_cpu_ns", s.host_cpu_ns},
                          {"python_stack", pythonStackJson(s.python_stack)}});
  }
  json streams = json::array();
  for (const analysis::StreamIdle& s : d.streams) {
    streams.push_back({{"stream", s.stream},
                       {"host_wait_ns", s.host_wait_ns},
                       {"kernel_wait_ns", s.kernel_wait_ns},
                       {"other_ns", s.other_ns}});
  }
  return {{"device", d.device},
          {"window_start_ns", d.window_start_ns},
          {"window_end_ns", d.window_end_ns},
          {"window_ns", d.window_end_ns - d.window_start_ns},
          {"leading_ns", kineto_trace ? json(nullptr) : json(d.leading_ns)},
          {"busy_ns", d.busy_ns},
          {"idle_ns", d.idle_ns},
          {"idle_fraction", d.idle_fraction},
          {"kernels", d.kernels},
          {"memcpys", d.memcpys},
          {"memsets", d.memsets},
          {"idle_by_cause", causesJson(d.idle_by_cause_ns)},
          {"host_cpu_by_part", partsJson(d.host_cpu_by_part_ns)},
          {"host_cpu_names", partLabelsJson(d.host_part_labels)},
          {"host_evidence", analysis::hostEvidenceName(d.host_evidence)},
          {"python_samples", d.python_samples},
          {"unknown_host_in_long_gaps_ns", d.unknown_host_in_long_gaps_ns},
          {"long_host_gaps", d.long_host_gaps},
          {"long_host_gap_sites", host_sites},
          {"after_sync",
           {{"ns", d.after_sync_ns},
            {"gaps", d.after_sync_gaps},
            {"hideable_ns", d.after_sync_hideable_ns},
            {"by_cause", causesJson(d.after_sync_by_cause_ns)},
            {"host_cpu_by_part", partsJson(d.after_sync_host_by_part_ns)}}},
          {"warmup_evidence",
           {{"by_cause", causesJson(d.warmup_by_cause_ns)},
            {"host_cpu_by_part", partsJson(d.warmup_host_by_part_ns)}}},
          {"gap_count", d.gaps.count()},
          {"histogram", histogramJson(d.gaps)},
          {"longest_gaps", gaps},
          {"idle_by_stream", streams},
          {"hta_idle_by_stream", streams},  // the same rows, under their version-1 name (kept)
          {"work_without_call", d.work_without_call},
          {"launch_overhead_long_gaps_ns", d.launch_overhead_long_gaps_ns},
          {"launch_overhead_short_gaps", d.launch_overhead_short_gaps},
          {"one_time_ns", d.one_time_ns},
          {"first_pass", firstPassJson(d)}};
}

// Calls recorded with a Python stack, and those that were to have one but did not, by reason.
json pythonStacksJson(const ProcessAnalysis& p) {
  json reasons = json::object();
  for (const auto& [reason, n] : p.python_stack_misses_by_reason) reasons[reason] = n;
  return {{"read", p.python_stacks}, {"missed", p.python_stack_misses}, {"missed_by_reason", reasons}};
}

json syncPointsJson(const ProcessAnalysis& p) {
  json out = json::array();
  for (const analysis::SyncTypeStats& s : p.sync_points) {
    json sites = json::array();
    for (const analysis::CallSite& site : s.top_call_sites) {
      sites.push_back({{"name", site.name},
                       {"count", site.count},
                       {"total_ns", site.total_ns},
                       {"idle_after_ns", site.idle_after_ns},
                       {"python_stack", pythonStackJson(site.python_stack)}});
    }
    out.push_back({{"type", syncPointKey(s.kind)},
                   {"name", std::string(syncPointName(s.kind))},
                   {"label", analysis::syncTypeLabel(s)},
                   {"count", s.count},
                   {"total_ns", s.total_ns},
                   {"p50_ns", s.p50_ns},
                   {"p99_ns", s.p99_ns},
                   {"idle_after_ns", s.idle_after_ns},
                   {"small_reads", s.small_reads},
                   {"polls", s.polls},
                   {"polling_ns", s.polling_ns},
                   {"top_call_sites", sites}});
  }
  return out;
}

json launchesJson(const analysis::LaunchStats& l) {
  return {{"launches", l.launches},
          {"graph_launches", l.graph_launches},
          {"graph_kernels", l.graph_kernels},
          {"captured_calls", l.captured_calls},
          {"api_total_ns", l.api_total_ns},
          {"api_p50_ns", l.api_p50_ns},
          {"api_p99_ns", l.api_p99_ns},
          {"launch_delay_mean_ns", l.launch_delay_mean_ns},
          {"launch_delay_p50_ns", l.launch_delay_p50_ns},
          {"launch_delay_p99_ns", l.launch_delay_p99_ns},
          {"short_kernels", l.short_kernels},
          {"runtime_outliers", l.runtime_outliers},
          {"launch_delay_outliers", l.launch_delay_outliers},
          {"kernels_under_20us", l.kernels_under_20us},
          {"launches_per_second", l.launches_per_second},
          {"queue_depth_max", l.queue_depth_max},
          {"queue_depth_p99", l.queue_depth_p99},
          {"host_launch_gaps", histogramJson(l.host_launch_gaps)}};
}

json ncclJson(const analysis::NcclStats& n, bool kineto_trace) {
  json types = json::array();
  for (const analysis::NcclTypeStats& t : n.by_type) {
    types.push_back({{"op", t.op},
                     {"calls", t.calls},
                     {"bytes", analysis::ncclBytesKnown(t, kineto_trace) ? json(t.bytes) : json(nullptr)},
                     {"host_ns", t.host_ns},
                     {"kernels", t.kernels},
                     {"device_ns", t.device_ns}});
  }
  return {{"by_type", types},
          {"comm_ns", n.comm_ns},
          {"comm_share_of_busy", n.comm_share_of_busy},
          {"compute_comm_overlap", n.compute_comm_overlap}};
}

json stepsJson(const analysis::StepStats& s) {
  return {{"method", s.method},
          {"how", s.how},
          {"steps", s.steps},
          {"median_ns", s.median_ns},
          {"p10_ns", s.p10_ns},
          {"p90_ns", s.p90_ns},
          {"median_idle_fraction", s.median_idle_fraction}};
}

// HTA's numbers under HTA's names and units (microseconds), so a script written for HTA's tables
// reads them as they are.
json htaJson(const std::optional<analysis::HtaView>& view) {
  if (!view) return nullptr;
  const analysis::HtaView& h = *view;
  json streams = json::array();
  const auto ratio2 = [](int64_t part, int64_t total) -> json {
    if (total == 0) return nullptr;
    return std::round(100.0 * static_cast<double>(part) / static_cast<double>(total)) / 100.0;
  };
  for (const analysis::HtaStreamIdle& s : h.idle_breakdown) {
    const int64_t total = s.host_wait_us + s.kernel_wait_us + s.other_us;
    const auto add = [&](const char* category, int64_t us) {
      streams.push_back({{"stream", s.stream}, {"idle_category", category}, {"idle_time_us", us},
                         {"idle_time_ratio", ratio2(us, total)}});
    };
    if (s.has_host_wait) add("host_wait", s.host_wait_us);
    if (s.has_kernel_wait) add("kernel_wait", s.kernel_wait_us);
    add("other", s.other_us);
  }
  return {{"conventions", std::string("HTA ") + analysis::htaReleaseName(h.release)},
          {"profiler_steps", h.profiler_steps},
          {"cut", h.cut},
          {"gpu_events", h.gpu_events},
          {"gpu_events_dropped", h.gpu_events_dropped},
          {"temporal_breakdown",
           {{"kernel_time_us", h.kernel_time_us},
            {"idle_time_us", h.idle_time_us},
            {"compute_time_us", h.compute_time_us},
            {"non_compute_time_us", h.non_compute_time_us},
            {"idle_time_pctg", h.idle_time_pctg},
            {"compute_time_pctg", h.compute_time_pctg},
            {"non_compute_time_pctg", h.non_compute_time_pctg},
            {"hta_raises", h.hta_asserts_non_compute}}},
          {"idle_breakdown", streams},
          {"launch_stats",
           {{"launches", h.launches},
            {"short_kernels", h.short_kernels},
            {"runtime_outliers", h.runtime_outliers},
            {"launch_delay_outliers", h.launch_delay_outliers},
            // HTA's mean of no launches is NaN (None): a ROCm trace's hip* calls are none of its names.
            {"mean_launch_delay_us", h.launches > 0 ? json(h.mean_launch_delay_us) : json(nullptr)}}},
          {"comm_comp_overlap_pctg", h.comm_comp_overlap_pctg ? json(*h.comm_comp_overlap_pctg) : json(nullptr)}};
}

json processJson(const ProcessAnalysis& p, const analysis::RecordingOverview& o, const std::string& file) {
  json command_line = json::array();
  std::optional<int32_t> local_rank, world_size;
  if (o.hello) {
    for (const std::string& arg : o.hello->command_line()) command_line.push_back(arg);
    if (o.hello->has_local_rank()) local_rank = o.hello->local_rank();
    if (o.hello->has_world_size()) world_size = o.hello->world_size();
  }
  uint64_t window = 0, busy = 0, idle = 0, after_sync = 0, leading = 0;
  std::array<uint64_t, analysis::kIdleCauseCount> by_cause{};
  std::array<uint64_t, analysis::kHostPartCount> by_part{};
  bool first = true;
  json devices = json::array();
  for (const DeviceAnalysis& d : p.devices) {
    devices.push_back(deviceJson(d, p.source.kineto_trace));
    window += d.window_end_ns - d.window_start_ns;
    busy += d.busy_ns;
    idle += d.idle_ns;
    after_sync += d.after_sync_ns;
    for (std::size_t c = 0; c < by_cause.size(); ++c) by_cause[c] += d.idle_by_cause_ns[c];
    for (std::size_t c = 0; c < by_part.size(); ++c) by_part[c] += d.host_cpu_by_part_ns[c];
    leading = first ? d.leading_ns : std::min(leading, d.leading_ns);
    first = false;
  }
  json findings = json::array();
  for (const analysis::Finding& f : p.findings) findings.push_back(findingJson(f));
  json notes = json::array();
  for (const analysis::Finding& f : p.notes) notes.push_back(findingJson(f));
  json probes = json::array();
  for (const std::string& probe : p.probes) probes.push_back(probe);
  const auto optional_int = [](const std::optional<int32_t>& v) { return v ? json(*v) : json(nullptr); };
  const bool trace = p.source.kineto_trace;
  json not_in_trace = json::array();
  for (const std::string& key : p.source.not_in_trace) not_in_trace.push_back(key);
  json trace_info = trace ? json{{"schema_version", p.source.trace_schema_version ? json(p.source.trace_schema_version)
                                                                                  : json(nullptr)},
                                 {"sync_records", p.source.sync_records}}
                          : json(nullptr);
  json parts = nullptr;
  if (o.part_files.size() > 1 && o.health.parts.size() == o.part_files.size()) {
    parts = json::array();
    for (std::size_t k = 0; k < o.part_files.size(); ++k) {
      const StreamHealth::Part& part = o.health.parts[k];
      parts.push_back({{"file", o.part_files[k]},
                       {"batches", part.batches},
                       {"first_sequence", part.batches ? json(part.first_sequence) : json(nullptr)},
                       {"last_sequence", part.batches ? json(part.last_sequence) : json(nullptr)},
                       {"goodbye", part.goodbye},
                       {"duplicate_batches", part.duplicate_batches},
                       {"duplicate_events", part.duplicate_events},
                       {"missing_before", part.missing_before}});
    }
  }
  return {{"file", file},
          {"parts", parts},
          {"parts_note", parts.is_null() ? json(nullptr) : json(analysis::partsText(o, [](const std::string& f) { return f; }))},
          {"source", trace ? "kineto_trace" : "recorder"},
          {"not_in_trace", not_in_trace},
          {"trace", trace_info},
          {"pid", p.pid},
          {"host", p.host},
          {"rank", optional_int(p.rank)},
          {"local_rank", optional_int(local_rank)},
          {"world_size", optional_int(world_size)},
          {"command_line", command_line},
          {"ended", trace ? json(nullptr) : json(analysis::endingLabel(o))},
          {"exit_status", o.goodbye && o.goodbye->has_exit_status() ? json(o.goodbye->exit_status()) : json(nullptr)},
          {"recorded_ns", o.spanNs()},
          {"probes", probes},
          {"cupti_unavailable", p.cupti_unavailable},
          {"activity_api_spans", activityApiSpans(p, o)},
          {"cupti_version", p.cupti_version},
          {"device_timeline", p.device_timeline},
          {"truncated", p.truncated},
          {"late_events", p.late_events},
          {"drops",
           {{"events_dropped", p.events_dropped},
            {"cupti_records_dropped", p.cupti_records_dropped},
            {"cupti_records_incomplete", p.cupti_records_incomplete},
            {"transport_events_dropped", o.transport_events_dropped},
            {"batches_missing", o.health.batches_missing}}},
          {"python_stacks", pythonStacksJson(p)},
          {"python_samples",
           {{"sampler", p.python_sampler}, {"read", p.python_samples}, {"missed", p.python_sample_misses}}},
          {"events",
           {{"api_calls", o.api_calls},
            {"launches", o.launches},
            {"device_activities", o.activities},
            {"nccl_calls", o.nccl_calls},
            {"markers", o.markers}}},
          {"verdict", analysis::verdict(p)},
          {"window_ns", window},
          {"busy_ns", busy},
          {"idle_ns", idle},
          {"idle_fraction", ratio(static_cast<double>(idle), static_cast<double>(window))},
          {"leading_ns", trace ? json(nullptr) : json(leading)},
          {"idle_by_cause", causesJson(by_cause)},
          {"host_cpu_by_part", partsJson(by_part)},
          {"after_sync_ns", after_sync},
          {"findings", findings},
          {"notes", notes},
          {"bottleneck", p.bottleneck ? findingJson(*p.bottleneck) : json(nullptr)},
          {"devices", devices},
          {"sync_points", syncPointsJson(p)},
          {"launches", launchesJson(p.launches)},
          {"kernels", kernelsJson(p.kernels)},
          {"nccl", ncclJson(p.nccl, p.source.kineto_trace)},
          {"steps", stepsJson(p.steps)},
          {"hta", htaJson(p.hta)}};
}

// One job's ranks compared: {"processes", "rank_waits", "straggler_test", "findings"}.
json rankComparisonJson(const analysis::RankComparison& job) {
  json waits = json::array();
  for (const analysis::RankWait& w : job.rank_waits) {
    waits.push_back({{"rank", w.rank}, {"waited_for_ns", w.waited_for_ns}, {"collectives_last", w.collectives_last},
                     {"waited_ns", w.waited_ns}, {"collectives", w.collectives}, {"expected_last", w.expected_last},
                     {"lateness_collectives", w.lateness_collectives}, {"lateness_mean_ns", w.lateness_mean_ns},
                     {"lateness_se_ns", w.lateness_se_ns}, {"lateness_batches", w.lateness_batches},
                     {"lateness_median_ns", w.lateness_median_ns}, {"lateness_mad_ns", w.lateness_mad_ns}});
  }
  json straggler_test = nullptr;
  if (const auto& st = job.straggler_test) {
    straggler_test = {{"rank", st->rank},
                      {"collectives_last", st->collectives_last},
                      {"collectives", st->collectives},
                      {"expected_last", st->expected_last},
                      {"lateness_collectives", st->lateness_collectives},
                      {"lateness_batches", st->batches},
                      {"lateness_mean_ns", st->lateness_mean_ns},
                      {"lateness_se_ns", st->lateness_se_ns},
                      {"t", numberJson(st->t)},
                      {"p_value", st->p_value},
                      {"level", st->level},
                      {"lateness_median_ns", st->lateness_median_ns},
                      {"lateness_mad_ns", st->lateness_mad_ns},
                      {"others_window_fraction", st->others_window_fraction},
                      {"late", st->late},
                      {"enough_wait", st->enough_wait},
                      {"named", st->named}};
  }
  json findings = json::array();
  for (const analysis::Finding& f : job.findings) findings.push_back(findingJson(f));
  return {{"processes", job.processes}, {"rank_waits", waits}, {"straggler_test", straggler_test}, {"findings", findings}};
}

}  // namespace

json reportJson(const analysis::RunReport& content) {
  const analysis::AnalysisReport& report = content.analysis;
  const analysis::AnalysisOptions& o = report.options;
  const analysis::DiagnosisThresholds t;
  json inputs = json::array();
  for (const analysis::RecordingInput& input : content.inputs) {
    inputs.push_back({{"file", input.file},
                      {"status", input.status},
                      {"message", input.message},
                      {"process", input.process >= 0 ? json(input.process) : json(nullptr)}});
  }
  json processes = json::array();
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    processes.push_back(processJson(report.processes[i], content.overviews[i], content.files[i]));
  }
  json comparisons = json::array();
  for (const analysis::RankComparison& job : report.rank_comparisons) comparisons.push_back(rankComparisonJson(job));
  // With one job of several ranks, its comparison is also at the top level, where readers of one
  // job's report find it; with none or several, those keys are empty (each job's is in
  // rank_comparisons).
  const json only = comparisons.size() == 1 ? comparisons[0]
                                            : json{{"processes", json::array()}, {"rank_waits", json::array()},
                                                   {"straggler_test", nullptr}, {"findings", json::array()}};
  return {{"gapwatch_report_version", kReportJsonVersion},
          {"generator", std::string("gapwatch ") + kLibraryVersion},
          {"options",
           {{"launch_threshold_ns", o.launch_threshold_ns},
            {"min_gap_ns", o.min_gap_ns},
            {"top_n", o.top_n},
            {"reorder_window_ns", o.reorder_window_ns},
            {"hta_consecutive_kernel_delay_ns", o.hta_consecutive_kernel_delay_ns},
            {"hta_runtime_cutoff_ns", o.hta_runtime_cutoff_ns},
            {"hta_launch_delay_cutoff_ns", o.hta_launch_delay_cutoff_ns},
            {"input_pipeline_frames", o.input_pipeline_frames}}},
          {"thresholds",
           {{"min_window_share", t.min_window_share},
            {"stall_min_ns", t.stall_min_ns},
            {"stall_factor", t.stall_factor},
            {"launch_min_gaps", t.launch_min_gaps},
            {"leading_min_ns", t.leading_min_ns},
            {"leading_share", t.leading_share},
            {"nccl_min_comm_share", t.nccl_min_comm_share},
            {"nccl_max_overlap", t.nccl_max_overlap},
            {"straggler_min_window_share", t.straggler_min_window_share},
            {"straggler_test_level", t.straggler_test_level},
            {"gpu_bound_max_idle", t.gpu_bound_max_idle},
            {"profiler_event_ns", t.profiler_event_ns},
            {"profiler_cost_min_share", t.profiler_cost_min_share},
            {"sync_storm_min_syncs", t.sync_storm_min_syncs},
            {"sync_storm_min_per_second", t.sync_storm_min_per_second}}},
          {"inputs", inputs},
          {"processes", processes},
          {"jobs", report.jobs},
          {"jobs_why", report.jobs_why.empty() ? json(nullptr) : json(report.jobs_why)},
          {"rank_comparisons", comparisons},
          {"cross_rank_processes", only["processes"]},
          {"rank_waits", only["rank_waits"]},
          {"straggler_test", only["straggler_test"]},
          {"findings", only["findings"]}};
}

void writeReportJson(const analysis::RunReport& content, std::ostream& out) {
  out << jsonText(reportJson(content), 2) << '\n';
}

}  // namespace gapwatch::cli
