// reader/kineto_host_ranges.h: what the host thread was doing, from a PyTorch profiler trace's CPU
// side: the evidence that splits host time between kernels (docs/analysis.md, "Host time").
//
// A trace records every op the profiler saw on every thread (`cpu_op`), the ranges users and
// PyTorch itself open (`user_annotation`: "## forward ##", "Optimizer.step#SGD.step", the
// DataLoader's "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__") and, with
// `with_stack=True`, every Python frame (`python_function`). Each becomes a HostRangeEvent of one
// kind (events.proto HostRangeKind):
//   - INPUT_PIPELINE: any of them whose name says data loading (hostRangeKindOf: the DataLoader's
//     own ranges and frames, torch/utils/data/, and the common names of user ranges for it);
//   - FRAMEWORK_OP: every other cpu_op (aten::, autograd, optimizer and DDP ops, custom ops);
//   - ANNOTATION: every other user_annotation (not a ProfilerStep, not c10d's nccl:* range,
//     which the import already turns into an NCCL call), to name the host work outside any op.
//   - ANNOTATION too: a Python frame of torch.compile's compilers (Dynamo, Inductor, Triton's
//     compiler: warmup_names.h), the evidence that a gap was compiling.
// Other Python frames are not sent: they name call sites (kineto_call_sites.h), and a frame
// holds every op below it, so it would say nothing about whether the host was inside an op.
//
// Ops nest deeply (aten::linear > aten::addmm > ...), and only whether the host was inside one
// matters, so of each thread's framework ops only the outermost are kept: an op that lies inside
// the last one kept on its thread is dropped (a trace lists a thread's ops in start order; one
// out of order is kept, which costs memory, not correctness). Annotations and input ranges are
// few and are all kept, so the innermost annotation can name the host's work.
// Memory: the kept ranges, 32 bytes each, until the feed hands them over by time.
#pragma once

#include "reader/events.h"

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gapwatch {

// What a CPU-side event of a trace is.
enum class KinetoHostSource : uint8_t { kCpuOp, kUserAnnotation, kPythonFunction };

// The kind of host range an event with this name is; UNSPECIFIED when it is not sent (a Python
// frame that is not data loading).
v1::HostRangeKind hostRangeKindOf(KinetoHostSource source, std::string_view name);

class KinetoHostRanges {
 public:
  // A range of `kind` (not UNSPECIFIED) on `thread_id`; true when it is kept (false: nested in
  // the thread's last framework op, so it adds nothing).
  bool add(v1::HostRangeKind kind, uint32_t thread_id, uint64_t start_ns, uint64_t end_ns, uint32_t name_id,
           std::vector<HostRangeEvent>& out);

  uint64_t kept() const { return kept_; }
  uint64_t nested() const { return nested_; }

 private:
  struct Outer {
    uint64_t start_ns = 0, end_ns = 0;
  };
  std::unordered_map<uint32_t, Outer> last_op_;  // per thread: the last framework op kept
  uint64_t kept_ = 0, nested_ = 0;
};

}  // namespace gapwatch
