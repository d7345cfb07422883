// kernel_registry.h: kernels registered and launched the way compiled CUDA code does it.
//
// gapwatch must see exactly what it would see in a real binary, so kernels are registered through
// the hidden entry points nvcc's start-up code calls (__cudaRegisterFatBinary, __cudaRegisterFunction
// per kernel, __cudaRegisterFatBinaryEnd), each with its own host-stub address, and launched through
// one of the three entry points real programs use.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

#include "scenario.h"

namespace gapwatch_sim {

class KernelRegistry {
 public:
  explicit KernelRegistry(const std::vector<KernelDef>& kernels);

  // Registers `kernels` as one module (one fat binary), as loading a compiled library would.
  void load_module(const std::vector<int>& kernels);

  // One launch of `kernel` on `stream`, running for `duration_ns` on the virtual device.
  cudaError_t launch(int kernel, LaunchEntry entry, int64_t duration_ns, cudaStream_t stream);

 private:
  // <<<>>> code looks its kernel handle up once per launch site; one site per kernel here.
  cudaKernel_t chevron_handle(int kernel, cudaError_t* error);

  const std::vector<KernelDef>& kernels_;
  std::unique_ptr<std::once_flag[]> handle_once_;
  std::vector<cudaKernel_t> handles_;
  std::vector<cudaError_t> handle_errors_;
};

}  // namespace gapwatch_sim
