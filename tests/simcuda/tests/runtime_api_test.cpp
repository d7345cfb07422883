// The simulated runtime's start-up queries, event timing, device flags and host memory behave as
// the CUDA runtime API reference documents them, with H200-like device values; every call is
// traced (CUPTI runtime callback id, API log entry of the right kind).
#include <catch2/catch.hpp>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <string.h>

#include <string>
#include <vector>

#include "sim_test_kernels.h"
#include "sim_test_log.h"
#include "simcuda/timeline.h"

extern "C" void __cudaRegisterVar(void** fat_cubin, char* host_var, char* device_address, const char* device_name,
                                  int ext, size_t size, int constant, int global);

using simtest::launch;
using simtest::last_op;
using simtest::last_call;

namespace {

simtest::TestKernel& kernel() {
  static simtest::TestKernel k;
  static bool once = (simtest::register_kernel(k, "_Z11rt_api_kernv"), true);
  (void)once;
  return k;
}

constexpr int64_t kMs = 1000000;

}  // namespace

TEST_CASE("device properties and attributes describe an H200 and agree with each other", "[runtime][properties]") {
  cudaDeviceProp p;
  REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceProperties_v12000);
  CHECK(last_call().kind == SIM_CALL_OTHER);
  CHECK(std::string(p.name).find("H200") != std::string::npos);
  CHECK(p.major == 9);
  CHECK(p.minor == 0);
  CHECK(p.multiProcessorCount == 132);
  CHECK(p.warpSize == 32);
  CHECK(p.maxThreadsPerBlock == 1024);
  CHECK(p.maxThreadsPerMultiProcessor == 2048);
  CHECK(p.totalGlobalMem >= size_t(140) << 30);  // "141 GB": 143771 MiB, as nvidia-smi shows an H200
  CHECK(p.totalGlobalMem < size_t(141) << 30);
  CHECK(p.canMapHostMemory == 1);
  CHECK(p.unifiedAddressing == 1);
  CHECK(p.concurrentKernels == 1);
  CHECK(p.asyncEngineCount == 3);
  CHECK(p.managedMemory == 1);

  int v = -1;
  REQUIRE(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000);
  CHECK(v == p.multiProcessorCount);
  REQUIRE(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  CHECK(v == p.major);
  REQUIRE(cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0) == cudaSuccess);
  CHECK(v > 1000000);  // kHz: samples compute GFLOPS from it
  REQUIRE(cudaDeviceGetAttribute(&v, cudaDevAttrAsyncEngineCount, 0) == cudaSuccess);
  CHECK(v == p.asyncEngineCount);
  // Every non-reserved attribute has a value; reserved ones and values outside the enum do not.
  for (int a : {1, 16, 19, 31, 40, 41, 75, 76, 83, 106, 120, 147}) {
    INFO("attribute " << a);
    CHECK(cudaDeviceGetAttribute(&v, cudaDeviceAttr(a), 0) == cudaSuccess);
  }
  CHECK(cudaDeviceGetAttribute(&v, cudaDeviceAttr(92), 0) == cudaErrorInvalidValue);
  CHECK(cudaDeviceGetAttribute(&v, cudaDeviceAttr(100000), 0) == cudaErrorInvalidValue);
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 7) == cudaErrorInvalidDevice);
  CHECK(cudaGetDeviceProperties(&p, -1) == cudaErrorInvalidDevice);
  cudaGetLastError();
}

