// export/trace_export_stage.cpp: see trace_export_stage.h.
#include "export/trace_export_stage.h"

#include "analysis/correlation_index.h"
#include "analysis/device_idle.h"
#include "analysis/step_detector.h"
#include "analysis/sync_points.h"
#include "reader/enum_labels.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace gapwatch::exporter {

namespace {

// A launch whose work has not started this long after it is taken as dropped: its flow is
// forgotten (no flow end is ever written without its start, and memory stays bounded by the
// launches of this much recording time). Work queued deeper than this loses its arrow, nothing else.
constexpr uint64_t kFlowExpiryNs = 5'000'000'000ull;

// The CUDA runtime's name for a call the recording did not name: what PyTorch's profiler writes,
// so that a JSON export read back as a Kineto trace classifies the call as the recording did.
std::string apiNameOf(v1::ApiKind kind) {
  switch (kind) {
    case v1::API_KIND_LAUNCH: return "cudaLaunchKernel";
    case v1::API_KIND_GRAPH_LAUNCH: return "cudaGraphLaunch";
    case v1::API_KIND_MEMCPY: return "cudaMemcpy";
    case v1::API_KIND_MEMCPY_ASYNC: return "cudaMemcpyAsync";
    case v1::API_KIND_MEMSET: return "cudaMemset";
    case v1::API_KIND_MEMSET_ASYNC: return "cudaMemsetAsync";
    case v1::API_KIND_DEVICE_SYNC: return "cudaDeviceSynchronize";
    case v1::API_KIND_STREAM_SYNC: return "cudaStreamSynchronize";
    case v1::API_KIND_EVENT_SYNC: return "cudaEventSynchronize";
    case v1::API_KIND_EVENT_RECORD: return "cudaEventRecord";
    case v1::API_KIND_STREAM_WAIT_EVENT: return "cudaStreamWaitEvent";
    case v1::API_KIND_QUERY: return "cudaStreamQuery";
    case v1::API_KIND_MALLOC: return "cudaMalloc";
    case v1::API_KIND_FREE: return "cudaFree";
    case v1::API_KIND_HOST_ALLOC: return "cudaMallocHost";
    case v1::API_KIND_HOST_FREE: return "cudaFreeHost";
    case v1::API_KIND_MODULE_LOAD: return "cuModuleLoad";
    default: return enumLabel(kind);
  }
}

const char* copyWord(v1::CopyKind kind) {
  switch (kind) {
    case v1::COPY_KIND_H2D: return "HtoD";
    case v1::COPY_KIND_D2H: return "DtoH";
    case v1::COPY_KIND_D2D: return "DtoD";
    case v1::COPY_KIND_H2H: return "HtoH";
    case v1::COPY_KIND_P2P: return "PtoP";
    default: return "";
  }
}

const char* memoryWord(v1::MemoryKind kind) {
  switch (kind) {
    case v1::MEMORY_KIND_PAGEABLE: return "Pageable";
    case v1::MEMORY_KIND_PINNED: return "Pinned";
    case v1::MEMORY_KIND_DEVICE: return "Device";
    case v1::MEMORY_KIND_ARRAY: return "Array";
    case v1::MEMORY_KIND_MANAGED: return "Managed";
    case v1::MEMORY_KIND_DEVICE_STATIC: return "DeviceStatic";
    case v1::MEMORY_KIND_MANAGED_STATIC: return "ManagedStatic";
    default: return "";
  }
}

// Copies, memsets and sync records are named as CUPTI names them in a PyTorch profiler trace
// ("Memcpy HtoD (Pageable -> Device)"): the Kineto reader reads direction and memory from them.
std::string copyName(const DeviceActivityEvent& a) {
  return std::string("Memcpy ") + copyWord(a.copy_kind) + " (" + memoryWord(a.src_memory) + " -> " +
         memoryWord(a.dst_memory) + ")";
}

const char* syncRecordName(v1::SyncKind kind) {
  switch (kind) {
    case v1::SYNC_KIND_STREAM_SYNCHRONIZE: return "Stream Sync";
    case v1::SYNC_KIND_CONTEXT_SYNCHRONIZE: return "Context Sync";
    case v1::SYNC_KIND_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case v1::SYNC_KIND_EVENT_SYNCHRONIZE: return "Event Sync";
    default: return "Sync";
  }
}

SliceArg number(std::string name, uint64_t value) { return SliceArg{std::move(name), false, value, {}}; }
SliceArg text(std::string name, std::string value) { return SliceArg{std::move(name), true, 0, std::move(value)}; }

}  // namespace

