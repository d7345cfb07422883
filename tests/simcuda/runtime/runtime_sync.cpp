// Streams, events and the synchronising calls. Each sync call spends its own API time, then
// waits (really blocks) until the virtual device has finished the work it waits for, and leaves a
// host-side CUPTI synchronization record, as the real CUPTI does for these calls.
//
// Events: cudaEventElapsedTime is the difference of the two markers' device times, in ms (the
// documentation's resolution is about 0.5 us; the simulator's is 1 ns). As documented, it fails
// with cudaErrorInvalidResourceHandle when either event was created with cudaEventDisableTiming or
// has never been recorded, and with cudaErrorNotReady while either has not completed.
// cudaEventSynchronize on a cudaEventBlockingSync event sleeps for the whole wait (the thread
// blocks) instead of spinning its last stretch.
#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "runtime_internal.h"

using namespace simcuda;
using namespace simcuda::runtime;

namespace {

Event* as_event(cudaEvent_t e) { return reinterpret_cast<Event*>(e); }

std::mutex g_priority_mu;
std::unordered_map<Stream*, int>& priorities() {
  static auto* map = new std::unordered_map<Stream*, int>;
  return *map;
}
void set_stream_priority(Stream* s, int priority) {
  std::lock_guard<std::mutex> lock(g_priority_mu);
  priorities()[s] = priority;
}
int stream_priority(Stream* s) {
  std::lock_guard<std::mutex> lock(g_priority_mu);
  auto it = priorities().find(s);
  return it == priorities().end() ? 0 : it->second;
}

void sync_record(ApiScope& scope, CUpti_ActivitySynchronizationType type, uint64_t enter, Stream* stream,
                 const Event* event) {
  SyncRecord r{};
  r.type = type;
  r.start_ns = enter;
  r.end_ns = now_ns();
  r.correlation_id = scope.correlation_id();
  r.context_id = uint32_t(current_device() + 1);
  r.stream_id = stream ? uint32_t(stream_id(stream)) : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  r.event_id = event ? event_id(event) : CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  add_sync_record(r);
}

}  // namespace

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* out) {
  cudaStreamCreate_v3020_params params{out};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreate_v3020, "cudaStreamCreate", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!out) return cudaErrorInvalidValue;
                  cuStreamCreate_params dp{reinterpret_cast<CUstream*>(out), 0};
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamCreate, "cuStreamCreate", SIM_CALL_OTHER, &dp,
                              [&](ApiScope&) {
                                *out = reinterpret_cast<cudaStream_t>(create_stream(current_device(), 0));
                                return CUDA_SUCCESS;
                              });
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* out, unsigned int flags) {
  cudaStreamCreateWithFlags_v5000_params params{out, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithFlags_v5000, "cudaStreamCreateWithFlags",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!out) return cudaErrorInvalidValue;
                  *out = reinterpret_cast<cudaStream_t>(create_stream(current_device(), flags));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  cudaStreamDestroy_v5050_params params{stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamDestroy_v5050, "cudaStreamDestroy", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  destroy_stream(reinterpret_cast<Stream*>(stream));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamQuery(cudaStream_t handle) {
  cudaStreamQuery_v3020_params params{handle};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, "cudaStreamQuery", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
                  Stream* stream = resolve_stream(handle, current_device());
                  if (stream_is_capturing(stream)) return cudaErrorStreamCaptureUnsupported;
                  return stream_done(stream) ? cudaSuccess : cudaErrorNotReady;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  cudaStreamSynchronize_v3020_params params{handle};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize",
                SIM_CALL_STREAM_SYNC, &params, [&](ApiScope& s) -> cudaError_t {
                  uint64_t enter = now_ns();
                  Stream* stream = resolve_stream(handle, current_device());
                  s.set_stream(stream_id(stream));
                  if (stream_is_capturing(stream)) return cudaErrorStreamCaptureUnsupported;
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
                  spend(config().sync_api_ns);
                  cuStreamSynchronize_params dp{reinterpret_cast<CUstream>(handle)};
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize",
                              SIM_CALL_STREAM_SYNC, &dp, [&](ApiScope&) {
                                s.set_blocked(wait_stream(stream));
                                return CUDA_SUCCESS;
                              });
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, enter, stream, nullptr);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize",
                SIM_CALL_DEVICE_SYNC, nullptr, [&](ApiScope& s) -> cudaError_t {
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
                  uint64_t enter = now_ns();
                  spend(config().sync_api_ns);
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize", SIM_CALL_DEVICE_SYNC,
                              nullptr, [&](ApiScope&) {
                                s.set_blocked(wait_device(current_device()));
                                return CUDA_SUCCESS;
                              });
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, enter, nullptr, nullptr);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventCreate(cudaEvent_t* out) {
  cudaEventCreate_v3020_params params{out};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020, "cudaEventCreate", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!out) return cudaErrorInvalidValue;
                  *out = reinterpret_cast<cudaEvent_t>(create_event(current_device(), 0));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t* out, unsigned int flags) {
  cudaEventCreateWithFlags_v3020_params params{out, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020, "cudaEventCreateWithFlags",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!out) return cudaErrorInvalidValue;
                  constexpr unsigned kKnown = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
                  if (flags & ~kKnown) return cudaErrorInvalidValue;
                  // "cudaEventInterprocess ... must be specified along with cudaEventDisableTiming"
                  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return cudaErrorInvalidValue;
                  *out = reinterpret_cast<cudaEvent_t>(create_event(current_device(), flags));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event) {
  cudaEventDestroy_v3020_params params{event};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020, "cudaEventDestroy", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!event) return cudaErrorInvalidResourceHandle;
                  destroy_event(as_event(event));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t handle) {
  cudaEventRecord_v3020_params params{event, handle};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, "cudaEventRecord", SIM_CALL_EVENT_RECORD, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (!event) return cudaErrorInvalidResourceHandle;
                  Stream* stream = resolve_stream(handle, current_device());
                  s.set_stream(stream_id(stream));
                  if (capture_event_record(stream, as_event(event))) return cudaSuccess;
                  cuEventRecord_params dp{reinterpret_cast<CUevent>(event), reinterpret_cast<CUstream>(handle)};
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventRecord, "cuEventRecord", SIM_CALL_EVENT_RECORD, &dp,
                              [&](ApiScope&) {
                                OpRequest r;
                                r.kind = SIM_OP_MARKER;
                                r.stream = stream;
                                r.correlation_id = s.correlation_id();
                                int64_t op = enqueue(r);
                                record_event(as_event(event), op);
                                s.set_op(op);
                                return CUDA_SUCCESS;
                              });
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event) {
  cudaEventQuery_v3020_params params{event};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, "cudaEventQuery", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!event) return cudaErrorInvalidResourceHandle;
                  if (event_is_captured(as_event(event))) return cudaErrorCapturedEvent;
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
                  return op_done(event_op(as_event(event))) ? cudaSuccess : cudaErrorNotReady;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  cudaEventSynchronize_v3020_params params{event};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize", SIM_CALL_EVENT_SYNC,
                &params, [&](ApiScope& s) -> cudaError_t {
                  if (!event) return cudaErrorInvalidResourceHandle;
                  if (event_is_captured(as_event(event))) return cudaErrorCapturedEvent;
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
                  uint64_t enter = now_ns();
                  spend(config().sync_api_ns);
                  cuEventSynchronize_params dp{reinterpret_cast<CUevent>(event)};
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cuEventSynchronize", SIM_CALL_EVENT_SYNC,
                              &dp, [&](ApiScope&) {
                                int64_t op = event_op(as_event(event));
                                if (op < 0) {
                                  s.set_blocked(0);
                                } else if (event_flags(as_event(event)) & cudaEventBlockingSync) {
                                  uint64_t end = resolve_op(op);
                                  sleep_until(end);
                                  s.set_blocked(end);
                                } else {
                                  s.set_blocked(wait_op(op));
                                }
                                return CUDA_SUCCESS;
                              });
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, enter, nullptr,
                              as_event(event));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event, unsigned int flags) {
  cudaStreamWaitEvent_v3020_params params{handle, event, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, "cudaStreamWaitEvent",
                SIM_CALL_STREAM_WAIT_EVENT, &params, [&](ApiScope& s) -> cudaError_t {
                  if (!event) return cudaErrorInvalidResourceHandle;
                  uint64_t enter = now_ns();
                  Stream* stream = resolve_stream(handle, current_device());
                  s.set_stream(stream_id(stream));
                  cudaError_t capture_result = cudaSuccess;
                  if (capture_stream_wait(stream, as_event(event), &capture_result)) return capture_result;
                  cuStreamWaitEvent_params dp{reinterpret_cast<CUstream>(handle), reinterpret_cast<CUevent>(event),
                                              flags};
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, "cuStreamWaitEvent",
                              SIM_CALL_STREAM_WAIT_EVENT, &dp, [&](ApiScope&) {
                                OpRequest r;
                                r.kind = SIM_OP_MARKER;
                                r.stream = stream;
                                r.correlation_id = s.correlation_id();
                                r.wait_event = as_event(event);
                                s.set_op(enqueue(r));
                                return CUDA_SUCCESS;
                              });
                  sync_record(s, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, enter, stream,
                              as_event(event));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  cudaEventElapsedTime_v12080_params params{ms, start, end};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080, "cudaEventElapsedTime", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!ms) return cudaErrorInvalidValue;
                  if (!start || !end) return cudaErrorInvalidResourceHandle;
                  const Event* a = as_event(start);
                  const Event* b = as_event(end);
                  if ((event_flags(a) | event_flags(b)) & cudaEventDisableTiming) return cudaErrorInvalidResourceHandle;
                  int64_t op_a = event_op(a), op_b = event_op(b);
                  if (op_a < 0 || op_b < 0) return cudaErrorInvalidResourceHandle;
                  if (!op_done(op_a) || !op_done(op_b)) return cudaErrorNotReady;
                  uint64_t sa, ea, sb, eb;
                  if (!op_interval(op_a, &sa, &ea) || !op_interval(op_b, &sb, &eb)) return cudaErrorNotReady;
                  *ms = float((double(int64_t(sb - sa))) / 1e6);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  // cudaEventRecordExternal only matters inside stream capture (an event-record node); outside it
  // the call is cudaEventRecord.
  if (flags & ~unsigned(cudaEventRecordExternal)) return record_error(cudaErrorInvalidValue);
  return cudaEventRecord(event, stream);
}

