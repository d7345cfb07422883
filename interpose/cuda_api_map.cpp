#include "cuda_api_map.h"

#include "pinned_host_ranges.h"

namespace gapwatch {
namespace {

namespace api_kind = wire::ApiKind;
namespace copy_kind = wire::CopyKind;
namespace api_domain = wire::ApiDomain;

uint8_t copy_kind_of(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToDevice: return copy_kind::kH2D;
    case cudaMemcpyDeviceToHost: return copy_kind::kD2H;
    case cudaMemcpyDeviceToDevice: return copy_kind::kD2D;
    case cudaMemcpyHostToHost: return copy_kind::kH2H;
    default: return copy_kind::kUnspecified;  // cudaMemcpyDefault: the activity record tells
  }
}

// A synchronous copy waits for the device except D2D, and H2D of 64 KiB or less (CUDA runtime
// documentation, "API synchronization behavior"). Async copies wait only on pageable memory,
// which the API call cannot tell: the analysis joins the copy's activity record for that (see
// async_copy for what the recorder itself tells, for the Python stack alone).
void sync_copy(ApiCallRecord* e, uint8_t kind, uint64_t bytes) {
  e->kind = api_kind::kMemcpy;
  e->copy_kind = kind;
  e->bytes = bytes;
  bool blocks = kind == copy_kind::kD2H || kind == copy_kind::kH2H || (kind == copy_kind::kH2D && bytes > kSmallH2DBytes);
  if (blocks) e->flags |= kFlagBlocked;
}

// An async copy (kind, copy_kind, bytes), and whether it only enqueues (kFlagEnqueuesOnly: no
// Python stack walk, recorder.h), by the same documentation: device to device never blocks the
// host; to or from pinned host memory it returns once the copy is queued; to pageable host memory
// it returns only when the copy is done (PyTorch's .item() and .cpu()), from pageable memory it
// stages through a pinned buffer and can wait for the stream; host to host is synchronous. Pinned
// is what the table of pinned host ranges knows (pinned_host_ranges.h): memory it does not know
// counts as pageable, and its copy keeps its walk. A direction left to the pointers
// (cudaMemcpyDefault, cuMemcpyAsync): the copy only enqueues when exactly one side is known pinned,
// the other then taken for device memory (a pinned-to-pageable host copy made that way, synchronous,
// gets no stack: the one case this misjudges; both sides pinned is host to host: a walk).
// `dst_extent` and `src_extent`: the bytes the copy spans on each side (a 2D copy's rows with their
// pitch). Runs on the calling thread at the copy's exit; the lookups take no lock.
void async_copy(ApiCallRecord* e, uint8_t kind, uint64_t bytes, const void* dst, uint64_t dst_extent, const void* src,
                uint64_t src_extent) {
  e->kind = api_kind::kMemcpyAsync;
  e->copy_kind = kind;
  e->bytes = bytes;
  const PinnedHostRanges& pinned = pinned_host_ranges();
  bool enqueues_only = false;
  switch (kind) {
    case copy_kind::kD2D: enqueues_only = true; break;
    case copy_kind::kH2D: enqueues_only = pinned.pinned(src, src_extent); break;
    case copy_kind::kD2H: enqueues_only = pinned.pinned(dst, dst_extent); break;
    case copy_kind::kH2H: break;
    default: enqueues_only = pinned.pinned(dst, dst_extent) != pinned.pinned(src, src_extent); break;
  }
  if (enqueues_only) e->flags |= kFlagEnqueuesOnly;
}

// The bytes a 2D copy spans on one side: height rows `pitch` apart, the last `width` long.
uint64_t span_2d(size_t pitch, size_t width, size_t height) { return height ? uint64_t(pitch) * (height - 1) + width : 0; }

const void* as_pointer(CUdeviceptr p) { return reinterpret_cast<const void*>(uintptr_t(p)); }

void set(ApiCallRecord* e, uint8_t kind, bool blocked = false) {
  e->kind = kind;
  if (blocked) e->flags |= kFlagBlocked;
}

bool classify_runtime(CUpti_CallbackId cbid, const void* p, ApiCallRecord* e) {
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
      return set(e, api_kind::kLaunch), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
      return set(e, api_kind::kGraphLaunch), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000: {
      auto* q = static_cast<const cudaMemcpy_v3020_params*>(p);
      if (q) sync_copy(e, copy_kind_of(q->kind), q->count);
      else set(e, api_kind::kMemcpy);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000: {
      auto* q = static_cast<const cudaMemcpyAsync_v3020_params*>(p);
      if (q) async_copy(e, copy_kind_of(q->kind), q->count, q->dst, q->count, q->src, q->count);
      else set(e, api_kind::kMemcpyAsync);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
      return set(e, api_kind::kMemcpy), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020: {
      auto* q = static_cast<const cudaMemcpy2DAsync_v3020_params*>(p);
      if (q)
        async_copy(e, copy_kind_of(q->kind), uint64_t(q->width) * q->height, q->dst, span_2d(q->dpitch, q->width, q->height),
                   q->src, span_2d(q->spitch, q->width, q->height));
      else set(e, api_kind::kMemcpyAsync);
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020: {
      // Only its direction is read (the pitched pointers' extents are not worked out): device to
      // device only enqueues; any other keeps its walk, as before.
      auto* q = static_cast<const cudaMemcpy3DAsync_v3020_params*>(p);
      set(e, api_kind::kMemcpyAsync);
      if (q && q->p && q->p->kind == cudaMemcpyDeviceToDevice) e->flags |= kFlagEnqueuesOnly;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000: {  // device to device, between devices
      auto* q = static_cast<const cudaMemcpyPeerAsync_v4000_params*>(p);
      set(e, api_kind::kMemcpyAsync);
      if (q) e->bytes = q->count;
      e->flags |= kFlagEnqueuesOnly;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020: {
      auto* q = static_cast<const cudaMemset_v3020_params*>(p);
      set(e, api_kind::kMemset);
      if (q) e->bytes = q->count;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000: {
      auto* q = static_cast<const cudaMemsetAsync_v3020_params*>(p);
      set(e, api_kind::kMemsetAsync);
      if (q) e->bytes = q->count;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
      return set(e, api_kind::kDeviceSync, true), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
      return set(e, api_kind::kStreamSync, true), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
      return set(e, api_kind::kEventSync, true), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000:
      return set(e, api_kind::kEventRecord), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000:
      return set(e, api_kind::kStreamWaitEvent), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      auto* q = static_cast<const cudaMalloc_v3020_params*>(p);
      set(e, api_kind::kMalloc, true);
      if (q) e->bytes = q->size;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020: {
      auto* q = static_cast<const cudaFree_v3020_params*>(p);
      set(e, api_kind::kFree, !q || q->devPtr != nullptr);  // cudaFree(0) only makes the context
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      auto* q = static_cast<const cudaMallocHost_v3020_params*>(p);
      set(e, api_kind::kHostAlloc);
      if (q) e->bytes = q->size;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      auto* q = static_cast<const cudaHostAlloc_v3020_params*>(p);
      set(e, api_kind::kHostAlloc);
      if (q) e->bytes = q->size;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      return set(e, api_kind::kHostFree, true), true;
    // Page-locking the caller's memory is a host allocation in cost and effect (what proto's
    // HOST_ALLOC says); neither call waits for the device.
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000: {
      auto* q = static_cast<const cudaHostRegister_v4000_params*>(p);
      set(e, api_kind::kHostAlloc);
      if (q) e->bytes = q->size;
      return true;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
      return set(e, api_kind::kHostFree), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      auto* q = static_cast<const cudaMallocManaged_v6000_params*>(p);
      set(e, api_kind::kMalloc, true);  // like cudaMalloc, it waits for the device
      if (q) e->bytes = q->size;
      return true;
    }
    // A run of polls of one handle reaches the ring as one record (cupti_probe.cpp).
    case CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000:
      return set(e, api_kind::kQuery), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030:
      return set(e, api_kind::kCaptureBegin), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000:
      return set(e, api_kind::kCaptureEnd), true;
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000:
      return set(e, api_kind::kGraphInstantiate), true;
    default:
      return false;
  }
}

bool classify_driver(CUpti_CallbackId cbid, const void* p, ApiCallRecord* e) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      return set(e, api_kind::kLaunch), true;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
      return set(e, api_kind::kGraphLaunch), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2: {
      auto* q = static_cast<const cuMemcpyHtoD_v2_params*>(p);
      sync_copy(e, copy_kind::kH2D, q ? q->ByteCount : 0);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2: {
      auto* q = static_cast<const cuMemcpyDtoH_v2_params*>(p);
      sync_copy(e, copy_kind::kD2H, q ? q->ByteCount : 0);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2: {
      auto* q = static_cast<const cuMemcpyDtoD_v2_params*>(p);
      sync_copy(e, copy_kind::kD2D, q ? q->ByteCount : 0);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
      return set(e, api_kind::kMemcpy), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2: {
      auto* q = static_cast<const cuMemcpyHtoDAsync_v2_params*>(p);
      if (q) async_copy(e, copy_kind::kH2D, q->ByteCount, as_pointer(q->dstDevice), q->ByteCount, q->srcHost, q->ByteCount);
      else e->kind = api_kind::kMemcpyAsync, e->copy_kind = copy_kind::kH2D;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2: {
      auto* q = static_cast<const cuMemcpyDtoHAsync_v2_params*>(p);
      if (q) async_copy(e, copy_kind::kD2H, q->ByteCount, q->dstHost, q->ByteCount, as_pointer(q->srcDevice), q->ByteCount);
      else e->kind = api_kind::kMemcpyAsync, e->copy_kind = copy_kind::kD2H;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2: {
      auto* q = static_cast<const cuMemcpyDtoDAsync_v2_params*>(p);
      async_copy(e, copy_kind::kD2D, q ? q->ByteCount : 0, nullptr, 0, nullptr, 0);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync: {  // the direction is the pointers'
      auto* q = static_cast<const cuMemcpyAsync_params*>(p);
      if (q)
        async_copy(e, copy_kind::kUnspecified, q->ByteCount, as_pointer(q->dst), q->ByteCount, as_pointer(q->src),
                   q->ByteCount);
      else set(e, api_kind::kMemcpyAsync);
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
      return set(e, api_kind::kMemset), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
      return set(e, api_kind::kMemsetAsync), true;
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecord:
    case CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags:
      return set(e, api_kind::kEventRecord), true;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent:
      return set(e, api_kind::kStreamWaitEvent), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc:
      return set(e, api_kind::kHostAlloc), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return set(e, api_kind::kHostFree, true), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      auto* q = static_cast<const cuMemHostRegister_v2_params*>(p);
      set(e, api_kind::kHostAlloc);
      if (q) e->bytes = q->bytesize;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      return set(e, api_kind::kHostFree), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto* q = static_cast<const cuMemAllocManaged_params*>(p);
      set(e, api_kind::kMalloc, true);
      if (q) e->bytes = q->bytesize;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
      return set(e, api_kind::kDeviceSync, true), true;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
      return set(e, api_kind::kStreamSync, true), true;
    case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
      return set(e, api_kind::kEventSync, true), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
      return set(e, api_kind::kMalloc, true), true;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return set(e, api_kind::kFree, true), true;
    case CUPTI_DRIVER_TRACE_CBID_cuEventQuery:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz:
      return set(e, api_kind::kQuery), true;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz:
      return set(e, api_kind::kCaptureBegin), true;
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture:
    case CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz:
      return set(e, api_kind::kCaptureEnd), true;
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams:
      return set(e, api_kind::kGraphInstantiate), true;
    // Code loaded on purpose: Triton's launcher loads each compiled kernel with cuModuleLoadData,
    // so a recompile shows as a load before the new kernel's first launch (warm-up's evidence:
    // reader/warmup_names.h). Rare calls: nothing on the launch path.
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoad:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx:
    case CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile:
      return set(e, api_kind::kModuleLoad), true;
    default:
      return false;
  }
}

}  // namespace

bool classify_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, ApiCallRecord* e) {
  e->domain = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? api_domain::kRuntime : api_domain::kDriver;
  e->cbid = cbid;
  return domain == CUPTI_CB_DOMAIN_RUNTIME_API ? classify_runtime(cbid, params, e) : classify_driver(cbid, params, e);
}

void note_host_memory(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* p, int return_code) {
  if (return_code != 0 || !p) return;  // cudaSuccess, CUDA_SUCCESS: a failed call changed nothing
  PinnedHostRanges& pinned = pinned_host_ranges();
  // Allocations hand their pointer back through the params' out pointer, filled by the exit.
  auto allocated = [&](void* const* out, size_t bytes) {
    if (out && *out) pinned.add(*out, bytes);
  };
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
        auto* q = static_cast<const cudaMallocHost_v3020_params*>(p);
        return allocated(q->ptr, q->size);
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
        auto* q = static_cast<const cudaHostAlloc_v3020_params*>(p);
        return allocated(q->pHost, q->size);
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000: {
        auto* q = static_cast<const cudaHostRegister_v4000_params*>(p);
        pinned.add(q->ptr, q->size);
        return;
      }
      case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
        return pinned.remove(static_cast<const cudaFreeHost_v3020_params*>(p)->ptr);
      case CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000:
        return pinned.remove(static_cast<const cudaHostUnregister_v4000_params*>(p)->ptr);
      default:
        return;
    }
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      auto* q = static_cast<const cuMemAllocHost_v2_params*>(p);
      return allocated(q->pp, q->bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      auto* q = static_cast<const cuMemHostAlloc_params*>(p);
      return allocated(q->pp, q->bytesize);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2: {
      auto* q = static_cast<const cuMemHostRegister_v2_params*>(p);
      pinned.add(q->p, q->bytesize);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return pinned.remove(static_cast<const cuMemFreeHost_params*>(p)->p);
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
      return pinned.remove(static_cast<const cuMemHostUnregister_params*>(p)->p);
    default:
      return;
  }
}

bool is_poll(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020 || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000;
  }
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuEventQuery || cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz;
}

const void* polled_handle(const void* params) {
  // Every query's params struct holds the one handle it takes, first (cudaEventQuery_v3020_params,
  // cudaStreamQuery_v3020_params, cuEventQuery_params, cuStreamQuery_params).
  return params ? *static_cast<const void* const*>(params) : nullptr;
}

const CUpti_CallbackId kRecordedRuntimeCbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostUnregister_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCaptureToGraph_ptsz_v12030,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_v12000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithParams_ptsz_v12000, CUpti_CallbackId(0)};

const CUpti_CallbackId kRecordedDriverCbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2, CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost, CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuEventQuery, CUPTI_DRIVER_TRACE_CBID_cuStreamQuery,
    CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz, CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
    CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiate_v2, CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithFlags,
    CUPTI_DRIVER_TRACE_CBID_cuGraphInstantiateWithParams, CUPTI_DRIVER_TRACE_CBID_cuModuleLoad,
    CUPTI_DRIVER_TRACE_CBID_cuModuleLoadData, CUPTI_DRIVER_TRACE_CBID_cuModuleLoadDataEx,
    CUPTI_DRIVER_TRACE_CBID_cuModuleLoadFatBinary, CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadData,
    CUPTI_DRIVER_TRACE_CBID_cuLibraryLoadFromFile, CUpti_CallbackId(0)};

}  // namespace gapwatch
