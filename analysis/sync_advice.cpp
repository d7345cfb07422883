// analysis/sync_advice.cpp: see sync_advice.h.
#include "analysis/sync_advice.h"

#include <algorithm>

namespace gapwatch::analysis {
namespace {

// Said of stream synchronizes too: .item() is a small copy followed by one, and the user's fix
// is the same for both, so the two types share one sentence and a report says it once.
constexpr const char* kValueReadAdvice =
    "Reads of a value to the host (.item(), .cpu(), .tolist(), print(tensor)) and explicit stream "
    "synchronizes wait for the whole queue: read every N steps, and keep running sums (the loss, "
    "metrics) on the GPU.";

// A copy type with some reads of values among copies of data: the data's advice, then this.
std::string mixedReadsAdvice(const SyncTypeStats& stats) {
  if (stats.small_reads == 0) return "";
  return " The " + std::to_string(stats.small_reads) +
         " reads of values among them (copies to the host of at most 64 KiB) wait for the queue, not for "
         "memory: read them less often.";
}

}  // namespace

std::string syncTypeLabel(const SyncTypeStats& stats) {
  if (mostlySmallReads(stats)) {
    if (stats.kind == SyncPointKind::kPageableAsyncCopy) return "reads of values";
    if (stats.kind == SyncPointKind::kSyncCopy) return "memcpy value reads";
  }
  return std::string(syncPointName(stats.kind));
}

bool mostlySmallReads(const SyncTypeStats& stats) {
  return stats.count > 0 && stats.small_reads * 2 >= stats.count;
}

std::string syncAdvice(const SyncTypeStats& stats) {
  switch (stats.kind) {
    case SyncPointKind::kDeviceSync:
      return "Take cudaDeviceSynchronize / torch.cuda.synchronize() out of the step; keep it only where you "
             "time, every N steps.";
    case SyncPointKind::kStreamSync:
      return kValueReadAdvice;
    case SyncPointKind::kEventSync:
      return "Let the GPU wait instead of the host: cudaStreamWaitEvent (stream.wait_event) rather than "
             "cudaEventSynchronize, or query the event only every N steps.";
    case SyncPointKind::kSyncCopy:
      if (mostlySmallReads(stats)) return kValueReadAdvice;
      return "Synchronous copies block the host until the queue drains: copy from pinned memory with "
             "cudaMemcpyAsync (tensor.pin_memory(), then .to(device, non_blocking=True))." +
             mixedReadsAdvice(stats);
    case SyncPointKind::kPageableAsyncCopy:
      if (mostlySmallReads(stats)) return kValueReadAdvice;
      return "Async copies from pageable memory block: pin the host buffers (DataLoader(pin_memory=True), "
             "tensor.pin_memory()) so that non_blocking=True copies overlap the GPU's work." +
             mixedReadsAdvice(stats);
    case SyncPointKind::kMemset:
      return "Memsets that blocked: clear device memory with cudaMemsetAsync on the stream (torch.zeros on "
             "the device), not through host or pageable memory.";
    case SyncPointKind::kAllocFree:
      return "cudaMalloc / cudaFree synchronize the device: let PyTorch's caching allocator reuse memory "
             "(no PYTORCH_NO_CUDA_MEMORY_CACHING=1, no torch.cuda.empty_cache() in the loop) and allocate "
             "buffers once, before the loop.";
    case SyncPointKind::kQueryPolling:
      return "The host spins in cudaEventQuery / cudaStreamQuery until the GPU is done, which is a sync point "
             "like cudaEventSynchronize: queue the next work behind the event on the GPU "
             "(cudaStreamWaitEvent, stream.wait_event) instead of waiting for it, or do host work between "
             "polls and poll only once the work should be done.";
    case SyncPointKind::kOther:
      break;
  }
  return "Other CUDA calls waited for the device: find them among the sync points' call sites and move "
         "them out of the step.";
}

std::string syncAdviceInOrder(const std::vector<const SyncTypeStats*>& types) {
  std::vector<std::string> said;
  std::string text;
  for (const SyncTypeStats* s : types) {
    std::string sentence = syncAdvice(*s);
    if (std::find(said.begin(), said.end(), sentence) != said.end()) continue;
    text += (text.empty() ? "" : " ") + sentence;
    said.push_back(std::move(sentence));
  }
  return text;
}

}  // namespace gapwatch::analysis