TEST_CASE("start-up queries: count, choose, versions, memory, limits, PCI id, priorities", "[runtime][properties]") {
  int n = 0, d = -1;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  CHECK(n >= 1);
  cudaDeviceProp want;
  memset(&want, 0, sizeof(want));
  want.major = 9;
  REQUIRE(cudaChooseDevice(&d, &want) == cudaSuccess);
  CHECK(d == 0);
  int version = 0;
  REQUIRE(cudaDriverGetVersion(&version) == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020);
  CHECK(version >= 13000);
  REQUIRE(cudaRuntimeGetVersion(&version) == cudaSuccess);
  CHECK(version == CUDART_VERSION);

  size_t free_before = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, size_t(1) << 30) == cudaSuccess);
  size_t free_after = 0;
  REQUIRE(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
  CHECK(free_before - free_after == size_t(1) << 30);
  REQUIRE(cudaFree(dev) == cudaSuccess);

  char bus[32];
  REQUIRE(cudaDeviceGetPCIBusId(bus, sizeof(bus), 0) == cudaSuccess);
  int back = -1;
  REQUIRE(cudaDeviceGetByPCIBusId(&back, bus) == cudaSuccess);
  CHECK(back == 0);

  int least = 1, greatest = 1;
  REQUIRE(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
  CHECK(least == 0);
  CHECK(greatest < least);
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest - 10) == cudaSuccess);
  int prio = 0;
  REQUIRE(cudaStreamGetPriority(s, &prio) == cudaSuccess);
  CHECK(prio == greatest);  // clamped into the range
  unsigned flags = 0;
  REQUIRE(cudaStreamGetFlags(s, &flags) == cudaSuccess);
  CHECK(flags == cudaStreamNonBlocking);

  REQUIRE(cudaDeviceSetCacheConfig(cudaFuncCachePreferL1) == cudaSuccess);
  REQUIRE(cudaFuncSetCacheConfig(&kernel().stub, cudaFuncCachePreferShared) == cudaSuccess);
  REQUIRE(cudaFuncSetAttribute(&kernel().stub, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000) == cudaSuccess);
  cudaFuncAttributes fa;
  REQUIRE(cudaFuncGetAttributes(&fa, &kernel().stub) == cudaSuccess);
  CHECK(fa.maxDynamicSharedSizeBytes == 100000);
  CHECK(fa.maxThreadsPerBlock == 1024);
  static char not_a_kernel;
  CHECK(cudaFuncGetAttributes(&fa, &not_a_kernel) == cudaErrorInvalidDeviceFunction);
  int blocks = 0;
  REQUIRE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, &kernel().stub, 256, 0) == cudaSuccess);
  CHECK(blocks == 8);  // 2048 threads per SM / 256
  REQUIRE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, &kernel().stub, 1024, 0) == cudaSuccess);
  CHECK(blocks == 2);
  cudaGetLastError();
}

TEST_CASE("error names and strings cover every error code", "[runtime][errors]") {
  CHECK(std::string(cudaGetErrorName(cudaSuccess)) == "cudaSuccess");
  CHECK(std::string(cudaGetErrorString(cudaSuccess)) == "no error");
  CHECK(std::string(cudaGetErrorString(cudaErrorInvalidValue)) == "invalid argument");
  CHECK(std::string(cudaGetErrorName(cudaErrorStreamCaptureUnjoined)) == "cudaErrorStreamCaptureUnjoined");
  CHECK(std::string(cudaGetErrorName(cudaErrorTensorMemoryLeak)) == "cudaErrorTensorMemoryLeak");
  CHECK(std::string(cudaGetErrorString(cudaError_t(123456))) == "unrecognized error code");
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGetErrorString_v3020);
  // Peek does not clear, Get does.
  static char not_a_kernel;
  int64_t ns = 1;
  void* args[] = {&ns};
  CHECK(cudaLaunchKernel(&not_a_kernel, dim3(1), dim3(1), args, 0, nullptr) == cudaErrorInvalidDeviceFunction);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidDeviceFunction);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidDeviceFunction);
  CHECK(cudaGetLastError() == cudaErrorInvalidDeviceFunction);
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("cudaEventElapsedTime is the difference of the markers' device times", "[runtime][events]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  cudaEvent_t a, b;
  REQUIRE(cudaEventCreate(&a) == cudaSuccess);
  REQUIRE(cudaEventCreate(&b) == cudaSuccess);
  REQUIRE(cudaEventRecord(a, s) == cudaSuccess);
  const SimDeviceOp& ma = last_op();
  launch(kernel(), 200 * kMs, s);
  REQUIRE(cudaEventRecord(b, s) == cudaSuccess);
  const SimDeviceOp& mb = last_op();
  float ms = -1;
  // Recorded but not complete yet (the kernel runs 200 ms, far longer than the host needs to get
  // from the record to the query even on a loaded machine): not ready.
  CHECK(cudaEventElapsedTime(&ms, a, b) == cudaErrorNotReady);
  REQUIRE(cudaEventSynchronize(b) == cudaSuccess);
  REQUIRE(cudaEventElapsedTime(&ms, a, b) == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventElapsedTime_v12080);
  CHECK(last_call().kind == SIM_CALL_OTHER);
  CHECK(last_call().blocked == 0);
  double expect = double(mb.start_ns - ma.start_ns) / 1e6;
  CHECK(ms == Approx(expect).epsilon(1e-6));
  CHECK(ms >= 200.0f);
  float back = 0;
  REQUIRE(cudaEventElapsedTime(&back, b, a) == cudaSuccess);
  CHECK(back == Approx(-expect).epsilon(1e-6));

  cudaEvent_t never, untimed;
  REQUIRE(cudaEventCreate(&never) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, a, never) == cudaErrorInvalidResourceHandle);
  REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(untimed, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, a, untimed) == cudaErrorInvalidResourceHandle);
  CHECK(cudaEventElapsedTime(nullptr, a, b) == cudaErrorInvalidValue);
  cudaEvent_t bad;
  CHECK(cudaEventCreateWithFlags(&bad, cudaEventInterprocess) == cudaErrorInvalidValue);
  cudaGetLastError();
}

