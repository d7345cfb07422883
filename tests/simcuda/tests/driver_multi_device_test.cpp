// The driver API with two simulated devices (SIMCUDA_DEVICES=2, set before cuInit): each has its
// own identity, making a context on device 1 current makes device 1 the thread's device, and the
// work and memory of that context land on device 1.
#include <catch2/catch.hpp>
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "simcuda/timeline.h"
#include "sim_test_log.h"

using simtest::last_call;
using simtest::op_at;

namespace {

}  // namespace

TEST_CASE("two devices: identities, contexts, memory and work per device") {
  setenv("SIMCUDA_DEVICES", "2", 1);
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  int count = 0;
  REQUIRE(cuDeviceGetCount(&count) == CUDA_SUCCESS);
  REQUIRE(count == 2);
  CUuuid u0{}, u1{};
  CHECK(cuDeviceGetUuid(&u0, 0) == CUDA_SUCCESS);
  CHECK(cuDeviceGetUuid(&u1, 1) == CUDA_SUCCESS);
  CHECK(memcmp(u0.bytes, u1.bytes, sizeof u0.bytes) != 0);
  char b0[32], b1[32];
  CHECK(cuDeviceGetPCIBusId(b0, sizeof b0, 0) == CUDA_SUCCESS);
  CHECK(cuDeviceGetPCIBusId(b1, sizeof b1, 1) == CUDA_SUCCESS);
  CHECK(std::string(b0) != std::string(b1));
  int bus = 0;
  CHECK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1) == CUDA_SUCCESS);
  char want[32];
  snprintf(want, sizeof want, "0000:%02x:00.0", bus);
  CHECK(std::string(b1) == want);

  CUcontext p0 = nullptr, p1 = nullptr;
  REQUIRE(cuDevicePrimaryCtxRetain(&p0, 0) == CUDA_SUCCESS);
  REQUIRE(cuDevicePrimaryCtxRetain(&p1, 1) == CUDA_SUCCESS);
  CHECK(p0 != p1);
  REQUIRE(cuCtxSetCurrent(p1) == CUDA_SUCCESS);
  CUdevice dev = -1;
  CHECK(cuCtxGetDevice(&dev) == CUDA_SUCCESS);
  CHECK(dev == 1);
  CUdeviceptr d = 0;
  REQUIRE(cuMemAlloc(&d, 1 << 20) == CUDA_SUCCESS);
  int ordinal = -1;
  CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d) == CUDA_SUCCESS);
  CHECK(ordinal == 1);
  CUcontext owner = nullptr;
  CHECK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d) == CUDA_SUCCESS);
  CHECK(owner == p1);
  REQUIRE(cuMemsetD8(d, 0, 1 << 20) == CUDA_SUCCESS);
  CHECK(op_at(last_call().op_index).device == 1);

  // A context of its own on device 0, pushed: work goes to device 0; popped: back to device 1.
  CUcontext own = nullptr;
  REQUIRE(cuCtxCreate(&own, nullptr, 0, 0) == CUDA_SUCCESS);
  CHECK(cuCtxGetDevice(&dev) == CUDA_SUCCESS);
  CHECK(dev == 0);
  CUdeviceptr d0 = 0;
  REQUIRE(cuMemAlloc(&d0, 4096) == CUDA_SUCCESS);
  REQUIRE(cuMemsetD8Async(d0, 0, 4096, nullptr) == CUDA_SUCCESS);
  CHECK(op_at(last_call().op_index).device == 0);
  CUstream s = nullptr;
  REQUIRE(cuStreamCreate(&s, 0) == CUDA_SUCCESS);
  CUcontext sctx = nullptr;
  CHECK(cuStreamGetCtx(s, &sctx) == CUDA_SUCCESS);
  CHECK(sctx == own);
  REQUIRE(cuCtxPopCurrent(nullptr) == CUDA_SUCCESS);
  CHECK(cuCtxGetDevice(&dev) == CUDA_SUCCESS);
  CHECK(dev == 1);
  REQUIRE(cuMemsetD8Async(d, 0, 4096, nullptr) == CUDA_SUCCESS);
  CHECK(op_at(last_call().op_index).device == 1);
  CHECK(cuCtxSynchronize() == CUDA_SUCCESS);

  // Peer access between the two devices' contexts.
  int can = 0;
  CHECK(cuDeviceCanAccessPeer(&can, 1, 0) == CUDA_SUCCESS);
  CHECK(can == 1);
  CHECK(cuCtxEnablePeerAccess(p0, 0) == CUDA_SUCCESS);  // from p1, current
  CHECK(cuCtxEnablePeerAccess(p0, 0) == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  CHECK(cuCtxEnablePeerAccess(p1, 0) == CUDA_ERROR_INVALID_DEVICE);  // its own device
  CHECK(cuCtxDisablePeerAccess(p0) == CUDA_SUCCESS);
  CHECK(cuCtxDisablePeerAccess(p0) == CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  CUdevice by_bus = -1;
  CHECK(cuDeviceGetByPCIBusId(&by_bus, b1) == CUDA_SUCCESS);
  CHECK(by_bus == 1);
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
  CHECK(cuCtxDestroy(own) == CUDA_SUCCESS);
  CHECK(cuMemFree(d) == CUDA_SUCCESS);
  CHECK(cuMemFree(d0) == CUDA_SUCCESS);
}
