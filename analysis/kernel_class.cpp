// analysis/kernel_class.cpp: see kernel_class.h. The name conventions are cuBLAS's, cuDNN's,
// CUTLASS's, NCCL's and Inductor's, as they appear in profiler traces.
#include "analysis/kernel_class.h"

#include <array>
#include <cctype>

namespace gapwatch::analysis {
namespace {

bool hasAny(const std::string& lower, std::initializer_list<const char*> parts) {
  for (const char* p : parts) {
    if (lower.find(p) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

KernelClass classifyKernel(std::string_view name) {
  std::string lower(name.substr(0, 512));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (hasAny(lower, {"nccl", "rccl"})) return KernelClass::kCommunication;
  if (hasAny(lower, {"flash", "fmha", "attention", "attn"})) return KernelClass::kAttentionFused;
  if (hasAny(lower, {"softmax"})) return KernelClass::kSoftmax;
  // Convolutions before GEMMs: cuDNN's implicit-GEMM kernels name both.
  if (hasAny(lower, {"conv", "cudnn", "winograd", "fprop", "dgrad", "wgrad", "implicit_gemm"})) {
    return KernelClass::kConvolution;
  }
  if (hasAny(lower, {"gemm", "gemv", "matmul", "nvjet", "cublas", "xmma", "triton_mm", "triton_tem", "_bmm"})) {
    // Tensor-core tiles and input types, in cuBLAS, CUTLASS and cuBLASLt names.
    if (hasAny(lower, {"h884", "h1688", "h16816", "s1688", "s16816", "i8816", "i16832", "tensorop", "tf32", "bf16",
                       "f16", "fp16", "half", "hmma", "wgmma", "e4m3", "e5m2", "fp8", "nvjet", "sm90_xmma",
                       "sm80_xmma", "sm100"})) {
      return KernelClass::kGemmTensorCore;
    }
    if (hasAny(lower, {"sgemm", "simt", "f32f32_f32", "fp32"})) return KernelClass::kGemmFp32;
    return KernelClass::kGemmOther;
  }
  if (hasAny(lower, {"batch_norm", "batchnorm", "layer_norm", "layernorm", "group_norm", "groupnorm", "rms_norm",
                     "rmsnorm", "bn_fw", "bn_bw", "welford"})) {
    return KernelClass::kNormalization;
  }
  if (hasAny(lower, {"reduce", "triton_red", "triton_per", "cub::", "scan", "argmax", "topk", "sort"})) {
    return KernelClass::kReduction;
  }
  if (hasAny(lower, {"elementwise", "vectorized", "unrolled", "triton_poi", "pointwise", "copy", "fill", "index",
                     "scatter", "gather", "catarray", "cat_", "transpose", "permute", "where", "clamp", "dropout",
                     "relu", "gelu", "silu", "sigmoid", "tanh", "foreach", "adam", "sgd"})) {
    return KernelClass::kElementwise;
  }
  return KernelClass::kOther;
}

namespace {
struct ClassInfo {
  const char* key;
  const char* text;
};
constexpr std::array<ClassInfo, kKernelClassCount> kInfo{{
    {"fp32_gemm", "FP32 GEMMs without tensor cores"},
    {"tensor_core_gemm", "GEMMs on tensor cores"},
    {"gemm", "GEMMs (precision not in the names)"},
    {"convolution", "convolutions"},
    {"fused_attention", "fused attention"},
    {"softmax", "softmax"},
    {"normalization", "normalization"},
    {"elementwise", "elementwise and copy kernels"},
    {"reduction", "reductions"},
    {"communication", "NCCL communication"},
    {"other", "other kernels"},
}};
}  // namespace

const char* kernelClassText(KernelClass c) { return kInfo[static_cast<std::size_t>(c)].text; }
const char* kernelClassKey(KernelClass c) { return kInfo[static_cast<std::size_t>(c)].key; }

std::string kernelClassLever(KernelClass c, bool fp32_convolution) {
  switch (c) {
    case KernelClass::kGemmFp32:
      return "Run the GEMMs on tensor cores: torch.set_float32_matmul_precision(\"high\") (TF32) or "
             "torch.autocast(\"cuda\", dtype=torch.bfloat16).";
    case KernelClass::kGemmTensorCore:
      return "The GEMMs already use tensor cores: the gain is in their shapes (dimensions multiples of 16, a "
             "larger batch), fewer FLOPs, or FP8 where the GPU has it.";
    case KernelClass::kGemmOther:
      return "Check the GEMMs' dtype: FP32 GEMMs gain most from TF32 (torch.set_float32_matmul_precision(\"high\")) "
             "or bf16 autocast; on tensor cores, from their shapes (multiples of 16, a larger batch).";
    case KernelClass::kConvolution:
      return fp32_convolution
                 ? "The convolutions run in FP32: autocast to bf16 / fp16, channels_last memory format, and "
                   "torch.backends.cudnn.benchmark = True for fixed shapes."
                 : "Convolutions: channels_last memory format, torch.backends.cudnn.benchmark = True for fixed "
                   "shapes, autocast to bf16 / fp16 where they are still FP32.";
    case KernelClass::kAttentionFused:
      return "Attention is already fused: the gain is in its shapes (sequence packing, less padding) or FP8 "
             "attention where the GPU has it.";
    case KernelClass::kSoftmax:
      return "Softmax beside batched GEMMs is attention computed unfused: "
             "torch.nn.functional.scaled_dot_product_attention runs it in one fused kernel.";
    case KernelClass::kNormalization:
    case KernelClass::kElementwise:
    case KernelClass::kReduction:
      return "Memory-bound small kernels: fuse them with torch.compile; fused or foreach optimizers "
             "(fused=True); fused normalization kernels.";
    case KernelClass::kCommunication:
      return "Communication takes the GPU's time: overlap it with compute (DDP bucketing, FSDP prefetch), send "
             "fewer bytes (bf16 gradients, compression), or a faster interconnect.";
    case KernelClass::kOther:
      break;
  }
  return "Look at the kernels above: their names say what the GPU spends its time on.";
}

}  // namespace gapwatch::analysis
