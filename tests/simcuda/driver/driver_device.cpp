// Devices through the driver API. Every simulated device is the same H200-like part: 132 SMs,
// compute capability 9.0, 141 GB (143771 MiB) of HBM3e, 50 MiB of L2, 228 KiB of shared memory
// per SM. cuDeviceGetAttribute answers every CUdevice_attribute of CUDA 13's cuda.h: the values
// that describe the hardware are Hopper's, the feature flags say what an H200 SXM on a Linux
// driver supports, and attributes about other platforms (Windows handles, D3D12/Vulkan CIG,
// integrated parts) are 0.
#include <stdio.h>
#include <string.h>

#include "driver_internal.h"

namespace simcuda::driver {

size_t device_total_memory() { return size_t(143771) << 20; }

int device_attribute(CUdevice_attribute attr, bool* valid) {
  *valid = true;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;  // kHz
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
    case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: return 0;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
    case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0;  // per device: cuDeviceGetAttribute adds the ordinal
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: return 0;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 3201000;  // kHz
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_CAN_TEX2D_GATHER: return 1;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE: return 8192;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE: return 8192;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE: return 32768;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS: return 2046;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT: return 65536;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH: return 16384;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS: return 2048;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS: return 2046;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH: return 268435456;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH: return 131072;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT: return 65000;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH: return 2097120;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT: return 32768;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
    case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH: return 32768;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: return 0;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: return 2;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: return 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH: return 0;  // deprecated since CUDA 11.3
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
    case CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES: return 0;
    case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST: return 0;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
    case CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 32505856;
    case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
    case CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS: return CU_FLUSH_GPU_DIRECT_RDMA_WRITES_OPTION_HOST;
    case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING: return CU_GPU_DIRECT_RDMA_WRITES_ORDERING_OWNER;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES: return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
    case CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS: return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR: return 1;
    case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: return 4;
    case CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS: return 1;
    case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: return CU_DEVICE_NUMA_CONFIG_NONE;
    case CU_DEVICE_ATTRIBUTE_NUMA_ID: return -1;
    case CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED: return 1;
    case CU_DEVICE_ATTRIBUTE_MPS_ENABLED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return 0;
    case CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK: return 0;
    case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH: return 0;
    case CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID: return int(0x233510DE);  // H200 SXM: device 0x2335, vendor 0x10de
    case CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID: return int(0x18BE10DE);
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_MULTINODE_IPC_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_ALLOC_DMA_BUF_SUPPORTED: return 0;
    case CU_DEVICE_ATTRIBUTE_ONLY_PARTIAL_HOST_NATIVE_ATOMIC_SUPPORTED: return 0;
    default:
      *valid = false;
      return 0;
  }
}

namespace {
constexpr int kFirstPciBus = 0x18;  // device d sits on bus 0x18 + d
}

}  // namespace simcuda::driver

using namespace simcuda;
using namespace simcuda::driver;

extern "C" {

SIMCUDA_EXPORT CUresult cuDeviceGetCount(int* count) {
  cuDeviceGetCount_params params{count};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount, "cuDeviceGetCount", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!count) return CUDA_ERROR_INVALID_VALUE;
                  *count = device_count();
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  cuDeviceGet_params params{device, ordinal};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGet, "cuDeviceGet", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!device) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
                  *device = ordinal;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  cuDeviceGetName_params params{name, len, device};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetName, "cuDeviceGetName", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
                  strncpy(name, "gapwatch simulated GPU", size_t(len) - 1);
                  name[len - 1] = '\0';
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attrib, CUdevice dev) {
  cuDeviceGetAttribute_params params{value, attrib, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute, "cuDeviceGetAttribute", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!value) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  bool valid = false;
                  int v = device_attribute(attrib, &valid);
                  if (!valid) return CUDA_ERROR_INVALID_VALUE;
                  if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) v = kFirstPciBus + dev;
                  if (attrib == CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID) v = dev;
                  *value = v;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice dev) {  // cuDeviceTotalMem_v2
  cuDeviceTotalMem_v2_params params{bytes, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  *bytes = device_total_memory();
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  cuDeviceComputeCapability_params params{major, minor, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceComputeCapability, "cuDeviceComputeCapability", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> CUresult {
                  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  *major = 9;
                  *minor = 0;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {  // cuDeviceGetUuid_v2
  cuDeviceGetUuid_v2_params params{uuid, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid_v2, "cuDeviceGetUuid_v2", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  // Stable per ordinal, distinct across devices (a version-4-shaped UUID).
                  const unsigned char base[16] = {0x5a, 0x6d, 0x0e, 0x3c, 0x91, 0x2b, 0x4f, 0x17,
                                                  0x8d, 0x42, 0x67, 0x61, 0x70, 0x77, 0x00, 0x00};
                  memcpy(uuid->bytes, base, 16);
                  uuid->bytes[14] = char((dev >> 8) & 0xff);
                  uuid->bytes[15] = char(dev & 0xff);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceGetPCIBusId(char* pci_bus_id, int len, CUdevice dev) {
  cuDeviceGetPCIBusId_params params{pci_bus_id, len, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!pci_bus_id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  snprintf(pci_bus_id, size_t(len), "0000:%02x:00.0", kFirstPciBus + dev);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  cuDeviceGetProperties_params params{prop, dev};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetProperties, "cuDeviceGetProperties", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!prop) return CUDA_ERROR_INVALID_VALUE;
                  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
                  bool v = false;
                  prop->maxThreadsPerBlock = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &v);
                  prop->maxThreadsDim[0] = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &v);
                  prop->maxThreadsDim[1] = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &v);
                  prop->maxThreadsDim[2] = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &v);
                  prop->maxGridSize[0] = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &v);
                  prop->maxGridSize[1] = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &v);
                  prop->maxGridSize[2] = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &v);
                  prop->sharedMemPerBlock = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &v);
                  prop->totalConstantMemory = device_attribute(CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, &v);
                  prop->SIMDWidth = device_attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, &v);
                  prop->memPitch = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_PITCH, &v);
                  prop->regsPerBlock = device_attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &v);
                  prop->clockRate = device_attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &v);
                  prop->textureAlign = device_attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, &v);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* bus_id) {
  cuDeviceGetByPCIBusId_params params{dev, bus_id};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuDeviceGetByPCIBusId, "cuDeviceGetByPCIBusId", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!dev || !bus_id) return CUDA_ERROR_INVALID_VALUE;
                  // [domain]:[bus]:[device].[function] or [domain]:[bus]:[device], hex.
                  unsigned domain = 0, bus = 0, device = 0;
                  if (sscanf(bus_id, "%x:%x:%x", &domain, &bus, &device) != 3 || domain != 0 || device != 0)
                    return CUDA_ERROR_INVALID_DEVICE;
                  int d = int(bus) - kFirstPciBus;
                  if (!valid_device(d)) return CUDA_ERROR_INVALID_DEVICE;
                  *dev = d;
                  return CUDA_SUCCESS;
                });
}

}  // extern "C"
