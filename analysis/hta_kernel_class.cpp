// analysis/hta_kernel_class.cpp: see hta_kernel_class.h.
#include "analysis/hta_kernel_class.h"

namespace gapwatch::analysis {
namespace {

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

}  // namespace

HtaKernelClass htaKernelClass(std::string_view name, HtaRelease release) {
  if (release == HtaRelease::k0_5_0) {
    const bool nccl_kernel = startsWith(name, "nccl") && name.find("Kernel", 4) != std::string_view::npos;
    if (nccl_kernel) return HtaKernelClass::kCommunication;
    if (startsWith(name, "Memcpy") || startsWith(name, "Memset") || startsWith(name, "dma")) return HtaKernelClass::kMemory;
    if (contains(name, "Memcpy") || startsWith(name, "Memset") || contains(name, "Sync")) return HtaKernelClass::kOther;
    return HtaKernelClass::kComputation;
  }
  if (startsWith(name, "nccl") || startsWith(name, "hip") || startsWith(name, "hccl") || contains(name, "ncclKernel")) {
    return HtaKernelClass::kCommunication;
  }
  if (startsWith(name, "Memcpy") || startsWith(name, "hipMemcpy") || startsWith(name, "Memset") ||
      startsWith(name, "hipMemset") || startsWith(name, "dma")) {
    return HtaKernelClass::kMemory;
  }
  // "cuda.*LaunchKernel" under re.match: starts with "cuda" and has "LaunchKernel" after it.
  const bool launch_name = startsWith(name, "cuda") && name.find("LaunchKernel", 4) != std::string_view::npos;
  if (contains(name, "Memcpy") || contains(name, "Memset") || contains(name, "dma") || contains(name, "Sync") ||
      startsWith(name, "Stream Wait Event") || launch_name || startsWith(name, "runFunction")) {
    return HtaKernelClass::kOther;
  }
  return HtaKernelClass::kComputation;
}

const char* htaKernelClassName(HtaKernelClass cls) {
  switch (cls) {
    case HtaKernelClass::kCommunication: return "COMMUNICATION";
    case HtaKernelClass::kMemory: return "MEMORY";
    case HtaKernelClass::kComputation: return "COMPUTATION";
    case HtaKernelClass::kOther: return "OTHER";
  }
  return "OTHER";
}

}  // namespace gapwatch::analysis
