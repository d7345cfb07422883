// analysis/hang.cpp: see hang.h.
#include "analysis/hang.h"

#include "analysis/quantity_text.h"

#include <algorithm>

namespace gapwatch::analysis {

void HangTracker::onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t /*offset*/) {
  // Each heartbeat is the whole picture at its time: the last one replaces the ones before.
  calls_.clear();
  for (const v1::CallInProgress& c : heartbeat.calls())
    calls_.push_back({c.thread_id(), c.start_ns(), c.correlation_id(), c.api_name()});
  kernels_.clear();
  for (const v1::UnfinishedLaunch& u : heartbeat.unfinished())
    kernels_.push_back({u.correlation_id(), u.launch_ns(), u.kernel_name(), u.thread_id()});
}

void HangTracker::onBatch(const DecodedBatch& batch, const StringTable& /*strings*/) {
  if (calls_.empty() && kernels_.empty()) return;
  // A call that returned, or a kernel whose record came, after the heartbeat was no hang.
  for (const ApiCallEvent& call : batch.api_calls)
    std::erase_if(calls_, [&](const HangCall& c) {
      return c.correlation_id ? c.correlation_id == call.correlation_id
                              : c.thread_id == call.thread_id && c.start_ns == call.start_ns;
    });
  for (const DeviceActivityEvent& a : batch.activities)
    if (a.kind == v1::ACTIVITY_KIND_KERNEL)
      std::erase_if(kernels_, [&](const UnfinishedKernel& k) { return k.correlation_id == a.correlation_id; });
}

void HangTracker::onGoodbye(const v1::Goodbye& /*goodbye*/, uint64_t /*offset*/) { goodbye_ = true; }

std::optional<Hang> HangTracker::finish(uint64_t end_ns) const {
  if (goodbye_ || (calls_.empty() && kernels_.empty())) return std::nullopt;
  Hang hang;
  hang.end_ns = end_ns;
  hang.calls = calls_;
  hang.kernels = kernels_;
  return hang;
}

void extendWindowsToHang(ProcessAnalysis& process, const Hang& hang) {
  if (hang.kernels.empty()) return;
  for (DeviceAnalysis& d : process.devices) {
    if (d.window_end_ns == 0 || d.window_end_ns >= hang.end_ns) continue;
    const uint64_t tail = hang.end_ns - d.window_end_ns;
    d.window_end_ns = hang.end_ns;
    d.busy_ns += tail;
    const uint64_t window = d.window_end_ns - d.window_start_ns;
    d.idle_fraction = window ? static_cast<double>(d.idle_ns) / static_cast<double>(window) : 0;
  }
}

namespace {

std::string since(uint64_t t, uint64_t start_ns) { return "+" + formatDuration(t > start_ns ? t - start_ns : 0); }

std::string kernelText(const UnfinishedKernel& k) {
  return (k.kernel_name.empty() ? "a kernel (correlation " + std::to_string(k.correlation_id) + ")" : k.kernel_name);
}

}  // namespace

Finding hangNote(const Hang& hang, uint64_t start_ns) {
  Finding f;
  f.id = "hang";
  const HangCall* call = nullptr;
  for (const HangCall& c : hang.calls)
    if (!call || c.start_ns < call->start_ns) call = &c;  // the longest wait
  const UnfinishedKernel* kernel = hang.kernels.empty() ? nullptr : &hang.kernels.front();  // the oldest
  const uint64_t waited = call && hang.end_ns > call->start_ns ? hang.end_ns - call->start_ns : 0;
  std::string title = call ? "hung in " + (call->api_name.empty() ? std::string("a CUDA call") : call->api_name) +
                                 " for " + formatDuration(waited)
                           : "ended with work on the device that never finished";
  if (kernel) {
    title += std::string(call ? " waiting for kernel " : ": kernel ") + kernelText(*kernel) + " (launched at " +
             since(kernel->launch_ns, start_ns) + ", never finished)";
  }
  f.title = title;
  for (const HangCall& c : hang.calls) {
    f.evidence.emplace_back("in progress", (c.api_name.empty() ? std::string("a CUDA call") : c.api_name) +
                                               " on thread " + std::to_string(c.thread_id) + " since " +
                                               since(c.start_ns, start_ns) + ", " +
                                               formatDuration(hang.end_ns > c.start_ns ? hang.end_ns - c.start_ns : 0) +
                                               " until the recording ends");
  }
  for (const UnfinishedKernel& k : hang.kernels)
    f.evidence.emplace_back("never finished", kernelText(k) + ", launched at " + since(k.launch_ns, start_ns) +
                                                  " on thread " + std::to_string(k.thread_id));
  f.evidence.emplace_back("recording ends", since(hang.end_ns, start_ns) + " (the recorder's last sign of life)");
  f.numbers.emplace_back("in_call_ns", static_cast<double>(waited));
  f.numbers.emplace_back("calls_in_progress", static_cast<double>(hang.calls.size()));
  f.numbers.emplace_back("unfinished_kernels", static_cast<double>(hang.kernels.size()));
  if (kernel) f.numbers.emplace_back("unfinished_since_ns", static_cast<double>(hang.end_ns - std::min(hang.end_ns, kernel->launch_ns)));
  f.fix = "The process died while it waited: find why the kernel never finished (an endless loop, a deadlock, "
          "a collective waiting for a rank that never joined; compute-sanitizer, or CUDA_LAUNCH_BLOCKING=1 to "
          "catch it at its launch), or why the call never returned.";
  return f;
}

}  // namespace gapwatch::analysis