const char* sliceCategoryName(SliceCategory category) {
  switch (category) {
    case SliceCategory::kCudaRuntime: return "cuda_runtime";
    case SliceCategory::kKernel: return "kernel";
    case SliceCategory::kMemcpy: return "gpu_memcpy";
    case SliceCategory::kMemset: return "gpu_memset";
    case SliceCategory::kNccl: return "user_annotation";
    case SliceCategory::kHostOp: return "cpu_op";
    case SliceCategory::kHostAnnotation: return "user_annotation";
    case SliceCategory::kInputPipeline: return "input_pipeline";
    case SliceCategory::kCudaSync: return "cuda_sync";
    case SliceCategory::kIdleGap: return "idle_gap";
    case SliceCategory::kSyncPoint: return "sync_point";
    case SliceCategory::kStep: return "user_annotation";
  }
  return "other";
}

TraceExportStage::TraceExportStage(TraceSink& sink, uint32_t process_index, std::string fallback_name,
                                   std::set<uint32_t>* used_pids)
    : sink_(sink), process_index_(process_index), fallback_name_(std::move(fallback_name)), used_pids_(used_pids) {
  // Uuids: the process index in the high bits, a per-process counter below (ids such as stream
  // handles are 64-bit, so they are numbered, not packed).
  process_uuid_ = (uint64_t(process_index_) + 1) << 32;
}

TraceExportStage& TraceExportStage::attach(analysis::AnalysisPipeline& pipeline, TraceSink& sink,
                                           uint32_t process_index, std::string fallback_name,
                                           std::set<uint32_t>* used_pids) {
  auto& stage = pipeline.emplaceStage<TraceExportStage>(sink, process_index, std::move(fallback_name), used_pids);
  if (auto* idle = pipeline.findStage<analysis::DeviceIdleStage>()) {
    idle->setGapListener([&stage](uint32_t device, const analysis::IdleGap& gap) { stage.onGap(device, gap); });
  }
  if (auto* steps = pipeline.findStage<analysis::StepDetectorStage>()) {
    steps->setStepListener(
        [&stage](bool detected, uint64_t start_ns, uint64_t end_ns) { stage.onStep(detected, start_ns, end_ns); });
  }
  return stage;
}

void TraceExportStage::begin(const analysis::RecordingFacts& facts) {
  facts_ = facts;
  ensureProcess();
}

void TraceExportStage::ensureProcess() {
  if (process_written_) return;
  process_written_ = true;
  // Perfetto and Chrome key threads by (pid, tid): two ranks with one pid (two hosts) must not
  // merge, so a pid taken already, or none, becomes one above any Linux pid (2^22).
  pid_ = facts_.pid;
  if (pid_ == 0 || (used_pids_ && used_pids_->count(pid_) != 0)) pid_ = (1u << 22) + process_index_;
  if (used_pids_) used_pids_->insert(pid_);
  std::string name = facts_.rank >= 0 ? "rank " + std::to_string(facts_.rank) : fallback_name_;
  if (!facts_.host.empty()) name += " (" + facts_.host + ")";
  sink_.clock(facts_.clock);
  sink_.process(process_uuid_, pid_, facts_.rank, name);
}

uint64_t TraceExportStage::trackFor(TrackKind kind, uint64_t id, uint32_t device) {
  ensureProcess();
  const auto key = std::make_pair(int(kind), kind == TrackKind::kDeviceStream ? id * 4096 + device : id);
  auto found = tracks_.find(key);
  if (found != tracks_.end()) return found->second;
  TrackInfo info;
  info.uuid = process_uuid_ | next_track_++;
  info.process_uuid = process_uuid_;
  info.kind = kind;
  info.pid = pid_;
  info.id = id;
  info.device = device;
  switch (kind) {
    case TrackKind::kHostThread: info.name = threadName(uint32_t(id)); break;
    case TrackKind::kDeviceStream:
      info.name = "GPU " + std::to_string(device) + " stream " + std::to_string(id);
      break;
    case TrackKind::kIdleGaps: info.name = "GPU " + std::to_string(device) + " idle gaps"; break;
    case TrackKind::kSyncPoints: info.name = "sync points"; break;
    case TrackKind::kSteps: info.name = id == 0 ? "steps" : "steps (detected)"; break;
  }
  tracks_.emplace(key, info.uuid);
  sink_.track(info);
  return info.uuid;
}