SIMCUDA_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t* out, unsigned int flags, int priority) {
  cudaStreamCreateWithPriority_v5050_params params{out, flags, priority};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamCreateWithPriority_v5050, "cudaStreamCreateWithPriority",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!out) return cudaErrorInvalidValue;
                  if (flags & ~unsigned(cudaStreamNonBlocking)) return cudaErrorInvalidValue;
                  // Priorities outside [greatest, least] = [-5, 0] are clamped, as documented. The
                  // virtual device has no scheduler that priorities could change.
                  priority = std::max(-5, std::min(0, priority));
                  Stream* st = create_stream(current_device(), flags);
                  set_stream_priority(st, priority);
                  *out = reinterpret_cast<cudaStream_t>(st);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t handle, int* priority) {
  cudaStreamGetPriority_v5050_params params{handle, priority};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetPriority_v5050, "cudaStreamGetPriority", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!priority) return cudaErrorInvalidValue;
                  *priority = stream_priority(resolve_stream(handle, current_device()));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t handle, unsigned int* flags) {
  cudaStreamGetFlags_v5050_params params{handle, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetFlags_v5050, "cudaStreamGetFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!flags) return cudaErrorInvalidValue;
                  *flags = stream_flags(resolve_stream(handle, current_device()));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetId(cudaStream_t handle, unsigned long long* id) {
  cudaStreamGetId_v12000_params params{handle, id};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetId_v12000, "cudaStreamGetId", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!id) return cudaErrorInvalidValue;
                  *id = stream_id(resolve_stream(handle, current_device()));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t handle, int* device) {
  cudaStreamGetDevice_v12080_params params{handle, device};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetDevice_v12080, "cudaStreamGetDevice", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!device) return cudaErrorInvalidValue;
                  *device = stream_device(resolve_stream(handle, current_device()));
                  return cudaSuccess;
                });
}

}  // extern "C"
