// API tracing: the CUPTI callback sites of every simulated CUDA call, and the API-call log.
//
// Correlation ids: one per outermost traced call, from a process-wide counter starting at 1. A
// driver call made inside a runtime call on the same thread (cudaLaunchKernel -> cuLaunchKernel)
// shares the outer id, so the runtime callback, the driver callback and the device record all
// carry one id [verify on GPU; parcagpu dedupes nested driver callbacks by equal id].
// Only outermost calls enter the log: the ground truth asks what the thread was doing, once.
#include <atomic>
#include <mutex>
#include <vector>

#include "sim_driver.h"
#include "sim_driver_state.h"

namespace simcuda {
namespace {

std::atomic<uint32_t> g_next_correlation{1};
thread_local int t_depth = 0;
thread_local uint32_t t_correlation = 0;

struct ApiLog {
  std::mutex mu;
  std::vector<SimApiCall> calls;
};
ApiLog& api_log() {
  static ApiLog* log = new ApiLog;  // never destroyed: calls may be logged during exit
  return *log;
}

void append(SimApiCall call) {
  ApiLog& log = api_log();
  std::lock_guard<std::mutex> lock(log.mu);
  call.index = log.calls.size();
  log.calls.push_back(call);
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
  enter_ns_ = now_ns();
  fire(CUPTI_API_ENTER);
}

ApiScope::~ApiScope() { finish(); }

void ApiScope::finish() {
  if (finished_) return;
  finished_ = true;
  fire(CUPTI_API_EXIT);
  uint64_t exit_ns = now_ns();
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

void ApiScope::fire(CUpti_ApiCallbackSite site) {
  const CuptiSink* sink = cupti_sink();
  if (!sink || !sink->api) return;
  CUpti_CallbackData data{};
  data.callbackSite = site;
  data.functionName = name_;
  data.functionParams = params_;
  data.functionReturnValue = site == CUPTI_API_EXIT ? return_value_ : nullptr;
  data.symbolName = symbol_;
  data.context = primary_context(current_device());
  data.contextUid = context_uid(data.context);
  data.correlationData = &correlation_data_;
  data.correlationId = correlation_id_;
  sink->api(domain_, cbid_, &data);
}

void log_nccl_call(const char* name, uint64_t enter_ns, uint64_t exit_ns, uint64_t bytes, uint64_t stream_id) {
  SimApiCall call{};
  call.kind = SIM_CALL_NCCL;
  call.tid = current_tid();
  call.enter_ns = enter_ns;
  call.exit_ns = exit_ns;
  call.stream = stream_id;
  call.bytes = bytes;
  call.op_index = -1;
  call.name = name;
  append(call);
}

}  // namespace simcuda

extern "C" SIMCUDA_EXPORT size_t simcuda_api_calls(const SimApiCall** first) {
  auto& log = simcuda::api_log();
  std::lock_guard<std::mutex> lock(log.mu);
  *first = log.calls.data();
  return log.calls.size();
}