std::string TraceExportStage::threadName(uint32_t thread_id) const {
  const std::string* name = strings_ ? strings_->find(v1::STRING_KIND_THREAD_NAME, thread_id) : nullptr;
  std::string text = "thread " + std::to_string(thread_id);
  if (name && !name->empty()) text = *name + " (" + std::to_string(thread_id) + ")";
  return text;
}

uint64_t TraceExportStage::flowId(uint64_t correlation_id) const {
  return (uint64_t(process_index_) + 1) << 48 | (correlation_id & ((1ull << 48) - 1));
}

void TraceExportStage::expireFlows(uint64_t now_ns) {
  // Launches in launch order: those whose work came are gone from the set and leave as soon as
  // they reach the front; one whose work never came leaves after kFlowExpiryNs, so a dropped
  // record holds the ones behind it for that long at most.
  while (!pending_by_time_.empty()) {
    const auto [entered_ns, correlation_id] = pending_by_time_.front();
    if (pending_flows_.count(correlation_id) != 0) {
      if (entered_ns + kFlowExpiryNs >= now_ns) break;
      pending_flows_.erase(correlation_id);
    }
    pending_by_time_.pop_front();
  }
}

// A slice on a host thread's track; an end before the start (a clock step) makes it empty. The
// stage's time moves on to its start.
Slice TraceExportStage::hostSlice(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns) {
  last_time_ns_ = std::max(last_time_ns_, start_ns);
  Slice slice;
  slice.track = trackFor(TrackKind::kHostThread, thread_id, 0);
  slice.start_ns = start_ns;
  slice.end_ns = std::max(end_ns, start_ns);
  return slice;
}

void TraceExportStage::onApiCall(const ApiCallEvent& call) {
  Slice slice = hostSlice(call.thread_id, call.start_ns, call.end_ns);
  slice.name = strings_ && call.api_name_id ? strings_->display(v1::STRING_KIND_API_NAME, call.api_name_id)
                                            : apiNameOf(call.kind);
  slice.category = SliceCategory::kCudaRuntime;
  slice.correlation_id = call.correlation_id;
  slice.stream = call.stream;
  slice.device = call.device;
  slice.args.push_back(number("correlation", call.correlation_id));
  if (analysis::CorrelationIndex::queuesDeviceWork(call.kind) && call.correlation_id != 0 &&
      pending_flows_.insert(call.correlation_id).second) {
    slice.flow_out = flowId(call.correlation_id);
    pending_by_time_.emplace_back(call.start_ns, call.correlation_id);
  }
  expireFlows(call.start_ns);
  sink_.slice(slice);

  if (const auto kind = classifySyncPoint(call)) {
    Slice sync;
    sync.track = trackFor(TrackKind::kSyncPoints, 0, 0);
    sync.start_ns = slice.start_ns;
    sync.end_ns = slice.end_ns;
    sync.name = std::string(syncPointName(*kind));
    sync.category = SliceCategory::kSyncPoint;
    sync.args.push_back(text("call", slice.name));
    sync.args.push_back(number("thread", call.thread_id));
    sink_.slice(sync);
  }
}

void TraceExportStage::onActivity(const DeviceActivityEvent& activity) {
  last_time_ns_ = std::max(last_time_ns_, activity.start_ns);
  SliceCategory category;
  switch (activity.kind) {
    case v1::ACTIVITY_KIND_KERNEL: category = SliceCategory::kKernel; break;
    case v1::ACTIVITY_KIND_MEMCPY: category = SliceCategory::kMemcpy; break;
    case v1::ACTIVITY_KIND_MEMSET: category = SliceCategory::kMemset; break;
    case v1::ACTIVITY_KIND_SYNC: category = SliceCategory::kCudaSync; break;
    default: return;
  }
  Slice slice;
  slice.track = trackFor(TrackKind::kDeviceStream, activity.stream, activity.device);
  slice.start_ns = activity.start_ns;
  slice.end_ns = std::max(activity.end_ns, activity.start_ns);
  slice.category = category;
  if (category == SliceCategory::kKernel) {
    slice.name = strings_ ? strings_->display(v1::STRING_KIND_KERNEL_NAME, activity.name_id) : "";
    if (slice.name.empty()) slice.name = "kernel";
  } else if (category == SliceCategory::kCudaSync) {
    slice.name = syncRecordName(activity.sync_kind);
  } else {
    slice.name = category == SliceCategory::kMemcpy ? copyName(activity)
                                                     : std::string("Memset (") + memoryWord(activity.dst_memory) + ")";
    slice.args.push_back(number("bytes", activity.bytes));
  }
  slice.correlation_id = activity.correlation_id;
  slice.stream = activity.stream;
  slice.device = activity.device;
  slice.args.push_back(number("correlation", activity.correlation_id));
  if (pending_flows_.erase(activity.correlation_id) > 0) slice.flow_in = flowId(activity.correlation_id);
  expireFlows(activity.start_ns);
  sink_.slice(slice);
}

