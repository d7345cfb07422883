// API tracing: the CUPTI callback sites of every simulated CUDA call, and the API-call log.
//
// Correlation ids: one per outermost traced call, from a process-wide counter starting at 1. A
// driver call made inside a runtime call on the same thread (cudaLaunchKernel -> cuLaunchKernel)
// shares the outer id, so the runtime callback, the driver callback and the device record all
// carry one id [verify on GPU; parcagpu dedupes nested driver callbacks by equal id].
// Only outermost calls enter the log: the ground truth asks what the thread was doing, once.
#include <atomic>
#include <deque>
#include <mutex>
#include <vector>

#include "sim_driver.h"
#include "sim_driver_state.h"

namespace simcuda {
namespace {

std::atomic<uint32_t> g_next_correlation{1};
thread_local int t_depth = 0;
thread_local uint32_t t_correlation = 0;

// A deque: appending never moves earlier entries, so an append costs the same at the millionth
// call as at the first (a growing vector would stall a call for a copy of the whole log), and an
// NCCL call can fill in its exit time in place (close_nccl_call).
struct ApiLog {
  std::mutex mu;
  std::deque<SimApiCall> calls;
  std::vector<SimApiCall> snapshot;  // what simcuda_api_calls hands out, contiguous
};
ApiLog& api_log() {
  static ApiLog* log = new ApiLog;  // never destroyed: calls may be logged during exit
  return *log;
}

SimApiCall* append(SimApiCall call) {
  ApiLog& log = api_log();
  std::lock_guard<std::mutex> lock(log.mu);
  call.index = log.calls.size();
  log.calls.push_back(call);
  return &log.calls.back();
}

}  // namespace

ApiScope::ApiScope(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char* name, SimCallKind kind,
                   const void* params, void* return_value, const char* symbol)
    : domain_(domain), cbid_(cbid), name_(name), kind_(kind), params_(params), return_value_(return_value),
      symbol_(symbol) {
  outermost_ = t_depth == 0;
  if (outermost_) t_correlation = g_next_correlation.fetch_add(1, std::memory_order_relaxed);
  correlation_id_ = t_correlation;
  ++t_depth;
  fire(CUPTI_API_ENTER);  // takes enter_ns_
}

ApiScope::~ApiScope() { finish(); }

void ApiScope::finish() {
  if (finished_) return;
  finished_ = true;
  fire(CUPTI_API_EXIT);  // takes exit_ns_
  uint64_t exit_ns = exit_ns_;
  --t_depth;
  if (!outermost_) return;
  SimApiCall call{};
  call.kind = kind_;
  call.domain = uint32_t(domain_);
  call.cbid = cbid_;
  call.tid = current_tid();
  call.enter_ns = enter_ns_;
  call.exit_ns = exit_ns;
  call.correlation_id = correlation_id_;
  call.stream = stream_id_;
  call.bytes = bytes_;
  call.op_index = op_index_;
  call.blocked = blocked_ ? 1 : 0;
  call.waited_until_ns = waited_until_;
  call.name = name_;
  append(call);
}

// The call's logged enter and exit times are read where CUPTI's callbacks fire: the API boundary
// a profiler can see. Reading them outside the callbacks would count a profiler's own callback
// time as outside the call, tens of nanoseconds per call that add up over thousands of tiny gaps.
void ApiScope::fire(CUpti_ApiCallbackSite site) {
  (site == CUPTI_API_ENTER ? enter_ns_ : exit_ns_) = now_ns();
  const CuptiSink* sink = cupti_sink();
  if (!sink || !sink->api) return;
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = name_;
  data.functionParams = params_;
  data.functionReturnValue = site == CUPTI_API_EXIT ? return_value_ : nullptr;
  data.symbolName = symbol_;
  // Runtime calls make the primary context first (as the real runtime does); a driver call sees
  // the thread's current context, which may be none (cuDeviceGet before any context exists).
  data.context = domain_ == CUPTI_CB_DOMAIN_RUNTIME_API ? primary_context(current_device()) : current_context();
  data.contextUid = context_uid(data.context);
  data.correlationData = &correlation_data_;
  data.correlationId = correlation_id_;
  sink->api(domain_, cbid_, &data);
}

SimApiCall* open_nccl_call(const char* name, uint64_t enter_ns, uint64_t bytes) {
  SimApiCall call{};
  call.kind = SIM_CALL_NCCL;
  call.tid = current_tid();
  call.enter_ns = enter_ns;
  call.bytes = bytes;
  call.op_index = -1;
  call.name = name;
  return append(call);
}

void close_nccl_call(SimApiCall* call, uint64_t stream_id) {
  call->stream = stream_id;
  call->exit_ns = now_ns();  // the last thing before the call returns
}

}  // namespace simcuda

extern "C" SIMCUDA_EXPORT size_t simcuda_api_calls(const SimApiCall** first) {
  auto& log = simcuda::api_log();
  std::lock_guard<std::mutex> lock(log.mu);
  log.snapshot.assign(log.calls.begin(), log.calls.end());
  *first = log.snapshot.data();
  return log.snapshot.size();
}