TEST_CASE("a blocking-sync event's synchronize waits for its marker", "[runtime][events]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  cudaEvent_t e;
  REQUIRE(cudaEventCreateWithFlags(&e, cudaEventBlockingSync) == cudaSuccess);
  launch(kernel(), 5 * kMs, s);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
  uint64_t marker_end = last_op().end_ns;
  REQUIRE(cudaEventSynchronize(e) == cudaSuccess);
  CHECK(simtest::mono_ns() >= marker_end);
  CHECK(last_call().blocked == 1);
  CHECK(last_call().waited_until_ns == marker_end);
}

TEST_CASE("profiler start/stop and device flags", "[runtime][flags]") {
  REQUIRE(cudaProfilerStart() == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
  REQUIRE(cudaProfilerStop() == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
  REQUIRE(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync | cudaDeviceMapHost) == cudaSuccess);
  unsigned flags = 0;
  REQUIRE(cudaGetDeviceFlags(&flags) == cudaSuccess);
  CHECK((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync);
  CHECK((flags & cudaDeviceMapHost) != 0);
  CHECK(cudaSetDeviceFlags(0x1000000) == cudaErrorInvalidValue);
  REQUIRE(cudaSetDeviceFlags(cudaDeviceScheduleAuto) == cudaSuccess);
  cudaGetLastError();
}

TEST_CASE("registered host memory counts as pinned; mapped memory's device pointer is its host pointer",
          "[runtime][memory]") {
  std::vector<char> buf(1 << 20);
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, buf.size()) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(dev, buf.data(), buf.size(), cudaMemcpyHostToDevice, s) == cudaSuccess);
  CHECK(last_op().src_kind == SIM_MEM_PAGEABLE);
  CHECK(last_call().blocked == 1);
  REQUIRE(cudaHostRegister(buf.data(), buf.size(), cudaHostRegisterDefault) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_HOST_ALLOC);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaHostRegister_v4000);
  CHECK(cudaHostRegister(buf.data() + 4096, 4096, 0) == cudaErrorHostMemoryAlreadyRegistered);
  REQUIRE(cudaMemcpyAsync(dev, buf.data() + 100, 1000, cudaMemcpyHostToDevice, s) == cudaSuccess);
  CHECK(last_op().src_kind == SIM_MEM_PINNED);
  CHECK(last_call().blocked == 0);
  void* mapped = nullptr;
  REQUIRE(cudaHostGetDevicePointer(&mapped, buf.data(), 0) == cudaSuccess);
  CHECK(mapped == buf.data());
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaHostUnregister(buf.data()) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_HOST_FREE);
  CHECK(cudaHostUnregister(buf.data()) == cudaErrorHostMemoryNotRegistered);
  CHECK(cudaHostGetDevicePointer(&mapped, buf.data(), 0) == cudaErrorInvalidValue);

  void* host = nullptr;
  REQUIRE(cudaHostAlloc(&host, 4096, cudaHostAllocMapped | cudaHostAllocWriteCombined) == cudaSuccess);
  unsigned flags = 0;
  REQUIRE(cudaHostGetFlags(&flags, host) == cudaSuccess);
  CHECK((flags & cudaHostAllocMapped) != 0);
  CHECK((flags & cudaHostAllocWriteCombined) != 0);
  REQUIRE(cudaHostGetDevicePointer(&mapped, host, 0) == cudaSuccess);
  CHECK(mapped == host);
  CHECK(cudaHostAlloc(&host, 16, 0x80) == cudaErrorInvalidValue);
  REQUIRE(cudaFreeHost(mapped) == cudaSuccess);

  int* managed = nullptr;
  REQUIRE(cudaMallocManaged(reinterpret_cast<void**>(&managed), 4096, cudaMemAttachGlobal) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_MALLOC);
  managed[10] = 42;  // host-accessible
  REQUIRE(cudaMemcpy(dev, managed, 4096, cudaMemcpyDefault) == cudaSuccess);
  CHECK(last_op().src_kind == SIM_MEM_MANAGED);
  CHECK(last_op().copy_kind == SIM_COPY_D2D);
  REQUIRE(cudaFree(managed) == cudaSuccess);
  REQUIRE(cudaFree(dev) == cudaSuccess);
  cudaGetLastError();
}

