// Device queries and properties: what a program asks at start-up (helper_cuda.h's findCudaDevice,
// deviceQuery-style listings, cudaOccupancyMaxPotentialBlockSize, frameworks' capability checks).
//
// The simulated device looks like an NVIDIA H200 (GH100, SXM): compute capability 9.0, 132 SMs,
// 2048 threads and 32 blocks per SM, 1024 threads per block, 64 K registers, 228 KiB of shared
// memory per SM (227 KiB opt-in per block), a 50 MiB L2, a 6144-bit HBM3e bus, 141 GB (143771 MiB)
// of memory, and asyncEngineCount 3 (copy engines: docs/simcuda.md). Every attribute of the CUDA 13
// cudaDeviceAttr enum has a value; the reserved ones and values outside the enum are
// cudaErrorInvalidValue. cudaGetDeviceProperties fills cudaDeviceProp from the same table, so the
// two always agree. The queries are answered by the runtime itself (the real runtime caches what
// it asked the driver at context creation), so they fire runtime callbacks only.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "runtime_internal.h"

namespace simcuda::runtime {
namespace {

constexpr size_t kTotalGlobalMem = size_t(143771) << 20;  // 141 GB, as nvidia-smi shows an H200
constexpr int kSmCount = 132;
constexpr int kMaxThreadsPerSm = 2048;
constexpr int kMaxBlocksPerSm = 32;
constexpr int kRegsPerSm = 65536;
constexpr int kSharedPerSm = 233472;        // 228 KiB
constexpr int kSharedPerBlockOptin = 232448; // 227 KiB
constexpr int kReservedSharedPerBlock = 1024;
constexpr int kAsyncEngineCount = 3;

std::atomic<unsigned> g_device_flags{0};
std::mutex g_func_mu;
std::unordered_map<const void*, int>& max_dynamic_shared() {
  static auto* map = new std::unordered_map<const void*, int>;
  return *map;
}

}  // namespace

bool device_attribute(int attr, int device, int* value) {
  (void)device;
  int v = 0;
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: v = 1024; break;
    case cudaDevAttrMaxBlockDimX: v = 1024; break;
    case cudaDevAttrMaxBlockDimY: v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: v = 64; break;
    case cudaDevAttrMaxGridDimX: v = 2147483647; break;
    case cudaDevAttrMaxGridDimY: v = 65535; break;
    case cudaDevAttrMaxGridDimZ: v = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: v = 49152; break;
    case cudaDevAttrTotalConstantMemory: v = 65536; break;
    case cudaDevAttrWarpSize: v = 32; break;
    case cudaDevAttrMaxPitch: v = 2147483647; break;
    case cudaDevAttrMaxRegistersPerBlock: v = 65536; break;
    case cudaDevAttrClockRate: v = 1980000; break;  // kHz
    case cudaDevAttrTextureAlignment: v = 512; break;
    case cudaDevAttrGpuOverlap: v = 1; break;
    case cudaDevAttrMultiProcessorCount: v = kSmCount; break;
    case cudaDevAttrKernelExecTimeout: v = 0; break;
    case cudaDevAttrIntegrated: v = 0; break;
    case cudaDevAttrCanMapHostMemory: v = 1; break;
    case cudaDevAttrComputeMode: v = cudaComputeModeDefault; break;
    case cudaDevAttrMaxTexture1DWidth: v = 131072; break;
    case cudaDevAttrMaxTexture2DWidth: v = 131072; break;
    case cudaDevAttrMaxTexture2DHeight: v = 65536; break;
    case cudaDevAttrMaxTexture3DWidth: v = 16384; break;
    case cudaDevAttrMaxTexture3DHeight: v = 16384; break;
    case cudaDevAttrMaxTexture3DDepth: v = 16384; break;
    case cudaDevAttrMaxTexture2DLayeredWidth: v = 32768; break;
    case cudaDevAttrMaxTexture2DLayeredHeight: v = 32768; break;
    case cudaDevAttrMaxTexture2DLayeredLayers: v = 2048; break;
    case cudaDevAttrSurfaceAlignment: v = 512; break;
    case cudaDevAttrConcurrentKernels: v = 1; break;
    case cudaDevAttrEccEnabled: v = 1; break;
    case cudaDevAttrPciBusId: v = 0x18 + device * 0x10; break;
    case cudaDevAttrPciDeviceId: v = 0; break;
    case cudaDevAttrTccDriver: v = 0; break;
    case cudaDevAttrMemoryClockRate: v = 2619000; break;  // kHz
    case cudaDevAttrGlobalMemoryBusWidth: v = 6144; break;
    case cudaDevAttrL2CacheSize: v = 50 << 20; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: v = kMaxThreadsPerSm; break;
    case cudaDevAttrAsyncEngineCount: v = kAsyncEngineCount; break;
    case cudaDevAttrUnifiedAddressing: v = 1; break;
    case cudaDevAttrMaxTexture1DLayeredWidth: v = 32768; break;
    case cudaDevAttrMaxTexture1DLayeredLayers: v = 2048; break;
    case cudaDevAttrMaxTexture2DGatherWidth: v = 32768; break;
    case cudaDevAttrMaxTexture2DGatherHeight: v = 32768; break;
    case cudaDevAttrMaxTexture3DWidthAlt: v = 8192; break;
    case cudaDevAttrMaxTexture3DHeightAlt: v = 8192; break;
    case cudaDevAttrMaxTexture3DDepthAlt: v = 32768; break;
    case cudaDevAttrPciDomainId: v = 0; break;
    case cudaDevAttrTexturePitchAlignment: v = 32; break;
    case cudaDevAttrMaxTextureCubemapWidth: v = 32768; break;
    case cudaDevAttrMaxTextureCubemapLayeredWidth: v = 32768; break;
    case cudaDevAttrMaxTextureCubemapLayeredLayers: v = 2046; break;
    case cudaDevAttrMaxSurface1DWidth: v = 32768; break;
    case cudaDevAttrMaxSurface2DWidth: v = 131072; break;
    case cudaDevAttrMaxSurface2DHeight: v = 65536; break;
    case cudaDevAttrMaxSurface3DWidth: v = 16384; break;
    case cudaDevAttrMaxSurface3DHeight: v = 16384; break;
    case cudaDevAttrMaxSurface3DDepth: v = 16384; break;
    case cudaDevAttrMaxSurface1DLayeredWidth: v = 32768; break;
    case cudaDevAttrMaxSurface1DLayeredLayers: v = 2048; break;
    case cudaDevAttrMaxSurface2DLayeredWidth: v = 32768; break;
    case cudaDevAttrMaxSurface2DLayeredHeight: v = 32768; break;
    case cudaDevAttrMaxSurface2DLayeredLayers: v = 2048; break;
    case cudaDevAttrMaxSurfaceCubemapWidth: v = 32768; break;
    case cudaDevAttrMaxSurfaceCubemapLayeredWidth: v = 32768; break;
    case cudaDevAttrMaxSurfaceCubemapLayeredLayers: v = 2046; break;
    case cudaDevAttrMaxTexture1DLinearWidth: v = 268435456; break;
    case cudaDevAttrMaxTexture2DLinearWidth: v = 131072; break;
    case cudaDevAttrMaxTexture2DLinearHeight: v = 65000; break;
    case cudaDevAttrMaxTexture2DLinearPitch: v = 2097120; break;
    case cudaDevAttrMaxTexture2DMipmappedWidth: v = 32768; break;
    case cudaDevAttrMaxTexture2DMipmappedHeight: v = 32768; break;
    case cudaDevAttrComputeCapabilityMajor: v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: v = 0; break;
    case cudaDevAttrMaxTexture1DMipmappedWidth: v = 32768; break;
    case cudaDevAttrStreamPrioritiesSupported: v = 1; break;
    case cudaDevAttrGlobalL1CacheSupported: v = 1; break;
    case cudaDevAttrLocalL1CacheSupported: v = 1; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: v = kSharedPerSm; break;
    case cudaDevAttrMaxRegistersPerMultiprocessor: v = kRegsPerSm; break;
    case cudaDevAttrManagedMemory: v = 1; break;
    case cudaDevAttrIsMultiGpuBoard: v = 0; break;
    case cudaDevAttrMultiGpuBoardGroupID: v = device; break;
    case cudaDevAttrHostNativeAtomicSupported: v = 0; break;
    case cudaDevAttrSingleToDoublePrecisionPerfRatio: v = 2; break;
    case cudaDevAttrPageableMemoryAccess: v = 0; break;
    case cudaDevAttrConcurrentManagedAccess: v = 1; break;
    case cudaDevAttrComputePreemptionSupported: v = 1; break;
    case cudaDevAttrCanUseHostPointerForRegisteredMem: v = 1; break;
    case cudaDevAttrCooperativeLaunch: v = 1; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: v = kSharedPerBlockOptin; break;
    case cudaDevAttrCanFlushRemoteWrites: v = 0; break;
    case cudaDevAttrHostRegisterSupported: v = 1; break;
    case cudaDevAttrPageableMemoryAccessUsesHostPageTables: v = 0; break;
    case cudaDevAttrDirectManagedMemAccessFromHost: v = 0; break;
    case cudaDevAttrMaxBlocksPerMultiprocessor: v = kMaxBlocksPerSm; break;
    case cudaDevAttrMaxPersistingL2CacheSize: v = 32505856; break;
    case cudaDevAttrMaxAccessPolicyWindowSize: v = 134213632; break;
    case cudaDevAttrReservedSharedMemoryPerBlock: v = kReservedSharedPerBlock; break;
    case cudaDevAttrSparseCudaArraySupported: v = 1; break;
    case cudaDevAttrHostRegisterReadOnlySupported: v = 1; break;
    case cudaDevAttrTimelineSemaphoreInteropSupported: v = 1; break;
    case cudaDevAttrMemoryPoolsSupported: v = 1; break;
    case cudaDevAttrGPUDirectRDMASupported: v = 1; break;
    case cudaDevAttrGPUDirectRDMAFlushWritesOptions: v = cudaFlushGPUDirectRDMAWritesOptionHost; break;
    case cudaDevAttrGPUDirectRDMAWritesOrdering: v = cudaGPUDirectRDMAWritesOrderingOwner; break;
    case cudaDevAttrMemoryPoolSupportedHandleTypes: v = cudaMemHandleTypePosixFileDescriptor; break;
    case cudaDevAttrClusterLaunch: v = 1; break;
    case cudaDevAttrDeferredMappingCudaArraySupported: v = 1; break;
    case cudaDevAttrIpcEventSupport: v = 1; break;
    case cudaDevAttrMemSyncDomainCount: v = 4; break;
    case cudaDevAttrNumaConfig: v = cudaDeviceNumaConfigNone; break;
    case cudaDevAttrNumaId: v = -1; break;
    case cudaDevAttrMpsEnabled: v = 0; break;
    case cudaDevAttrHostNumaId: v = 0; break;
    case cudaDevAttrD3D12CigSupported: v = 0; break;
    case cudaDevAttrVulkanCigSupported: v = 0; break;
    case cudaDevAttrGpuPciDeviceId: v = int(0x233510DEu); break;  // device 0x2335 (H200), vendor 0x10DE
    case cudaDevAttrGpuPciSubsystemId: v = int(0x18BE10DEu); break;
    case cudaDevAttrHostNumaMemoryPoolsSupported: v = 0; break;
    case cudaDevAttrHostNumaMultinodeIpcSupported: v = 0; break;
    case cudaDevAttrHostMemoryPoolsSupported: v = 1; break;
    case cudaDevAttrOnlyPartialHostNativeAtomicSupported: v = 0; break;
    default: return false;  // reserved, or not an attribute
  }
  *value = v;
  return true;
}

