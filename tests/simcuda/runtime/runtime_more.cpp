// More of what frameworks and samples call at start-up or around their copies: pointer
// attributes, stream-ordered allocation, peer copies and peer access, pitched allocation,
// managed-memory hints, cooperative launches, and the per-thread-default-stream forms (_ptds,
// _ptsz) that `nvcc --default-stream per-thread` makes programs call.
//
// cudaMallocAsync / cudaFreeAsync: address space from the same arena as cudaMalloc, without the
// device synchronisation (stream-ordered allocation does not wait for the device); the free takes
// effect at once (the simulator does not reuse freed device addresses, so nothing can observe the
// difference). cudaMemPrefetchAsync and cudaMemAdvise are accepted and queue no device work (the
// simulator has no page migration). cudaMemcpyPeer(Async) is a device-to-device copy. Peer access
// is bookkeeping: every pair of distinct devices can access each other (NVLink boards).
// Per-thread forms: copies, memsets and launches report their own _ptds/_ptsz callback ids; the
// stream synchronise, query, event record and stream wait forms run the base call on the
// per-thread default stream and report the base call's id [simplification].
#include <mutex>
#include <set>

#include "runtime_internal.h"

using namespace simcuda;
using namespace simcuda::runtime;

namespace {

std::mutex g_peer_mu;
std::set<std::pair<int, int>>& peers() {
  static auto* s = new std::set<std::pair<int, int>>;
  return *s;
}

cudaStream_t per_thread_handle(cudaStream_t h) { return h ? h : cudaStreamPerThread; }

cudaError_t malloc_async(CUpti_CallbackId cbid, const char* name, void** ptr, size_t size, cudaStream_t stream) {
  cudaMallocAsync_v11020_params params{ptr, size, stream};
  return traced(cbid, name, SIM_CALL_MALLOC, &params, [&](ApiScope& s) -> cudaError_t {
    if (!ptr) return cudaErrorInvalidValue;
    s.set_bytes(size);
    s.set_stream(stream_id(resolve_stream(stream, current_device())));
    *ptr = size ? reserve_device(size) : nullptr;
    return size && !*ptr ? cudaErrorMemoryAllocation : cudaSuccess;
  });
}

cudaError_t free_async(CUpti_CallbackId cbid, const char* name, void* ptr, cudaStream_t stream) {
  cudaFreeAsync_v11020_params params{ptr, stream};
  return traced(cbid, name, SIM_CALL_FREE, &params, [&](ApiScope& s) -> cudaError_t {
    s.set_stream(stream_id(resolve_stream(stream, current_device())));
    if (!ptr) return cudaSuccess;
    return forget(ptr, SIM_MEM_DEVICE) ? cudaSuccess : cudaErrorInvalidValue;
  });
}

}  // namespace

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attr, const void* ptr) {
  cudaPointerGetAttributes_v4000_params params{attr, ptr};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000, "cudaPointerGetAttributes", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!attr) return cudaErrorInvalidValue;
                  SimMemKind kind = SIM_MEM_PAGEABLE;
                  bool registered = false;
                  void* p = const_cast<void*>(ptr);
                  attr->device = current_device();
                  if (!pointer_info(ptr, &kind, &registered)) {
                    // Memory CUDA does not know: "unregistered", no device address.
                    attr->type = cudaMemoryTypeUnregistered;
                    attr->devicePointer = nullptr;
                    attr->hostPointer = p;
                    return cudaSuccess;
                  }
                  switch (kind) {
                    case SIM_MEM_DEVICE:
                      attr->type = cudaMemoryTypeDevice;
                      attr->devicePointer = p;
                      attr->hostPointer = nullptr;
                      break;
                    case SIM_MEM_MANAGED:
                      attr->type = cudaMemoryTypeManaged;
                      attr->devicePointer = p;
                      attr->hostPointer = p;
                      break;
                    default:  // page-locked (allocated or registered): mapped, the same address
                      attr->type = cudaMemoryTypeHost;
                      attr->devicePointer = p;
                      attr->hostPointer = p;
                      break;
                  }
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaStream_t stream) {
  return malloc_async(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, "cudaMallocAsync", ptr, size, stream);
}
SIMCUDA_EXPORT cudaError_t cudaMallocAsync_ptsz(void** ptr, size_t size, cudaStream_t stream) {
  return malloc_async(CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020, "cudaMallocAsync_ptsz", ptr, size,
                      per_thread_handle(stream));
}
SIMCUDA_EXPORT cudaError_t cudaFreeAsync(void* ptr, cudaStream_t stream) {
  return free_async(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, "cudaFreeAsync", ptr, stream);
}
SIMCUDA_EXPORT cudaError_t cudaFreeAsync_ptsz(void* ptr, cudaStream_t stream) {
  return free_async(CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020, "cudaFreeAsync_ptsz", ptr,
                    per_thread_handle(stream));
}