TEST_CASE("device variables: register, copy to and from the symbol, its address", "[runtime][memory]") {
  static float coefficients[64];
  static char fatbin[8];
  static void** handle = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterVar(handle, reinterpret_cast<char*>(coefficients), const_cast<char*>("coefficients"), "coefficients",
                    0, sizeof(coefficients), 1, 0);
  float host[64] = {1};
  REQUIRE(cudaMemcpyToSymbol(coefficients, host, sizeof(host)) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_MEMCPY);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020);
  CHECK(last_op().copy_kind == SIM_COPY_H2D);
  CHECK(last_op().dst_kind == SIM_MEM_DEVICE);
  CHECK(last_op().bytes == sizeof(host));
  REQUIRE(cudaMemcpyFromSymbol(host, coefficients, 16, 8) == cudaSuccess);
  CHECK(last_op().copy_kind == SIM_COPY_D2H);
  CHECK(last_op().bytes == 16);
  CHECK(cudaMemcpyToSymbol(coefficients, host, sizeof(host), 4) == cudaErrorInvalidValue);
  static int not_a_symbol;
  CHECK(cudaMemcpyToSymbol(&not_a_symbol, host, 4) == cudaErrorInvalidSymbol);
  void* address = nullptr;
  REQUIRE(cudaGetSymbolAddress(&address, coefficients) == cudaSuccess);
  size_t size = 0;
  REQUIRE(cudaGetSymbolSize(&size, coefficients) == cudaSuccess);
  CHECK(size == sizeof(coefficients));
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 1 << 16) == cudaSuccess);
  REQUIRE(cudaMemcpy2D(dev, 256, host, 64, 64, 4, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(last_op().bytes == 256);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020);
  CHECK(cudaMemcpy2D(dev, 32, host, 64, 64, 4, cudaMemcpyHostToDevice) == cudaErrorInvalidPitchValue);
  REQUIRE(cudaFree(dev) == cudaSuccess);
  cudaGetLastError();
}

extern "C" cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);

TEST_CASE("pointer attributes, stream-ordered allocation, pitched allocation, peers, per-thread forms",
          "[runtime][memory]") {
  void* dev = nullptr;
  void* pinned = nullptr;
  REQUIRE(cudaMalloc(&dev, 4096) == cudaSuccess);
  REQUIRE(cudaMallocHost(&pinned, 4096) == cudaSuccess);
  std::vector<char> pageable(64);
  cudaPointerAttributes a;
  REQUIRE(cudaPointerGetAttributes(&a, dev) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeDevice);
  CHECK(a.devicePointer == dev);
  REQUIRE(cudaPointerGetAttributes(&a, pinned) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeHost);
  CHECK(a.devicePointer == pinned);
  REQUIRE(cudaPointerGetAttributes(&a, pageable.data()) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeUnregistered);
  CHECK(a.devicePointer == nullptr);

  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  launch(kernel(), 200 * kMs, s);
  void* async_mem = nullptr;
  uint64_t before = simtest::mono_ns();
  REQUIRE(cudaMallocAsync(&async_mem, 1 << 20, s) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_MALLOC);
  CHECK(last_call().blocked == 0);  // stream-ordered: no device synchronisation
  CHECK(simtest::mono_ns() - before < uint64_t(200 * kMs));
  REQUIRE(cudaPointerGetAttributes(&a, async_mem) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeDevice);
  REQUIRE(cudaFreeAsync(async_mem, s) == cudaSuccess);
  CHECK(cudaFreeAsync(async_mem, s) == cudaErrorInvalidValue);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);

  void* pitched = nullptr;
  size_t pitch = 0;
  REQUIRE(cudaMallocPitch(&pitched, &pitch, 1000, 10) == cudaSuccess);
  CHECK(pitch >= 1000);
  CHECK(pitch % 512 == 0);
  REQUIRE(cudaMemcpyPeer(dev, 0, pitched, 0, 1024) == cudaSuccess);
  CHECK(last_op().copy_kind == SIM_COPY_D2D);
  CHECK(cudaDeviceEnablePeerAccess(0, 0) == cudaErrorInvalidDevice);  // not with itself
  CHECK(cudaDeviceDisablePeerAccess(0) == cudaErrorPeerAccessNotEnabled);

  // The per-thread default stream form queues on this thread's own stream, not the legacy one.
  REQUIRE(cudaMemcpy_ptds(dev, pinned, 4096, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000);
  CHECK(last_op().stream != 7);
  REQUIRE(cudaFree(pitched) == cudaSuccess);
  REQUIRE(cudaFreeHost(pinned) == cudaSuccess);
  REQUIRE(cudaFree(dev) == cudaSuccess);
  cudaGetLastError();
}