void TraceExportStage::onNcclCall(const NcclCallEvent& call) {
  Slice slice = hostSlice(call.thread_id, call.start_ns, call.end_ns);
  // c10d's annotation of a collective ("nccl:all_reduce"): how a PyTorch profiler trace shows an
  // NCCL call, so the Kineto reader takes it back as one.
  std::string op = enumLabel(call.op);
  if (op.rfind("NCCL_OP_", 0) == 0) op = op.substr(8);
  for (char& c : op) c = char(std::tolower(static_cast<unsigned char>(c)));
  slice.name = "nccl:" + op;
  slice.category = SliceCategory::kNccl;
  slice.stream = call.stream;
  slice.args.push_back(number("bytes", call.bytes));
  slice.args.push_back(number("peer", uint64_t(int64_t(call.peer))));
  sink_.slice(slice);
}

void TraceExportStage::onHostRange(const HostRangeEvent& range) {
  Slice slice = hostSlice(range.thread_id, range.start_ns, range.end_ns);
  slice.name = strings_ ? strings_->display(v1::STRING_KIND_HOST_RANGE_NAME, range.name_id) : "";
  if (slice.name.empty()) slice.name = enumLabel(range.kind);
  slice.category = range.kind == v1::HOST_RANGE_KIND_INPUT_PIPELINE ? SliceCategory::kInputPipeline
                   : range.kind == v1::HOST_RANGE_KIND_FRAMEWORK_OP ? SliceCategory::kHostOp
                                                                     : SliceCategory::kHostAnnotation;
  sink_.slice(slice);
}

void TraceExportStage::onMarker(const MarkerEvent& marker) { last_time_ns_ = std::max(last_time_ns_, marker.time_ns); }

void TraceExportStage::onStep(bool detected, uint64_t start_ns, uint64_t end_ns) {
  // A stretch the step detector learnt again may repeat steps already drawn: a track's slices must
  // not go back in time, so those are left out.
  StepTrack& steps = steps_[detected ? 1 : 0];
  if (start_ns < steps.last_end_ns) return;
  steps.last_end_ns = end_ns;
  Slice slice;
  slice.track = trackFor(TrackKind::kSteps, detected ? 1 : 0, 0);
  slice.start_ns = start_ns;
  slice.end_ns = end_ns;
  slice.name = "ProfilerStep#" + std::to_string(steps.next_number++);
  slice.category = SliceCategory::kStep;
  sink_.slice(slice);
}

void TraceExportStage::onGap(uint32_t device, const analysis::IdleGap& gap) {
  // Named by the cause with the most of its time: Perfetto colours a slice by its name, so each
  // cause has one colour.
  std::size_t top = 0;
  for (std::size_t c = 1; c < analysis::kIdleCauseCount; ++c) {
    if (gap.by_cause_ns[c] > gap.by_cause_ns[top]) top = c;
  }
  Slice slice;
  slice.track = trackFor(TrackKind::kIdleGaps, device, device);
  slice.start_ns = gap.start_ns;
  slice.end_ns = gap.end_ns;
  slice.name = analysis::idleCauseName(static_cast<analysis::IdleCause>(top));
  slice.category = SliceCategory::kIdleGap;
  slice.device = device;
  for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
    if (gap.by_cause_ns[c] > 0) {
      slice.args.push_back(number(std::string(analysis::idleCauseName(static_cast<analysis::IdleCause>(c))) + "_ns",
                                  gap.by_cause_ns[c]));
    }
  }
  if (gap.after_sync) slice.args.push_back(number("after_sync", 1));
  sink_.slice(slice);
}

void TraceExportStage::finish() { ensureProcess(); }

}  // namespace gapwatch::exporter
