// export/trace_sink.h: the neutral trace that every export format writes.
//
// export/ turns what the analysis engine sees (events in time order, and the gaps as the device
// idle stage attributes them) into trace files other tools open: Perfetto's protobuf trace, the
// Chrome trace JSON, a PyTorch profiler (Kineto) trace. The mapping from gapwatch's events to
// tracks and slices is made once (trace_export_stage.h) and handed to a TraceSink; each format is
// one sink. So the formats cannot disagree on what a trace shows, only on how it is spelled.
//
// The order a sink is promised: per process, tracks before their first slice, and slices in
// nondecreasing start order per track (the engine releases events in start order; a step's slice
// comes when the next step begins, still in order on its own track). Slices of one track may
// overlap or nest: a sink that needs proper nesting arranges it (perfetto_trace_writer.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <gapwatch/v1/stream.pb.h>

namespace gapwatch::exporter {

// What a track holds; formats that have no tracks (Chrome JSON) map it to a pid/tid.
enum class TrackKind : uint8_t {
  kHostThread,   // one host thread: its CUDA calls, NCCL calls, ops and annotations
  kDeviceStream, // one device stream: its kernels, copies, memsets and sync records
  kIdleGaps,     // one device: its idle gaps, each named by its cause
  kSyncPoints,   // one process: the host calls that waited for the device
  kSteps,        // one process: its training steps (named ProfilerStep#N, as PyTorch names them)
};

struct TrackInfo {
  uint64_t uuid = 0;          // unique in the whole export
  uint64_t process_uuid = 0;  // the process it belongs to
  TrackKind kind = TrackKind::kHostThread;
  uint32_t pid = 0;
  uint64_t id = 0;            // thread id, stream id, or device for gaps
  uint32_t device = 0;        // device streams and gaps
  std::string name;
};

// One argument of a slice (Perfetto debug annotation, Chrome "args").
struct SliceArg {
  std::string name;
  bool is_text = false;
  uint64_t number = 0;
  std::string text;
};

// What a slice is, for formats that tell kinds apart by category (Kineto's "kernel", ...).
enum class SliceCategory : uint8_t {
  kCudaRuntime, kKernel, kMemcpy, kMemset, kCudaSync, kNccl, kHostOp, kHostAnnotation, kInputPipeline, kIdleGap,
  kSyncPoint, kStep,
};
const char* sliceCategoryName(SliceCategory category);

struct Slice {
  uint64_t track = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string name;
  SliceCategory category = SliceCategory::kCudaRuntime;
  uint64_t flow_out = 0;  // starts a flow (a launch to its kernel); 0 = none
  uint64_t flow_in = 0;   // ends that flow
  uint64_t correlation_id = 0;
  uint64_t stream = 0;
  uint32_t device = 0;
  std::vector<SliceArg> args;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // A process (one rank, one input file; rank -1 when not known); `name` says which.
  virtual void process(uint64_t uuid, uint32_t pid, int32_t rank, const std::string& name) = 0;
  // The clock the process's times are on (its Hello's), before its first track; a format that can
  // name it does (Perfetto), the others need not.
  virtual void clock(v1::ClockDomain /*domain*/) {}
  virtual void track(const TrackInfo& track) = 0;
  virtual void slice(const Slice& slice) = 0;
  // No more slices: close what is open and end the file. False when writing failed.
  virtual bool finish() = 0;
};

}  // namespace gapwatch::exporter