size_t device_total_memory() { return kTotalGlobalMem; }

void fill_properties(cudaDeviceProp* p, int device) {
  memset(p, 0, sizeof(*p));
  auto a = [&](int attr) {
    int v = 0;
    device_attribute(attr, device, &v);
    return v;
  };
  snprintf(p->name, sizeof(p->name), "NVIDIA H200 (gapwatch simulated)");
  for (int i = 0; i < 16; ++i) p->uuid.bytes[i] = char(0x5a ^ (i * 17) ^ device);
  p->totalGlobalMem = kTotalGlobalMem;
  p->sharedMemPerBlock = size_t(a(cudaDevAttrMaxSharedMemoryPerBlock));
  p->regsPerBlock = a(cudaDevAttrMaxRegistersPerBlock);
  p->warpSize = a(cudaDevAttrWarpSize);
  p->memPitch = size_t(a(cudaDevAttrMaxPitch));
  p->maxThreadsPerBlock = a(cudaDevAttrMaxThreadsPerBlock);
  p->maxThreadsDim[0] = a(cudaDevAttrMaxBlockDimX);
  p->maxThreadsDim[1] = a(cudaDevAttrMaxBlockDimY);
  p->maxThreadsDim[2] = a(cudaDevAttrMaxBlockDimZ);
  p->maxGridSize[0] = a(cudaDevAttrMaxGridDimX);
  p->maxGridSize[1] = a(cudaDevAttrMaxGridDimY);
  p->maxGridSize[2] = a(cudaDevAttrMaxGridDimZ);
  p->totalConstMem = size_t(a(cudaDevAttrTotalConstantMemory));
  p->major = a(cudaDevAttrComputeCapabilityMajor);
  p->minor = a(cudaDevAttrComputeCapabilityMinor);
  p->textureAlignment = size_t(a(cudaDevAttrTextureAlignment));
  p->texturePitchAlignment = size_t(a(cudaDevAttrTexturePitchAlignment));
  p->multiProcessorCount = a(cudaDevAttrMultiProcessorCount);
  p->integrated = a(cudaDevAttrIntegrated);
  p->canMapHostMemory = a(cudaDevAttrCanMapHostMemory);
  p->maxTexture1D = a(cudaDevAttrMaxTexture1DWidth);
  p->maxTexture1DMipmap = a(cudaDevAttrMaxTexture1DMipmappedWidth);
  p->maxTexture2D[0] = a(cudaDevAttrMaxTexture2DWidth);
  p->maxTexture2D[1] = a(cudaDevAttrMaxTexture2DHeight);
  p->maxTexture2DMipmap[0] = a(cudaDevAttrMaxTexture2DMipmappedWidth);
  p->maxTexture2DMipmap[1] = a(cudaDevAttrMaxTexture2DMipmappedHeight);
  p->maxTexture2DLinear[0] = a(cudaDevAttrMaxTexture2DLinearWidth);
  p->maxTexture2DLinear[1] = a(cudaDevAttrMaxTexture2DLinearHeight);
  p->maxTexture2DLinear[2] = a(cudaDevAttrMaxTexture2DLinearPitch);
  p->maxTexture2DGather[0] = a(cudaDevAttrMaxTexture2DGatherWidth);
  p->maxTexture2DGather[1] = a(cudaDevAttrMaxTexture2DGatherHeight);
  p->maxTexture3D[0] = a(cudaDevAttrMaxTexture3DWidth);
  p->maxTexture3D[1] = a(cudaDevAttrMaxTexture3DHeight);
  p->maxTexture3D[2] = a(cudaDevAttrMaxTexture3DDepth);
  p->maxTexture3DAlt[0] = a(cudaDevAttrMaxTexture3DWidthAlt);
  p->maxTexture3DAlt[1] = a(cudaDevAttrMaxTexture3DHeightAlt);
  p->maxTexture3DAlt[2] = a(cudaDevAttrMaxTexture3DDepthAlt);
  p->maxTextureCubemap = a(cudaDevAttrMaxTextureCubemapWidth);
  p->maxTexture1DLayered[0] = a(cudaDevAttrMaxTexture1DLayeredWidth);
  p->maxTexture1DLayered[1] = a(cudaDevAttrMaxTexture1DLayeredLayers);
  p->maxTexture2DLayered[0] = a(cudaDevAttrMaxTexture2DLayeredWidth);
  p->maxTexture2DLayered[1] = a(cudaDevAttrMaxTexture2DLayeredHeight);
  p->maxTexture2DLayered[2] = a(cudaDevAttrMaxTexture2DLayeredLayers);
  p->maxTextureCubemapLayered[0] = a(cudaDevAttrMaxTextureCubemapLayeredWidth);
  p->maxTextureCubemapLayered[1] = a(cudaDevAttrMaxTextureCubemapLayeredLayers);
  p->maxSurface1D = a(cudaDevAttrMaxSurface1DWidth);
  p->maxSurface2D[0] = a(cudaDevAttrMaxSurface2DWidth);
  p->maxSurface2D[1] = a(cudaDevAttrMaxSurface2DHeight);
  p->maxSurface3D[0] = a(cudaDevAttrMaxSurface3DWidth);
  p->maxSurface3D[1] = a(cudaDevAttrMaxSurface3DHeight);
  p->maxSurface3D[2] = a(cudaDevAttrMaxSurface3DDepth);
  p->maxSurface1DLayered[0] = a(cudaDevAttrMaxSurface1DLayeredWidth);
  p->maxSurface1DLayered[1] = a(cudaDevAttrMaxSurface1DLayeredLayers);
  p->maxSurface2DLayered[0] = a(cudaDevAttrMaxSurface2DLayeredWidth);
  p->maxSurface2DLayered[1] = a(cudaDevAttrMaxSurface2DLayeredHeight);
  p->maxSurface2DLayered[2] = a(cudaDevAttrMaxSurface2DLayeredLayers);
  p->maxSurfaceCubemap = a(cudaDevAttrMaxSurfaceCubemapWidth);
  p->maxSurfaceCubemapLayered[0] = a(cudaDevAttrMaxSurfaceCubemapLayeredWidth);
  p->maxSurfaceCubemapLayered[1] = a(cudaDevAttrMaxSurfaceCubemapLayeredLayers);
  p->surfaceAlignment = size_t(a(cudaDevAttrSurfaceAlignment));
  p->concurrentKernels = a(cudaDevAttrConcurrentKernels);
  p->ECCEnabled = a(cudaDevAttrEccEnabled);
  p->pciBusID = a(cudaDevAttrPciBusId);
  p->pciDeviceID = a(cudaDevAttrPciDeviceId);
  p->pciDomainID = a(cudaDevAttrPciDomainId);
  p->tccDriver = a(cudaDevAttrTccDriver);
  p->asyncEngineCount = a(cudaDevAttrAsyncEngineCount);
  p->unifiedAddressing = a(cudaDevAttrUnifiedAddressing);
  p->memoryBusWidth = a(cudaDevAttrGlobalMemoryBusWidth);
  p->l2CacheSize = a(cudaDevAttrL2CacheSize);
  p->persistingL2CacheMaxSize = a(cudaDevAttrMaxPersistingL2CacheSize);
  p->maxThreadsPerMultiProcessor = a(cudaDevAttrMaxThreadsPerMultiProcessor);
  p->streamPrioritiesSupported = a(cudaDevAttrStreamPrioritiesSupported);
  p->globalL1CacheSupported = a(cudaDevAttrGlobalL1CacheSupported);
  p->localL1CacheSupported = a(cudaDevAttrLocalL1CacheSupported);
  p->sharedMemPerMultiprocessor = size_t(a(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  p->regsPerMultiprocessor = a(cudaDevAttrMaxRegistersPerMultiprocessor);
  p->managedMemory = a(cudaDevAttrManagedMemory);
  p->isMultiGpuBoard = a(cudaDevAttrIsMultiGpuBoard);
  p->multiGpuBoardGroupID = a(cudaDevAttrMultiGpuBoardGroupID);
  p->hostNativeAtomicSupported = a(cudaDevAttrHostNativeAtomicSupported);
  p->pageableMemoryAccess = a(cudaDevAttrPageableMemoryAccess);
  p->concurrentManagedAccess = a(cudaDevAttrConcurrentManagedAccess);
  p->computePreemptionSupported = a(cudaDevAttrComputePreemptionSupported);
  p->canUseHostPointerForRegisteredMem = a(cudaDevAttrCanUseHostPointerForRegisteredMem);
  p->cooperativeLaunch = a(cudaDevAttrCooperativeLaunch);
  p->sharedMemPerBlockOptin = size_t(a(cudaDevAttrMaxSharedMemoryPerBlockOptin));
  p->pageableMemoryAccessUsesHostPageTables = a(cudaDevAttrPageableMemoryAccessUsesHostPageTables);
  p->directManagedMemAccessFromHost = a(cudaDevAttrDirectManagedMemAccessFromHost);
  p->maxBlocksPerMultiProcessor = a(cudaDevAttrMaxBlocksPerMultiprocessor);
  p->accessPolicyMaxWindowSize = a(cudaDevAttrMaxAccessPolicyWindowSize);
  p->reservedSharedMemPerBlock = size_t(a(cudaDevAttrReservedSharedMemoryPerBlock));
  p->hostRegisterSupported = a(cudaDevAttrHostRegisterSupported);
  p->sparseCudaArraySupported = a(cudaDevAttrSparseCudaArraySupported);
  p->hostRegisterReadOnlySupported = a(cudaDevAttrHostRegisterReadOnlySupported);
  p->timelineSemaphoreInteropSupported = a(cudaDevAttrTimelineSemaphoreInteropSupported);
  p->memoryPoolsSupported = a(cudaDevAttrMemoryPoolsSupported);
  p->gpuDirectRDMASupported = a(cudaDevAttrGPUDirectRDMASupported);
  p->gpuDirectRDMAFlushWritesOptions = unsigned(a(cudaDevAttrGPUDirectRDMAFlushWritesOptions));
  p->gpuDirectRDMAWritesOrdering = a(cudaDevAttrGPUDirectRDMAWritesOrdering);
  p->memoryPoolSupportedHandleTypes = unsigned(a(cudaDevAttrMemoryPoolSupportedHandleTypes));
  p->deferredMappingCudaArraySupported = a(cudaDevAttrDeferredMappingCudaArraySupported);
  p->ipcEventSupported = a(cudaDevAttrIpcEventSupport);
  p->clusterLaunch = a(cudaDevAttrClusterLaunch);
  p->unifiedFunctionPointers = 1;
  p->deviceNumaConfig = a(cudaDevAttrNumaConfig);
  p->deviceNumaId = a(cudaDevAttrNumaId);
  p->mpsEnabled = a(cudaDevAttrMpsEnabled);
  p->hostNumaId = a(cudaDevAttrHostNumaId);
  p->gpuPciDeviceID = unsigned(a(cudaDevAttrGpuPciDeviceId));
  p->gpuPciSubsystemID = unsigned(a(cudaDevAttrGpuPciSubsystemId));
  p->hostNumaMultinodeIpcSupported = a(cudaDevAttrHostNumaMultinodeIpcSupported);
}

unsigned device_flags() { return g_device_flags.load(); }

}  // namespace simcuda::runtime

using namespace simcuda;
using namespace simcuda::runtime;

namespace {

bool valid_device(int device) { return device >= 0 && device < device_count(); }

// Blocks per SM for a kernel of `block_size` threads, by the limits of compute capability 9.0:
// threads (in whole warps), blocks, registers (32 per thread, the simulator's assumed kernel) and
// shared memory (dynamic + the 1 KiB the system reserves per block).
int occupancy(int block_size, size_t dynamic_smem) {
  if (block_size <= 0) return 0;
  int warps = (block_size + 31) / 32;
  int by_threads = kMaxThreadsPerSm / (warps * 32);
  int by_regs = kRegsPerSm / (warps * 32 * 32);
  int by_smem = int(size_t(kSharedPerSm) / (dynamic_smem + size_t(kReservedSharedPerBlock)));
  return std::max(0, std::min({kMaxBlocksPerSm, by_threads, by_regs, by_smem}));
}

}  // namespace

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  cudaGetDeviceProperties_v12000_params params{prop, device};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000, "cudaGetDeviceProperties",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!prop) return cudaErrorInvalidValue;
                  if (!valid_device(device)) return cudaErrorInvalidDevice;
                  fill_properties(prop, device);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  cudaDeviceGetAttribute_v5000_params params{value, attr, device};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000, "cudaDeviceGetAttribute", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!value) return cudaErrorInvalidValue;
                  if (!valid_device(device)) return cudaErrorInvalidDevice;
                  return device_attribute(int(attr), device, value) ? cudaSuccess : cudaErrorInvalidValue;
                });
}