SIMCUDA_EXPORT cudaError_t cudaMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  cudaMallocPitch_v3020_params params{ptr, pitch, width, height};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020, "cudaMallocPitch", SIM_CALL_MALLOC, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (!ptr || !pitch) return cudaErrorInvalidValue;
                  if (cudaError_t e = capture_check_unsafe(true); e != cudaSuccess) return e;
                  size_t row = (width + 511) & ~size_t(511);  // rows 512-byte aligned, like cudaMalloc's
                  s.set_bytes(row * height);
                  spend(config().alloc_api_ns);
                  s.set_blocked(wait_device(current_device()));
                  *ptr = reserve_device(row * std::max<size_t>(height, 1));
                  *pitch = row;
                  return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyPeer(void* dst, int dst_device, const void* src, int src_device, size_t count) {
  cudaMemcpyPeer_v4000_params params{dst, dst_device, src, src_device, count};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000, "cudaMemcpyPeer", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) -> cudaError_t {
                  if (dst_device < 0 || dst_device >= device_count() || src_device < 0 ||
                      src_device >= device_count())
                    return cudaErrorInvalidDevice;
                  return copy_call(s, dst, src, count, cudaMemcpyDeviceToDevice, nullptr, false, false);
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device,
                                               size_t count, cudaStream_t stream) {
  cudaMemcpyPeerAsync_v4000_params params{dst, dst_device, src, src_device, count, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000, "cudaMemcpyPeerAsync", SIM_CALL_MEMCPY_ASYNC,
                &params, [&](ApiScope& s) -> cudaError_t {
                  if (dst_device < 0 || dst_device >= device_count() || src_device < 0 ||
                      src_device >= device_count())
                    return cudaErrorInvalidDevice;
                  return copy_call(s, dst, src, count, cudaMemcpyDeviceToDevice, stream, true, false);
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  cudaDeviceEnablePeerAccess_v4000_params params{peer, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceEnablePeerAccess_v4000, "cudaDeviceEnablePeerAccess",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (flags != 0) return cudaErrorInvalidValue;
                  int me = current_device();
                  if (peer < 0 || peer >= device_count() || peer == me) return cudaErrorInvalidDevice;
                  std::lock_guard<std::mutex> lock(g_peer_mu);
                  return peers().insert({me, peer}).second ? cudaSuccess : cudaErrorPeerAccessAlreadyEnabled;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  cudaDeviceDisablePeerAccess_v4000_params params{peer};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceDisablePeerAccess_v4000, "cudaDeviceDisablePeerAccess",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (peer < 0 || peer >= device_count()) return cudaErrorInvalidDevice;
                  std::lock_guard<std::mutex> lock(g_peer_mu);
                  return peers().erase({current_device(), peer}) ? cudaSuccess : cudaErrorPeerAccessNotEnabled;
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemPrefetchAsync(const void* ptr, size_t count, struct cudaMemLocation location,
                                                unsigned int flags, cudaStream_t stream) {
  cudaMemPrefetchAsync_v12020_params params{ptr, count, location, flags, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemPrefetchAsync_v12020, "cudaMemPrefetchAsync", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t { return ptr || !count ? cudaSuccess : cudaErrorInvalidValue; });
}

SIMCUDA_EXPORT cudaError_t cudaMemAdvise(const void* ptr, size_t count, enum cudaMemoryAdvise advice,
                                         struct cudaMemLocation location) {
  cudaMemAdvise_v12020_params params{ptr, count, advice, location};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemAdvise_v12020, "cudaMemAdvise", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t { return ptr || !count ? cudaSuccess : cudaErrorInvalidValue; });
}

SIMCUDA_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 grid, dim3 block, void** args,
                                                       size_t shared_mem, cudaStream_t stream) {
  cudaLaunchCooperativeKernel_v9000_params params{func, grid, block, args, shared_mem, stream};
  return launch_kernel(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000, "cudaLaunchCooperativeKernel",
                       &params, func, grid, block, args, shared_mem, stream, false);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 grid, dim3 block, void** args,
                                                            size_t shared_mem, cudaStream_t stream) {
  cudaLaunchCooperativeKernel_v9000_params params{func, grid, block, args, shared_mem, stream};
  return launch_kernel(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
                       "cudaLaunchCooperativeKernel_ptsz", &params, func, grid, block, args, shared_mem, stream, true);
}

SIMCUDA_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* config, const void* func, void** args) {
  cudaLaunchKernelExC_v11060_params params{config, func, args};
  if (!config) return cudaErrorInvalidValue;
  return launch_kernel(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, "cudaLaunchKernelExC_ptsz", &params,
                       func, config->gridDim, config->blockDim, args, config->dynamicSmemBytes, config->stream, true);
}

// ---- per-thread default stream forms -------------------------------------------------------------
SIMCUDA_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  cudaMemcpy_v3020_params params{dst, src, count, kind};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, "cudaMemcpy_ptds", SIM_CALL_MEMCPY, &params,
                [&](ApiScope& s) { return copy_call(s, dst, src, count, kind, nullptr, false, true); });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                                cudaStream_t stream) {
  cudaMemcpyAsync_v3020_params params{dst, src, count, kind, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, "cudaMemcpyAsync_ptsz", SIM_CALL_MEMCPY_ASYNC,
                &params, [&](ApiScope& s) { return copy_call(s, dst, src, count, kind, stream, true, true); });
}

