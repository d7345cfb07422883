// analysis/kernel_class.h: what kind of work a kernel does, read from its name, for saying what
// dominates a GPU-bound run's busy time and the usual lever for it (docs/analysis.md, "GPU-bound").
//
// Names are all a trace or a recording holds about a kernel, and library kernels name their
// precision and kind by convention (cuBLAS "sgemm" is FP32 without tensor cores, "h1688" / "s1688"
// / "tf32" / "bf16" / "xmma" are tensor-core tiles, cuDNN "scudnn" is an FP32 convolution, Inductor
// "triton_poi" is a fused pointwise kernel). A name that follows no convention is `kOther`: the
// class says what a name shows, never a guess.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gapwatch::analysis {

enum class KernelClass : uint8_t {
  kGemmFp32 = 0,     // GEMM in FP32 without tensor cores (sgemm, simt)
  kGemmTensorCore,   // GEMM on tensor cores (fp16, bf16, tf32, fp8 tiles)
  kGemmOther,        // GEMM / GEMV whose precision the name does not say
  kConvolution,      // cuDNN and implicit-GEMM convolutions
  kAttentionFused,   // flash / memory-efficient / fused multi-head attention
  kSoftmax,          // softmax kernels (beside batched GEMMs: attention computed unfused)
  kNormalization,    // batch / layer / group / RMS norm
  kElementwise,      // pointwise, copies and indexing: memory-bound small ops
  kReduction,        // reductions
  kCommunication,    // NCCL / RCCL kernels
  kOther,
};
inline constexpr std::size_t kKernelClassCount = 11;

KernelClass classifyKernel(std::string_view name);
// "FP32 GEMM without tensor cores", for a report line.
const char* kernelClassText(KernelClass c);
// "fp32_gemm": stable, for JSON.
const char* kernelClassKey(KernelClass c);
// The usual lever when this class dominates busy time; `fp32_convolution`: the convolutions'
// names say FP32 (scudnn, sgemm).
std::string kernelClassLever(KernelClass c, bool fp32_convolution);

}  // namespace gapwatch::analysis