SIMCUDA_EXPORT cudaError_t cudaChooseDevice(int* device, const struct cudaDeviceProp* prop) {
  cudaChooseDevice_v3020_params params{device, prop};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaChooseDevice_v3020, "cudaChooseDevice", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!device || !prop) return cudaErrorInvalidValue;
                  // Every simulated device is the same, so the best match is the first.
                  *device = 0;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  cudaMemGetInfo_v3020_params params{free_bytes, total};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaMemGetInfo_v3020, "cudaMemGetInfo", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!free_bytes || !total) return cudaErrorInvalidValue;
                  size_t used = std::min(device_bytes_in_use(), kTotalGlobalMem);
                  *total = kTotalGlobalMem;
                  *free_bytes = kTotalGlobalMem - used;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  cudaDeviceGetStreamPriorityRange_v5050_params params{least, greatest};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetStreamPriorityRange_v5050, "cudaDeviceGetStreamPriorityRange",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  // Lower numbers are higher priorities; 0 is the default (as on compute capability 9.0).
                  if (least) *least = 0;
                  if (greatest) *greatest = -5;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  cudaSetDeviceFlags_v3020_params params{flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaSetDeviceFlags_v3020, "cudaSetDeviceFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  constexpr unsigned kKnown = cudaDeviceScheduleMask | cudaDeviceMapHost |
                                              cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops;
                  if (flags & ~kKnown) return cudaErrorInvalidValue;
                  unsigned sched = flags & cudaDeviceScheduleMask;
                  if (sched != cudaDeviceScheduleAuto && sched != cudaDeviceScheduleSpin &&
                      sched != cudaDeviceScheduleYield && sched != cudaDeviceScheduleBlockingSync)
                    return cudaErrorInvalidValue;
                  // The simulator's waits sleep, then spin the last 200 us, whatever the schedule.
                  // cudaDeviceMapHost is always on (mapped memory needs nothing more here).
                  g_device_flags.store(flags);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  cudaGetDeviceFlags_v7000_params params{flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceFlags_v7000, "cudaGetDeviceFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!flags) return cudaErrorInvalidValue;
                  // As the real runtime reports an active context: cudaDeviceMapHost is always set.
                  *flags = g_device_flags.load() | cudaDeviceMapHost;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache config) {
  cudaDeviceSetCacheConfig_v3020_params params{config};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetCacheConfig_v3020, "cudaDeviceSetCacheConfig",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  return config >= cudaFuncCachePreferNone && config <= cudaFuncCachePreferEqual
                             ? cudaSuccess
                             : cudaErrorInvalidValue;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache* config) {
  cudaDeviceGetCacheConfig_v3020_params params{config};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetCacheConfig_v3020, "cudaDeviceGetCacheConfig",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!config) return cudaErrorInvalidValue;
                  *config = cudaFuncCachePreferNone;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaFuncSetCacheConfig(const void* func, enum cudaFuncCache config) {
  cudaFuncSetCacheConfig_v3020_params params{func, config};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaFuncSetCacheConfig_v3020, "cudaFuncSetCacheConfig", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!kernel_for_stub(func)) return cudaErrorInvalidDeviceFunction;
                  return config >= cudaFuncCachePreferNone && config <= cudaFuncCachePreferEqual
                             ? cudaSuccess
                             : cudaErrorInvalidValue;
                });
}

