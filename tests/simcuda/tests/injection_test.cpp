// The simulated driver runs CUDA_INJECTION64_PATH's InitializeInjection as the real driver does:
// once per process, during cuInit, so before the first runtime call returns, and early enough
// that a CUPTI subscriber made there sees that very call.
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <stdlib.h>

#include <atomic>

#include <cuda.h>
#include <cupti.h>

#include "sim_test_kernels.h"

#ifndef INJECTION_PROBE_PATH
#error "INJECTION_PROBE_PATH must name the probe library"
#endif

namespace {
template <class T>
T* probe_symbol(const char* name) {
  void* h = dlopen(INJECTION_PROBE_PATH, RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h != nullptr);
  auto* p = static_cast<T*>(dlsym(h, name));
  REQUIRE(p != nullptr);
  return p;
}
}  // namespace

TEST_CASE("InitializeInjection runs once, before the first runtime call returns", "[injection]") {
  setenv("CUDA_INJECTION64_PATH", INJECTION_PROBE_PATH, 1);
  REQUIRE(dlopen(INJECTION_PROBE_PATH, RTLD_NOW | RTLD_NOLOAD) == nullptr);  // not loaded before CUDA starts
  uint64_t before = simtest::mono_ns();
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  uint64_t after = simtest::mono_ns();
  CHECK(count >= 1);
  CHECK(probe_symbol<std::atomic<int>>("probe_initialize_calls")->load() == 1);
  uint64_t at = probe_symbol<std::atomic<uint64_t>>("probe_initialize_ns")->load();
  CHECK(at >= before);
  CHECK(at <= after);
  // A subscriber made inside InitializeInjection sees the call that started CUDA.
  CHECK(probe_symbol<std::atomic<int>>("probe_first_cbid")->load() == CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020);
}

TEST_CASE("later runtime calls and cuInit do not run it again", "[injection]") {
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 16) == cudaSuccess);
  REQUIRE(cudaFree(p) == cudaSuccess);
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CHECK(probe_symbol<std::atomic<int>>("probe_initialize_calls")->load() == 1);
  CHECK(probe_symbol<std::atomic<int>>("probe_runtime_enters")->load() >= 3);
}
