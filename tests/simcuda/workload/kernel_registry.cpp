#include "kernel_registry.h"

#include <deque>

#include "simcuda/timeline.h"

// What nvcc-generated host code declares and calls; the runtime exports them but no public header
// declares all of them.
extern "C" {
void** __cudaRegisterFatBinary(void* fat_cubin);
void __cudaRegisterFatBinaryEnd(void** fat_cubin_handle);
void __cudaRegisterFunction(void** fat_cubin_handle, const char* host_fun, char* device_fun, const char* device_name,
                            int thread_limit, uint3* tid, uint3* bid, dim3* block_dim, dim3* grid_dim, int* warp_size);
unsigned __cudaPushCallConfiguration(dim3 grid_dim, dim3 block_dim, size_t shared_mem, struct CUstream_st* stream);
cudaError_t __cudaPopCallConfiguration(dim3* grid_dim, dim3* block_dim, size_t* shared_mem, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_stub);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid_dim, dim3 block_dim, void** args, size_t shared_mem,
                               cudaStream_t stream);
}

namespace gapwatch_sim {

namespace {

// The host stubs: only their addresses matter, one distinct address per kernel, alive for the
// whole process as a compiled stub function would be.
char g_host_stubs[kMaxKernels];

// The layout nvcc emits for __fatDeviceText; the simulator keeps the pointer and reads nothing.
struct FatbinWrapper {
  int magic;
  int version;
  const unsigned long long* data;
  void* filename_or_fatbins;
};
constexpr int kFatbinMagic = 0x466243b1;
const unsigned long long kEmptyFatbin[2] = {0, 0};

std::mutex g_modules_mu;
std::deque<FatbinWrapper>& fatbins() {
  static auto* modules = new std::deque<FatbinWrapper>;  // registered binaries live until exit
  return *modules;
}

// A plausible shape for the simulated device: it only reads the duration argument.
const dim3 kGrid(128, 1, 1);
const dim3 kBlock(256, 1, 1);

}  // namespace

KernelRegistry::KernelRegistry(const std::vector<KernelDef>& kernels)
    : kernels_(kernels),
      handle_once_(new std::once_flag[kernels.size() + 1]),
      handles_(kernels.size(), nullptr),
      handle_errors_(kernels.size(), cudaSuccess) {}

void KernelRegistry::load_module(const std::vector<int>& kernels) {
  if (kernels.empty()) return;
  void* wrapper;
  {
    std::lock_guard<std::mutex> lock(g_modules_mu);
    wrapper = &fatbins().emplace_back(FatbinWrapper{kFatbinMagic, 1, kEmptyFatbin, nullptr});
  }
  void** handle = __cudaRegisterFatBinary(wrapper);
  for (int k : kernels) {
    const KernelDef& def = kernels_[size_t(k)];
    __cudaRegisterFunction(handle, &g_host_stubs[k], const_cast<char*>(def.mangled.c_str()), def.mangled.c_str(), -1,
                           nullptr, nullptr, nullptr, nullptr, nullptr);
    simcuda_kernel_duration_from_argument(def.mangled.c_str());  // a scenario gives each launch's duration
  }
  __cudaRegisterFatBinaryEnd(handle);
}

cudaKernel_t KernelRegistry::chevron_handle(int kernel, cudaError_t* error) {
  std::call_once(handle_once_[size_t(kernel)], [&] {
    handle_errors_[size_t(kernel)] = __cudaGetKernel(&handles_[size_t(kernel)], &g_host_stubs[kernel]);
  });
  *error = handle_errors_[size_t(kernel)];
  return handles_[size_t(kernel)];
}

cudaError_t KernelRegistry::launch(int kernel, LaunchEntry entry, int64_t duration_ns, cudaStream_t stream) {
  int64_t duration = duration_ns;
  void* args[] = {&duration};
  const void* stub = &g_host_stubs[kernel];
  switch (entry) {
    case LaunchEntry::Chevron: {
      // kernel<<<grid, block, 0, stream>>>(...): the call site pushes the configuration, the
      // generated stub pops it and launches through the cached handle.
      if (__cudaPushCallConfiguration(kGrid, kBlock, 0, reinterpret_cast<CUstream_st*>(stream)) != 0)
        return cudaErrorInvalidConfiguration;
      dim3 grid, block;
      size_t shared_mem = 0;
      cudaStream_t popped = nullptr;
      if (cudaError_t e = __cudaPopCallConfiguration(&grid, &block, &shared_mem, &popped); e != cudaSuccess) return e;
      cudaError_t error;
      cudaKernel_t handle = chevron_handle(kernel, &error);
      if (error != cudaSuccess) return error;
      return __cudaLaunchKernel(handle, grid, block, args, shared_mem, popped);
    }
    case LaunchEntry::LaunchKernel:
      return cudaLaunchKernel(stub, kGrid, kBlock, args, 0, stream);
    case LaunchEntry::LaunchKernelEx: {
      cudaLaunchConfig_t config{};
      config.gridDim = kGrid;
      config.blockDim = kBlock;
      config.dynamicSmemBytes = 0;
      config.stream = stream;
      config.attrs = nullptr;
      config.numAttrs = 0;
      return cudaLaunchKernelExC(&config, stub, args);
    }
  }
  return cudaErrorInvalidValue;
}

}  // namespace gapwatch_sim
