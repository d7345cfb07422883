// Streams, events and the synchronising calls. Each sync call spends its own API time, then
// waits (really blocks) until the virtual device has finished the work it waits for, and leaves a
// host-side CUPTI synchronization record, as the real CUPTI does for these calls.
#include "runtime_internal.h"

using namespace simcuda;
using namespace simcuda::runtime;

namespace {

Event* as_event(cudaEvent_t e) { return reinterpret_cast<Event*>(e); }

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
                [&](ApiScope&) {
                  return stream_done(resolve_stream(handle, current_device())) ? cudaSuccess : cudaErrorNotReady;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  cudaStreamSynchronize_v3020_params params{handle};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize",
                SIM_CALL_STREAM_SYNC, &params, [&](ApiScope& s) {
                  uint64_t enter = now_ns();
                  Stream* stream = resolve_stream(handle, current_device());
                  s.set_stream(stream_id(stream));
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
                SIM_CALL_DEVICE_SYNC, nullptr, [&](ApiScope& s) {
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
                  return op_done(event_op(as_event(event))) ? cudaSuccess : cudaErrorNotReady;
                });
}

SIMCUDA_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  cudaEventSynchronize_v3020_params params{event};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize", SIM_CALL_EVENT_SYNC,
                &params, [&](ApiScope& s) -> cudaError_t {
                  if (!event) return cudaErrorInvalidResourceHandle;
                  uint64_t enter = now_ns();
                  spend(config().sync_api_ns);
                  cuEventSynchronize_params dp{reinterpret_cast<CUevent>(event)};
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, "cuEventSynchronize", SIM_CALL_EVENT_SYNC,
                              &dp, [&](ApiScope&) {
                                int64_t op = event_op(as_event(event));
                                s.set_blocked(op >= 0 ? wait_op(op) : 0);
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

}  // extern "C"
