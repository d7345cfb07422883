// A kernel's device duration comes from the documented model (driver/kernel_duration.cpp): a
// per-name table first, then the duration argument of kernels registered for it, then the grid
// shape. Real programs' first arguments are pointers, so the argument is never read by default.
#include <catch2/catch.hpp>
#include <stdlib.h>

#include "sim_test_kernels.h"
#include "simcuda/timeline.h"

namespace {

// Registered like nvcc's start-up code does, without the simulator's duration-argument marking.
struct PlainKernel {
  char stub = 0;
};

void register_plain(PlainKernel& k, const char* mangled) {
  static char fatbin[16];
  static void** handle = __cudaRegisterFatBinary(fatbin);
  __cudaRegisterFunction(handle, &k.stub, const_cast<char*>(mangled), mangled, -1, nullptr, nullptr, nullptr, nullptr,
                         nullptr);
}

uint64_t device_duration_of_launch(const void* stub, dim3 grid, dim3 block, void** args) {
  REQUIRE(cudaLaunchKernel(stub, grid, block, args, 0, nullptr) == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const SimDeviceOp* ops;
  size_t n = simcuda_device_ops(&ops);
  for (size_t i = n; i-- > 0;)
    if (ops[i].kind == SIM_OP_KERNEL) return ops[i].end_ns - ops[i].start_ns;
  FAIL("no kernel in the op log");
  return 0;
}

// The table is read at the first launch: set it before any CUDA call of this process.
const bool g_table_set = [] {
  setenv("SIMCUDA_KERNEL_DURATIONS", "namedKernel=40us,prefixed*=2ms,_Z7mangledv=7,badEntry=soon", 1);
  return true;
}();

}  // namespace

TEST_CASE("a real kernel's pointer argument is not read as its duration") {
  static PlainKernel k;
  register_plain(k, "_Z9vectorAddPKfS0_Pfi");
  float* device_pointer = reinterpret_cast<float*>(0x7f0000000000ull);
  void* args[] = {&device_pointer};
  // 196 blocks of 256 threads: one wave on a 132-SM device holding 8 such blocks per SM.
  CHECK(device_duration_of_launch(&k.stub, dim3(196), dim3(256), args) == 5000);
}

TEST_CASE("a kernel's duration grows with the waves its grid needs") {
  static PlainKernel k;
  register_plain(k, "_Z4wavePf");
  void* args[] = {nullptr};
  uint64_t one_wave = device_duration_of_launch(&k.stub, dim3(1056), dim3(256), args);
  uint64_t two_waves = device_duration_of_launch(&k.stub, dim3(1057), dim3(256), args);
  uint64_t big = device_duration_of_launch(&k.stub, dim3(100, 100), dim3(16, 16), args);
  CHECK(one_wave == 5000);
  CHECK(two_waves == 7000);
  CHECK(big == 3000 + 10 * 2000);  // 10,000 blocks of 256 threads: 10 waves of 1,056
}

TEST_CASE("the per-name table matches demangled names, prefixes and mangled names") {
  static PlainKernel named, prefixed, mangled;
  register_plain(named, "_Z11namedKernelPfi");
  register_plain(prefixed, "_Z14prefixedThingv");
  register_plain(mangled, "_Z7mangledv");
  void* args[] = {nullptr};
  CHECK(device_duration_of_launch(&named.stub, dim3(1), dim3(1), args) == 40000);
  CHECK(device_duration_of_launch(&prefixed.stub, dim3(1), dim3(1), args) == 2000000);
  CHECK(device_duration_of_launch(&mangled.stub, dim3(1), dim3(1), args) == 7);
}

TEST_CASE("kernels registered for it take their duration from their first argument") {
  static simtest::TestKernel k;
  simtest::register_kernel(k, "_Z12sim_durationl");
  int64_t ns = 123456;
  void* args[] = {&ns};
  CHECK(device_duration_of_launch(&k.stub, dim3(4096), dim3(1024), args) == 123456);
}
