// Modules, libraries and launches through the simulated driver API, on images nvcc built from
// driver_kernels.cu at build time (SIMCUDA_IMAGE_DIR): the kernels are found by the names the
// PTX, the cubin or the fatbin declares, an unknown name is CUDA_ERROR_NOT_FOUND, and a launch
// queues a kernel op named by the CUfunction with the launch's correlation id, as CUPTI's kernel
// record shows it. Test cases run in order (per-process state).
#include <catch2/catch.hpp>
#include <cuda.h>
#include <cupti.h>
#include <stdlib.h>
#include <string.h>

#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "simcuda/timeline.h"
#include "sim_test_log.h"

using simtest::last_call;
using simtest::op_at;

namespace {

const std::string kDir = SIMCUDA_IMAGE_DIR;
const char* const kKernels[] = {"vecAdd", "_Z5scalePffi", "_Z4fillIiEvPT_S0_", "_Z10sim_kernell",
                                "_Z11uses_helperPf"};

struct Seen {
  CUpti_CallbackId cbid;
  CUpti_ApiCallbackSite site;
  std::string symbol;
  uint32_t correlation;
};
std::mutex g_mu;
std::vector<Seen> g_seen;
std::vector<std::vector<uint8_t>> g_buffers;
CUpti_SubscriberHandle g_sub = nullptr;

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  std::lock_guard<std::mutex> lock(g_mu);
  g_seen.push_back({cbid, d->callbackSite, d->symbolName ? d->symbolName : "", d->correlationId});
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 256 * 1024;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_buffers.emplace_back(buffer, buffer + valid);
  free(buffer);
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::vector<char> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  b.push_back('\0');  // PTX handed to cuModuleLoadData must be NUL-terminated
  return b;
}

void check_module(CUmodule m) {
  for (const char* k : kKernels) {
    INFO("kernel " << k);
    CUfunction f = nullptr;
    CHECK(cuModuleGetFunction(&f, m, k) == CUDA_SUCCESS);
    const char* name = nullptr;
    if (f) {
      CHECK(cuFuncGetName(&name, f) == CUDA_SUCCESS);
      CHECK(std::string(name) == k);
    }
  }
  CUfunction f = nullptr;
  CHECK(cuModuleGetFunction(&f, m, "no_such_kernel") == CUDA_ERROR_NOT_FOUND);
  CHECK(cuModuleGetFunction(&f, m, "scale") == CUDA_ERROR_NOT_FOUND);  // the mangled name is the name
  CHECK(cuModuleGetFunction(&f, m, "_Z6helperf") == CUDA_ERROR_NOT_FOUND);  // a device function
  unsigned count = 0;
  CHECK(cuModuleGetFunctionCount(&count, m) == CUDA_SUCCESS);
  CHECK(count == 5);
  CUdeviceptr p = 0;
  size_t bytes = 0;
  CHECK(cuModuleGetGlobal(&p, &bytes, m, "counter") == CUDA_SUCCESS);
  CHECK(bytes == 4);
  CHECK(p != 0);
  CHECK(cuModuleGetGlobal(&p, &bytes, m, "table") == CUDA_SUCCESS);
  CHECK(bytes == 64);
  CHECK(cuModuleGetGlobal(&p, &bytes, m, "coeffs") == CUDA_SUCCESS);
  CHECK(bytes == 32);
  CHECK(cuModuleGetGlobal(&p, &bytes, m, "nothing") == CUDA_ERROR_NOT_FOUND);
}

CUmodule g_module = nullptr;

}  // namespace