SIMCUDA_EXPORT cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  cudaFuncSetAttribute_v9000_params params{func, attr, value};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaFuncSetAttribute_v9000, "cudaFuncSetAttribute", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!kernel_for_stub(func)) return cudaErrorInvalidDeviceFunction;
                  switch (attr) {
                    case cudaFuncAttributeMaxDynamicSharedMemorySize: {
                      if (value < 0 || value > kSharedPerBlockOptin) return cudaErrorInvalidValue;
                      std::lock_guard<std::mutex> lock(g_func_mu);
                      max_dynamic_shared()[func] = value;
                      return cudaSuccess;
                    }
                    case cudaFuncAttributePreferredSharedMemoryCarveout:
                      return value >= -1 && value <= 100 ? cudaSuccess : cudaErrorInvalidValue;
                    default:
                      return attr >= 0 && attr < cudaFuncAttributeMax ? cudaSuccess : cudaErrorInvalidValue;
                  }
                });
}

SIMCUDA_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  cudaFuncGetAttributes_v3020_params params{attr, func};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020, "cudaFuncGetAttributes", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!attr) return cudaErrorInvalidValue;
                  if (!kernel_for_stub(func)) return cudaErrorInvalidDeviceFunction;
                  // The simulator has no device code: a plain kernel compiled for sm_90.
                  memset(attr, 0, sizeof(*attr));
                  attr->maxThreadsPerBlock = 1024;
                  attr->numRegs = 32;
                  attr->ptxVersion = 90;
                  attr->binaryVersion = 90;
                  attr->preferredShmemCarveout = -1;
                  std::lock_guard<std::mutex> lock(g_func_mu);
                  auto it = max_dynamic_shared().find(func);
                  attr->maxDynamicSharedSizeBytes = it == max_dynamic_shared().end() ? 49152 : it->second;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, const void* func, int block_size,
                                                                         size_t dynamic_smem) {
  cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6050_params params{blocks, func, block_size, dynamic_smem};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6050,
                "cudaOccupancyMaxActiveBlocksPerMultiprocessor", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!blocks) return cudaErrorInvalidValue;
                  if (!kernel_for_stub(func)) return cudaErrorInvalidDeviceFunction;
                  if (block_size <= 0 || block_size > 1024) return cudaErrorInvalidValue;
                  *blocks = occupancy(block_size, dynamic_smem);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, const void* func,
                                                                                  int block_size, size_t dynamic_smem,
                                                                                  unsigned int flags) {
  cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000_params params{blocks, func, block_size, dynamic_smem,
                                                                             flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000,
                "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!blocks) return cudaErrorInvalidValue;
                  if (!kernel_for_stub(func)) return cudaErrorInvalidDeviceFunction;
                  if (block_size <= 0 || block_size > 1024) return cudaErrorInvalidValue;
                  if (flags & ~unsigned(cudaOccupancyDisableCachingOverride)) return cudaErrorInvalidValue;
                  *blocks = occupancy(block_size, dynamic_smem);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
  cudaDeviceGetPCIBusId_v4010_params params{bus_id, len, device};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetPCIBusId_v4010, "cudaDeviceGetPCIBusId", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!bus_id || len <= 0) return cudaErrorInvalidValue;
                  if (!valid_device(device)) return cudaErrorInvalidDevice;
                  int bus = 0;
                  device_attribute(cudaDevAttrPciBusId, device, &bus);
                  snprintf(bus_id, size_t(len), "%08X:%02X:%02X.0", 0, bus, 0);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int* device, const char* bus_id) {
  cudaDeviceGetByPCIBusId_v4010_params params{device, bus_id};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetByPCIBusId_v4010, "cudaDeviceGetByPCIBusId", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!device || !bus_id) return cudaErrorInvalidValue;
                  unsigned domain = 0, bus = 0, dev = 0;
                  // [domain]:[bus]:[device].[function] or [bus]:[device].[function], hexadecimal.
                  if (sscanf(bus_id, "%x:%x:%x", &domain, &bus, &dev) != 3) {
                    domain = 0;
                    if (sscanf(bus_id, "%x:%x", &bus, &dev) != 2) return cudaErrorInvalidValue;
                  }
                  for (int d = 0; d < device_count(); ++d) {
                    int b = 0;
                    device_attribute(cudaDevAttrPciBusId, d, &b);
                    if (unsigned(b) == bus && domain == 0 && dev == 0) {
                      *device = d;
                      return cudaSuccess;
                    }
                  }
                  return cudaErrorInvalidDevice;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetLimit(size_t* value, enum cudaLimit limit) {
  cudaDeviceGetLimit_v3020_params params{value, limit};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetLimit_v3020, "cudaDeviceGetLimit", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!value) return cudaErrorInvalidValue;
                  switch (limit) {
                    case cudaLimitStackSize: *value = 1024; return cudaSuccess;
                    case cudaLimitPrintfFifoSize: *value = 1 << 20; return cudaSuccess;
                    case cudaLimitMallocHeapSize: *value = 8 << 20; return cudaSuccess;
                    case cudaLimitDevRuntimeSyncDepth: *value = 2; return cudaSuccess;
                    case cudaLimitDevRuntimePendingLaunchCount: *value = 2048; return cudaSuccess;
                    case cudaLimitMaxL2FetchGranularity: *value = 64; return cudaSuccess;
                    case cudaLimitPersistingL2CacheSize: *value = 0; return cudaSuccess;
                    default: return cudaErrorUnsupportedLimit;
                  }
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value) {
  cudaDeviceSetLimit_v3020_params params{limit, value};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSetLimit_v3020, "cudaDeviceSetLimit", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  return limit <= cudaLimitPersistingL2CacheSize ? cudaSuccess : cudaErrorUnsupportedLimit;
                });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  cudaDeviceCanAccessPeer_v4000_params params{can, device, peer};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceCanAccessPeer_v4000, "cudaDeviceCanAccessPeer", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!can) return cudaErrorInvalidValue;
                  if (!valid_device(device) || !valid_device(peer)) return cudaErrorInvalidDevice;
                  *can = device != peer ? 1 : 0;  // NVLink-connected HGX boards
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaProfilerStart(void) {
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000, "cudaProfilerStart", SIM_CALL_OTHER, nullptr,
                [&](ApiScope&) {
                  // As the driver's cuProfilerStart (what CUPTI clients such as NVIDIA's injection
                  // sample enable callbacks on), nested. Profiling is always on in the simulator.
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, "cuProfilerStart", SIM_CALL_OTHER, nullptr,
                              [&](ApiScope&) { return CUDA_SUCCESS; });
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaProfilerStop(void) {
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000, "cudaProfilerStop", SIM_CALL_OTHER, nullptr,
                [&](ApiScope&) {
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuProfilerStop, "cuProfilerStop", SIM_CALL_OTHER, nullptr,
                              [&](ApiScope&) { return CUDA_SUCCESS; });
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaInitDevice(int device, unsigned int device_flags, unsigned int flags) {
  cudaInitDevice_v12000_params params{device, device_flags, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaInitDevice_v12000, "cudaInitDevice", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!valid_device(device)) return cudaErrorInvalidDevice;
                  primary_context(device);
                  return cudaSuccess;
                });
}

}  // extern "C"