SIMCUDA_EXPORT cudaError_t cudaMemset_ptds(void* ptr, int value, size_t count) {
  cudaMemset_v3020_params params{ptr, value, count};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000, "cudaMemset_ptds", SIM_CALL_MEMSET, &params,
                [&](ApiScope& s) { return memset_call(s, ptr, count, nullptr, false, true); });
}

SIMCUDA_EXPORT cudaError_t cudaMemsetAsync_ptsz(void* ptr, int value, size_t count, cudaStream_t stream) {
  cudaMemsetAsync_v3020_params params{ptr, value, count, stream};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, "cudaMemsetAsync_ptsz", SIM_CALL_MEMSET_ASYNC,
                &params, [&](ApiScope& s) { return memset_call(s, ptr, count, stream, true, true); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return cudaStreamSynchronize(per_thread_handle(stream));
}
SIMCUDA_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return cudaStreamQuery(per_thread_handle(stream)); }
SIMCUDA_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return cudaEventRecord(event, per_thread_handle(stream));
}
SIMCUDA_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return cudaEventRecordWithFlags(event, per_thread_handle(stream), flags);
}
SIMCUDA_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return cudaStreamWaitEvent(per_thread_handle(stream), event, flags);
}
SIMCUDA_EXPORT cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t stream, int* priority) {
  return cudaStreamGetPriority(per_thread_handle(stream), priority);
}
SIMCUDA_EXPORT cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int* flags) {
  return cudaStreamGetFlags(per_thread_handle(stream), flags);
}
SIMCUDA_EXPORT cudaError_t cudaStreamGetId_ptsz(cudaStream_t stream, unsigned long long* id) {
  return cudaStreamGetId(per_thread_handle(stream), id);
}
SIMCUDA_EXPORT cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t stream, int* device) {
  return cudaStreamGetDevice(per_thread_handle(stream), device);
}

}  // extern "C"