TEST_CASE("set-up: a context and a CUPTI subscriber") {
  REQUIRE(cuInit(0) == CUDA_SUCCESS);
  CUmodule m = nullptr;
  CHECK(cuModuleLoad(&m, (kDir + "/kernels.ptx").c_str()) == CUDA_ERROR_INVALID_CONTEXT);
  CUcontext ctx = nullptr;
  REQUIRE(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
  REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  REQUIRE(cuptiSubscribe(&g_sub, on_callback, nullptr) == CUPTI_SUCCESS);
  REQUIRE(cuptiEnableDomain(1, g_sub, CUPTI_CB_DOMAIN_DRIVER_API) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
}

TEST_CASE("PTX: from a file and from memory") {
  CUmodule m = nullptr;
  REQUIRE(cuModuleLoad(&m, (kDir + "/kernels.ptx").c_str()) == CUDA_SUCCESS);
  check_module(m);
  CHECK(cuModuleUnload(m) == CUDA_SUCCESS);
  CUfunction f = nullptr;
  CHECK(cuModuleGetFunction(&f, m, "vecAdd") == CUDA_ERROR_INVALID_HANDLE);  // unloaded
  CHECK(cuModuleUnload(m) == CUDA_ERROR_INVALID_HANDLE);
  std::vector<char> ptx = file_bytes(kDir + "/kernels.ptx");
  REQUIRE(cuModuleLoadData(&m, ptx.data()) == CUDA_SUCCESS);
  check_module(m);
  char log[64] = "untouched";
  CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log, reinterpret_cast<void*>(uintptr_t(sizeof log))};
  CUmodule ex = nullptr;
  REQUIRE(cuModuleLoadDataEx(&ex, ptx.data(), 2, opts, vals) == CUDA_SUCCESS);
  check_module(ex);
  CHECK(log[0] == '\0');
}

TEST_CASE("cubin: the ELF symbol table") {
  CUmodule m = nullptr;
  REQUIRE(cuModuleLoad(&m, (kDir + "/kernels.cubin").c_str()) == CUDA_SUCCESS);
  check_module(m);
  std::vector<char> cubin = file_bytes(kDir + "/kernels.cubin");
  REQUIRE(cuModuleLoadData(&g_module, cubin.data()) == CUDA_SUCCESS);  // the ELF gives its own size
  check_module(g_module);
}

TEST_CASE("fatbin: nvcc's default, PTX only (zstd) and fully compressed") {
  for (const char* file : {"kernels.fatbin", "kernels_ptx_only.fatbin", "kernels_compressed.fatbin"}) {
    INFO(file);
    std::vector<char> fatbin = file_bytes(kDir + "/" + file);
    uint32_t magic = 0;
    memcpy(&magic, fatbin.data(), 4);
    CHECK(magic == 0xBA55ED50u);
    CUmodule m = nullptr;
    REQUIRE(cuModuleLoadFatBinary(&m, fatbin.data()) == CUDA_SUCCESS);
    check_module(m);
    CUmodule d = nullptr;
    REQUIRE(cuModuleLoadData(&d, fatbin.data()) == CUDA_SUCCESS);
    check_module(d);
    CUmodule f = nullptr;
    REQUIRE(cuModuleLoad(&f, (kDir + "/" + file).c_str()) == CUDA_SUCCESS);
    check_module(f);
  }
}

TEST_CASE("images that are none of the three are rejected") {
  CUmodule m = nullptr;
  CHECK(cuModuleLoadData(&m, "this is not a module") == CUDA_ERROR_INVALID_IMAGE);
  CHECK(cuModuleLoad(&m, (kDir + "/does_not_exist.ptx").c_str()) == CUDA_ERROR_FILE_NOT_FOUND);
  CHECK(cuModuleLoadData(&m, nullptr) == CUDA_ERROR_INVALID_VALUE);
}

TEST_CASE("cuLaunchKernel: a kernel op named by the function, with the call's correlation id") {
  simcuda_kernel_duration_from_argument("_Z10sim_kernell");
  CUfunction f = nullptr;
  REQUIRE(cuModuleGetFunction(&f, g_module, "_Z10sim_kernell") == CUDA_SUCCESS);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_seen.clear();
  }
  long ns = 40000;
  void* args[] = {&ns};
  REQUIRE(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr) == CUDA_SUCCESS);
  SimApiCall call = last_call();
  CHECK(call.kind == SIM_CALL_LAUNCH);
  CHECK(call.cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  CHECK(std::string(call.name) == "cuLaunchKernel");
  CHECK(call.blocked == 0);
  SimDeviceOp op = op_at(call.op_index);
  CHECK(op.kind == SIM_OP_KERNEL);
  CHECK(std::string(op.name) == "_Z10sim_kernell");
  CHECK(op.correlation_id == call.correlation_id);
  CHECK(op.stream == 7);
  CHECK(op.end_ns - op.start_ns == uint64_t(ns));
  {
    std::lock_guard<std::mutex> lock(g_mu);
    REQUIRE(g_seen.size() == 2);
    CHECK(g_seen[0].cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
    CHECK(g_seen[0].symbol == "_Z10sim_kernell");
    CHECK(g_seen[0].correlation == call.correlation_id);
    CHECK(g_seen[1].site == CUPTI_API_EXIT);
  }

  // The same through `extra`: the packed buffer's first bytes are the first argument.
  long packed = 25000;
  size_t size = sizeof packed;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CUstream s = nullptr;
  REQUIRE(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  REQUIRE(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, nullptr, extra) == CUDA_SUCCESS);
  SimDeviceOp op2 = op_at(last_call().op_index);
  CHECK(op2.end_ns - op2.start_ns == uint64_t(packed));
  unsigned long long sid = 0;
  REQUIRE(cuStreamGetId(s, &sid) == CUDA_SUCCESS);
  CHECK(op2.stream == sid);
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, extra) == CUDA_ERROR_INVALID_VALUE);  // both
  CHECK(cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, s, args, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, s, args, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuLaunchKernel(nullptr, 1, 1, 1, 32, 1, 1, 0, s, args, nullptr) == CUDA_ERROR_INVALID_HANDLE);

  // Dynamic shared memory over 48 KiB needs the attribute first.
  int max_dyn = 0;
  CHECK(cuFuncGetAttribute(&max_dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f) == CUDA_SUCCESS);
  CHECK(max_dyn == 48 * 1024);
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 100 * 1024, s, args, nullptr) == CUDA_ERROR_INVALID_VALUE);
  CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024) == CUDA_SUCCESS);
  CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 100 * 1024, s, args, nullptr) == CUDA_SUCCESS);
  CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, 10) == CUDA_ERROR_INVALID_VALUE);  // read-only
  int regs = 0;
  CHECK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) == CUDA_SUCCESS);
  CHECK(cuStreamSynchronize(s) == CUDA_SUCCESS);
  CHECK(cuStreamDestroy(s) == CUDA_SUCCESS);
}

