// analysis/analysis_pipeline.cpp: see analysis_pipeline.h.
#include "analysis/analysis_pipeline.h"

#include "analysis/nccl_stats.h"
#include "analysis/hta_view.h"
#include "analysis/step_detector.h"

#include "analysis/device_idle.h"
#include "analysis/kernel_stats.h"
#include "analysis/launch_stats.h"
#include "analysis/sync_points.h"
#include "analysis/sync_stats.h"
#include "reader/enum_labels.h"

#include <algorithm>

namespace gapwatch::analysis {
namespace {

bool hasProbe(const v1::Hello& hello, v1::Probe probe) {
  return std::find(hello.probes().begin(), hello.probes().end(), probe) != hello.probes().end();
}

// An async copy blocks the host when a host side is pageable (the runtime stages it) or both
// sides are host memory.
bool copyBlocksHost(const DeviceActivityEvent& copy) {
  return copy.src_memory == v1::MEMORY_KIND_PAGEABLE || copy.dst_memory == v1::MEMORY_KIND_PAGEABLE ||
         copy.copy_kind == v1::COPY_KIND_H2H;
}

}  // namespace

std::vector<std::string> notInTrace(const ProcessAnalysis& p) {
  // Call sites come from python_function events, which only traces written with with_stack=True
  // have: they are in the trace when some sync point has one.
  bool call_sites = false;
  for (const SyncTypeStats& sync : p.sync_points) {
    for (const CallSite& site : sync.top_call_sites) call_sites = call_sites || site.name != kCallSiteNotRecorded;
  }
  std::vector<std::string> keys = {kNotInTraceProcessStart, kNotInTraceProcessEnd, kNotInTraceDrops};
  if (!call_sites) keys.push_back(kNotInTraceCallSites);
  keys.push_back(kNotInTraceBlockedFlags);
  if (p.source.sync_records == 0) keys.push_back(kNotInTraceSyncRecords);
  keys.push_back(kNotInTraceNcclHostCalls);
  keys.push_back(kNotInTraceHeartbeats);
  return keys;
}

AnalysisPipeline::AnalysisPipeline(const AnalysisOptions& options)
    : options_(options), fanout_(*this), window_(options.reorder_window_ns, fanout_) {}

AnalysisPipeline::~AnalysisPipeline() = default;

AnalysisStage& AnalysisPipeline::addStage(std::unique_ptr<AnalysisStage> stage) {
  stages_.push_back(std::move(stage));
  return *stages_.back();
}

void AnalysisPipeline::beginStages() {
  if (begun_) return;
  begun_ = true;
  for (auto& stage : stages_) stage->begin(facts_);
}

void AnalysisPipeline::onHello(const v1::Hello& hello, uint64_t /*offset*/) {
  if (hello_) return;  // the first Hello describes the stream
  hello_ = hello;
  // Without the activity probe (symbol hooks only) there is no device timeline. A Hello that
  // lists no probes at all (an old or partial recorder) is given the benefit of the doubt.
  facts_.device_timeline = hello.probes_size() == 0 || hasProbe(hello, v1::PROBE_CUPTI_ACTIVITY);
  facts_.kineto_trace = hello.source() == v1::STREAM_SOURCE_KINETO_TRACE;
  facts_.python_sampler = hasProbe(hello, v1::PROBE_PYTHON_SAMPLER);
  facts_.pid = hello.pid();
  facts_.rank = hello.has_rank() ? hello.rank() : -1;
  facts_.host = hello.host();
  facts_.clock = hello.clock();
  // A trace begins with the profiler's window, not with the process: its first event is no start.
  facts_.process_start_ns = facts_.kineto_trace              ? 0
                            : hello.process_start_ns() != 0 ? hello.process_start_ns()
                                                             : hello.start_time_ns();
  beginStages();
}

void AnalysisPipeline::onBatch(const DecodedBatch& batch, const StringTable& strings) {
  beginStages();
  if (!strings_set_) {
    // The decoder's table lives as long as the read and grows in place: hand it over once.
    strings_set_ = true;
    for (auto& stage : stages_) stage->setStrings(&strings);
  }
  for (const DropCount& drop : batch.drops) drops_.update(drop);
  for (const ActivityApiSpan& span : batch.activity_api_spans) activity_api_spans_[span.start_ns] = span;
  for (const ApiCallEvent& call : batch.api_calls) {
    if (call.python_stack_id != 0) ++python_stacks_;
    window_.push(call);
  }
  for (const NcclCallEvent& call : batch.nccl_calls) window_.push(call);
  for (const MarkerEvent& marker : batch.markers) window_.push(marker);
  for (const HostRangeEvent& range : batch.host_ranges) window_.push(range);
  python_samples_ += batch.python_samples.size();
  for (const PythonSampleEvent& sample : batch.python_samples) window_.push(sample);
  for (const DeviceActivityEvent& activity : batch.activities) {
    if (activity.kind == v1::ACTIVITY_KIND_SYNC) ++sync_records_;
    const bool copy = activity.kind == v1::ACTIVITY_KIND_MEMCPY && activity.correlation_id != 0;
    if (copy) {
      copy_blocks_[activity.correlation_id] = {copyBlocksHost(activity), activity.copy_kind, activity.bytes,
                                               activity.end_ns};
    }
    if (!window_.push(activity) && copy) copy_blocks_.erase(activity.correlation_id);
  }
}

void AnalysisPipeline::onGoodbye(const v1::Goodbye& goodbye, uint64_t /*offset*/) {
  goodbye_ = goodbye;
  for (const v1::DropCounter& d : goodbye.drops()) drops_.update({d.source(), d.id(), d.dropped()});
}

void AnalysisPipeline::Fanout::onApiCall(const ApiCallEvent& call) {
  const bool copy = call.kind == v1::API_KIND_MEMCPY_ASYNC || call.kind == v1::API_KIND_MEMCPY;
  const bool join_blocked = copy && !call.blocked;
  const bool join_size = copy && (call.copy_kind == v1::COPY_KIND_UNSPECIFIED || call.bytes == 0);
  if ((join_blocked || join_size) && call.correlation_id != 0) {
    auto it = pipeline_.copy_blocks_.find(call.correlation_id);
    // A synchronous copy (cudaMemcpy, hipMemcpy, hipMemcpyWithStream: PyTorch's .item() on ROCm)
    // to the host returns only when the copy is done, whatever the host memory
    // (synchronousCopyBlocks); an async one blocks where copyBlocksHost() says. A synchronous copy
    // whose call returned only after its transfer ended blocked, whatever its direction and size:
    // the trace shows it (a 60-byte host-to-device hipMemcpyWithStream held 493 ms behind a
    // stream wait, which the size alone would call a copy that does not block).
    const bool blocks = it != pipeline_.copy_blocks_.end() &&
                        (it->second.blocks ||
                         (call.kind == v1::API_KIND_MEMCPY &&
                          (synchronousCopyBlocks(it->second.copy_kind, call.bytes != 0 ? call.bytes : it->second.bytes) ||
                           call.end_ns >= it->second.end_ns)));
    if (it != pipeline_.copy_blocks_.end() && ((join_blocked && blocks) || join_size)) {
      ApiCallEvent joined = call;
      if (join_blocked && blocks) joined.blocked = true;
      if (joined.copy_kind == v1::COPY_KIND_UNSPECIFIED) joined.copy_kind = it->second.copy_kind;
      if (joined.bytes == 0) joined.bytes = it->second.bytes;
      for (auto& stage : pipeline_.stages_) stage->onApiCall(joined);
      return;
    }
  }
  for (auto& stage : pipeline_.stages_) stage->onApiCall(call);
}

void AnalysisPipeline::Fanout::onActivity(const DeviceActivityEvent& activity) {
  if (activity.kind == v1::ACTIVITY_KIND_MEMCPY) pipeline_.copy_blocks_.erase(activity.correlation_id);
  for (auto& stage : pipeline_.stages_) stage->onActivity(activity);
}

void AnalysisPipeline::Fanout::onNcclCall(const NcclCallEvent& call) {
  for (auto& stage : pipeline_.stages_) stage->onNcclCall(call);
}

void AnalysisPipeline::Fanout::onMarker(const MarkerEvent& marker) {
  for (auto& stage : pipeline_.stages_) stage->onMarker(marker);
}

void AnalysisPipeline::Fanout::onHostRange(const HostRangeEvent& range) {
  for (auto& stage : pipeline_.stages_) stage->onHostRange(range);
}

void AnalysisPipeline::Fanout::onPythonSample(const PythonSampleEvent& sample) {
  for (auto& stage : pipeline_.stages_) stage->onPythonSample(sample);
}

ProcessAnalysis AnalysisPipeline::finish(const ReadResult& read, const StreamHealth& health) {
  beginStages();
  window_.flush();
  for (auto& stage : stages_) stage->finish();

  ProcessAnalysis result;
  writeProcessFacts(result);
  // Cut short: inside a frame (the file), or without the Goodbye every finished recording ends with.
  result.truncated = read.summary.truncated || !health.has_goodbye;
  result.late_events = window_.lateEvents();
  result.window_events = window_.events();
  for (auto& stage : stages_) stage->contribute(result);
  if (result.source.kineto_trace) result.source.not_in_trace = notInTrace(result);
  return result;
}

ProcessAnalysis AnalysisPipeline::snapshot() const {
  ProcessAnalysis result;
  writeProcessFacts(result);
  result.late_events = window_.lateEvents();
  result.window_events = window_.events();
  for (const auto& stage : stages_) stage->snapshot(result);
  return result;
}

void AnalysisPipeline::writeProcessFacts(ProcessAnalysis& result) const {
  if (hello_) {
    result.pid = hello_->pid();
    result.host = hello_->host();
    if (hello_->has_rank()) result.rank = hello_->rank();
    for (int probe : hello_->probes()) result.probes.push_back(enumLabel(static_cast<v1::Probe>(probe)));
    result.cupti_unavailable = hello_->cupti_unavailable();
    result.cupti_version = hello_->cupti_version();
  }
  result.device_timeline = facts_.device_timeline;
  result.source.kineto_trace = facts_.kineto_trace;
  result.source.sync_records = sync_records_;
  if (hello_ && facts_.kineto_trace) {
    result.source.trace_schema_version = hello_->trace_schema_version();
    result.source.trace_python_events = hello_->trace_python_events();
    result.source.trace_cpu_ops = hello_->trace_cpu_ops();
    result.source.trace_host_span_ns = hello_->trace_host_span_ns();
  }
  result.events_dropped = drops_.total(v1::DROP_SOURCE_THREAD_RING);
  result.cupti_records_dropped = drops_.total(v1::DROP_SOURCE_CUPTI);
  result.cupti_records_incomplete = drops_.total(v1::DROP_SOURCE_CUPTI_INCOMPLETE);
  result.python_stacks = python_stacks_;
  result.python_sampler = facts_.python_sampler;
  result.python_samples = python_samples_;
  result.python_sample_misses = drops_.total(v1::DROP_SOURCE_PYTHON_SAMPLE);
  for (const auto& [key, dropped] : drops_.all()) {
    if (key.first != v1::DROP_SOURCE_PYTHON_STACK || dropped == 0) continue;
    result.python_stack_misses += dropped;
    result.python_stack_misses_by_reason.emplace_back(pythonStackMissReason(key.second), dropped);
  }
  for (const auto& [start, span] : activity_api_spans_) result.activity_api_spans.push_back(span);
  if (goodbye_) {
    // Goodbye's totals are final; take the larger in case a counter's last update was lost.
    result.events_dropped = std::max(result.events_dropped, goodbye_->events_dropped());
    result.cupti_records_dropped = std::max(result.cupti_records_dropped, goodbye_->cupti_records_dropped());
  }
}

void addStandardStages(AnalysisPipeline& pipeline) {
  const AnalysisOptions& options = pipeline.options();
  auto& device_idle = pipeline.emplaceStage<DeviceIdleStage>(options);
  pipeline.emplaceStage<SyncStatsStage>(options, &device_idle);
  pipeline.emplaceStage<LaunchStatsStage>(options);
  pipeline.emplaceStage<KernelStatsStage>(options);
  pipeline.emplaceStage<NcclStatsStage>(options);
  pipeline.emplaceStage<StepDetectorStage>(options);
  if (options.hta_view) pipeline.emplaceStage<HtaViewStage>(options);
}

ProcessAnalysis analyzeFile(const std::string& path, AnalysisPipeline& pipeline, ReadResult* read) {
  StreamDecoder decoder(pipeline);
  ReadResult result = readRecordingFile(path, decoder);
  ProcessAnalysis analysis = pipeline.finish(result, decoder.health());
  if (read) *read = std::move(result);
  return analysis;
}

ProcessAnalysis analyzeFile(const std::string& path, const AnalysisOptions& options, ReadResult* read) {
  AnalysisPipeline pipeline(options);
  addStandardStages(pipeline);
  return analyzeFile(path, pipeline, read);
}

}  // namespace gapwatch::analysis
