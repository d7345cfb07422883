// export/json_trace_writer.h: a TraceSink that writes the Chrome trace JSON ({"traceEvents": [...]},
// which chrome://tracing and Perfetto open) in one of two flavours:
//   - chrome: everything the Perfetto export holds, in one file: each process's threads and, under
//     the same pid, a made-up thread per device stream, per device's idle gaps, sync points and
//     steps (named by thread_name metadata); launch-to-kernel flows as "s"/"f" events.
//   - kineto: what PyTorch's profiler writes, for HTA and gapwatch's Kineto reader: device work
//     under pid = device and tid = stream, host calls under the process's pid and thread, steps
//     as ProfilerStep#N annotations, distributedInfo with the rank; no gaps, sync points or flows
//     (not in a profiler's trace, and HTA would count a slice on a device pid as device work).
// Both write the fields the Kineto reader reads (cat, args.correlation, args.stream, args.device,
// names as CUPTI gives them), so a chrome export read back by `gapwatch report` gives the numbers
// the original gave. Slices are complete ("X") events, written as they come: nothing is held.
// Times are microseconds with three decimals, so nanoseconds survive exactly.
#pragma once

#include "export/trace_sink.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>

namespace gapwatch::exporter {

enum class JsonFlavour { kChrome, kKineto };

class JsonTraceWriter final : public TraceSink {
 public:
  JsonTraceWriter(std::ostream& out, JsonFlavour flavour);

  void process(uint64_t uuid, uint32_t pid, int32_t rank, const std::string& name) override;
  void track(const TrackInfo& track) override;
  void slice(const Slice& slice) override;
  bool finish() override;

 private:
  struct Place {
    uint64_t pid = 0;
    uint64_t tid = 0;
    TrackKind kind = TrackKind::kHostThread;
  };
  void beginEvent();
  void metadata(const char* what, uint64_t pid, uint64_t tid, bool has_tid, const std::string& name);

  std::ostream& out_;
  JsonFlavour flavour_;
  bool first_event_ = true;
  int32_t rank_ = -1;
  int32_t processes_ = 0;
  std::unordered_map<uint64_t, Place> places_;  // track uuid -> where its events go
  std::unordered_map<uint64_t, bool> device_named_;  // kineto: device pids already named
  uint64_t next_made_up_tid_ = 1ull << 31;  // above any Linux thread id
  std::string line_;  // scratch
};

}  // namespace gapwatch::exporter