TEST_CASE("cuLaunchKernelEx and cuLaunchCooperativeKernel") {
  CUfunction f = nullptr;
  REQUIRE(cuModuleGetFunction(&f, g_module, "_Z10sim_kernell") == CUDA_SUCCESS);
  long ns = 30000;
  void* args[] = {&ns};
  CUlaunchAttribute attrs[2] = {};
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[0].value.clusterDim.x = 2;
  attrs[0].value.clusterDim.y = 1;
  attrs[0].value.clusterDim.z = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attrs[1].value.priority = 0;
  CUlaunchConfig cfg{};
  cfg.gridDimX = 4, cfg.gridDimY = 1, cfg.gridDimZ = 1;
  cfg.blockDimX = 64, cfg.blockDimY = 1, cfg.blockDimZ = 1;
  cfg.attrs = attrs;
  cfg.numAttrs = 2;
  REQUIRE(cuLaunchKernelEx(&cfg, f, args, nullptr) == CUDA_SUCCESS);
  SimApiCall call = last_call();
  CHECK(call.kind == SIM_CALL_LAUNCH);
  CHECK(call.cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
  SimDeviceOp op = op_at(call.op_index);
  CHECK(std::string(op.name) == "_Z10sim_kernell");
  CHECK(op.end_ns - op.start_ns == uint64_t(ns));
  attrs[0].value.clusterDim.x = 3;  // does not divide the grid
  CHECK(cuLaunchKernelEx(&cfg, f, args, nullptr) == CUDA_ERROR_INVALID_CLUSTER_SIZE);
  CHECK(cuLaunchKernelEx(nullptr, f, args, nullptr) == CUDA_ERROR_INVALID_VALUE);

  REQUIRE(cuLaunchCooperativeKernel(f, 132, 1, 1, 1024, 1, 1, 0, nullptr, args) == CUDA_SUCCESS);
  CHECK(last_call().cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel);
  CHECK(last_call().kind == SIM_CALL_LAUNCH);
  CHECK(cuLaunchCooperativeKernel(f, 100000, 1, 1, 1024, 1, 1, 0, nullptr, args) ==
        CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  REQUIRE(cuCtxSynchronize() == CUDA_SUCCESS);
}

TEST_CASE("libraries: load, get a kernel, its function, launch") {
  std::vector<char> fatbin = file_bytes(kDir + "/kernels.fatbin");
  CUlibrary lib = nullptr;
  REQUIRE(cuLibraryLoadData(&lib, fatbin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) == CUDA_SUCCESS);
  CUkernel k = nullptr;
  REQUIRE(cuLibraryGetKernel(&k, lib, "vecAdd") == CUDA_SUCCESS);
  CHECK(cuLibraryGetKernel(&k, lib, "nope") == CUDA_ERROR_NOT_FOUND);
  REQUIRE(cuLibraryGetKernel(&k, lib, "_Z5scalePffi") == CUDA_SUCCESS);
  const char* name = nullptr;
  CHECK(cuKernelGetName(&name, k) == CUDA_SUCCESS);
  CHECK(std::string(name) == "_Z5scalePffi");
  CUfunction f = nullptr;
  REQUIRE(cuKernelGetFunction(&f, k) == CUDA_SUCCESS);
  CHECK(cuFuncGetName(&name, f) == CUDA_SUCCESS);
  CHECK(std::string(name) == "_Z5scalePffi");
  float* x = nullptr;
  float factor = 2;
  int n = 1 << 20;
  void* args[] = {&x, &factor, &n};
  REQUIRE(cuLaunchKernel(f, 4096, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr) == CUDA_SUCCESS);
  SimDeviceOp op = op_at(last_call().op_index);
  CHECK(std::string(op.name) == "_Z5scalePffi");
  CHECK(op.end_ns > op.start_ns);  // from the grid-shape model
  // A CUkernel is accepted where a CUfunction goes.
  REQUIRE(cuLaunchKernel(reinterpret_cast<CUfunction>(k), 1, 1, 1, 32, 1, 1, 0, nullptr, args, nullptr) ==
          CUDA_SUCCESS);
  CHECK(std::string(op_at(last_call().op_index).name) == "_Z5scalePffi");
  REQUIRE(cuLibraryUnload(lib) == CUDA_SUCCESS);
  CHECK(cuLibraryGetKernel(&k, lib, "vecAdd") == CUDA_ERROR_INVALID_HANDLE);

  CUlibrary from_file = nullptr;
  REQUIRE(cuLibraryLoadFromFile(&from_file, (kDir + "/kernels.cubin").c_str(), nullptr, nullptr, 0, nullptr,
                                nullptr, 0) == CUDA_SUCCESS);
  REQUIRE(cuLibraryGetKernel(&k, from_file, "_Z4fillIiEvPT_S0_") == CUDA_SUCCESS);
  CHECK(cuLibraryUnload(from_file) == CUDA_SUCCESS);
}

TEST_CASE("the occupancy calculator on the simulated H200") {
  CUfunction f = nullptr;
  REQUIRE(cuModuleGetFunction(&f, g_module, "vecAdd") == CUDA_SUCCESS);
  int blocks = 0;
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0) == CUDA_SUCCESS);
  CHECK(blocks == 8);  // 2048 threads per SM
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 32, 0) == CUDA_SUCCESS);
  CHECK(blocks == 32);  // 32 blocks per SM
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 1024, 40 * 1024) == CUDA_SUCCESS);
  CHECK(blocks == 2);
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 2048, 0) == CUDA_SUCCESS);
  CHECK(blocks == 0);  // larger than a block may be
  CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, f, 128, 0, CU_OCCUPANCY_DEFAULT) ==
        CUDA_SUCCESS);
  CHECK(blocks == 16);
  int min_grid = 0, block = 0;
  CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, f, nullptr, 0, 0) == CUDA_SUCCESS);
  CHECK(block == 1024);
  CHECK(min_grid == 2 * 132);
  CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, f, nullptr, 0, 100) == CUDA_SUCCESS);
  CHECK(block == 64);  // 32 blocks of 64 fill an SM; 21 of 96 leave 32 threads idle
  CHECK(block % 32 == 0);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = 2, attr.value.clusterDim.y = 1, attr.value.clusterDim.z = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = 264, cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 256, cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int clusters = 0;
  CHECK(cuOccupancyMaxActiveClusters(&clusters, f, &cfg) == CUDA_SUCCESS);
  CHECK(clusters == 8 * 132 / 2);
  attr.value.clusterDim.x = 16;
  CHECK(cuOccupancyMaxActiveClusters(&clusters, f, &cfg) == CUDA_ERROR_INVALID_CLUSTER_SIZE);  // not portable
}

TEST_CASE("CUPTI kernel records of driver launches name the kernel and carry the correlation id") {
  REQUIRE(cuCtxSynchronize() == CUDA_SUCCESS);
  REQUIRE(cuptiActivityFlushAll(1) == CUPTI_SUCCESS);
  int kernels = 0, named = 0;
  std::lock_guard<std::mutex> lock(g_mu);
  const SimApiCall* calls = nullptr;
  size_t ncalls = simcuda_api_calls(&calls);
  for (auto& b : g_buffers) {
    CUpti_Activity* r = nullptr;
    while (cuptiActivityGetNextRecord(b.data(), b.size(), &r) == CUPTI_SUCCESS) {
      if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
      ++kernels;
      if (k->name && std::string(k->name) == "_Z10sim_kernell") ++named;
      bool matched = false;
      for (size_t i = 0; i < ncalls; ++i)
        matched |= calls[i].correlation_id == k->correlationId && calls[i].kind == SIM_CALL_LAUNCH;
      CHECK(matched);
    }
  }
  CHECK(kernels >= 6);
  CHECK(named >= 4);
  cuptiUnsubscribe(g_sub);
}
