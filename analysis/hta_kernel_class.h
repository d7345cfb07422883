// analysis/hta_kernel_class.h: HTA's class of a piece of GPU work (communication, memory,
// computation, other), by its name, as HTA's temporal breakdown and overlap analyses decide it.
//
// HTA matches kernel names against regular expressions (hta/common/types.py, 0.6.x; quoted in
// ../shared/research/profiler-anchors.md section 2). They are all prefix or substring tests, so
// they are written out here as such: no <regex> on a path that runs for every kernel, and the
// exact rule reads in one place. Python's re.match anchors at the start; a leading ".*" makes a
// substring test.
#pragma once

#include "analysis/analysis_result.h"

#include <cstdint>
#include <string_view>

namespace gapwatch::analysis {

enum class HtaKernelClass : uint8_t { kCommunication, kMemory, kComputation, kOther };

// HTA 0.6.1 (hta/common/types.py):
//   COMM: (^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)
//   MEMORY: (^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)
//   COMPUTATION: what matches neither, nor any of (^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|
//     (^Stream Wait Event)|(cuda.*LaunchKernel)|(^runFunction)|(^hip)
// HTA 0.5.0 (hta/utils/utils.py):
//   COMM: ^nccl.*Kernel
//   MEMORY: (^Memcpy)|(^Memset)|(^dma)
//   COMPUTATION: what matches neither, nor (^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync), which
//     by the regex's precedence is: nccl...Kernel, Memcpy anywhere, Memset at the start, Sync
//     anywhere. So "Stream Wait Event" records are computation under 0.5.0.
// OTHER: the rest (e.g. the names of sync records, "Stream Sync", "Context Sync").
HtaKernelClass htaKernelClass(std::string_view name, HtaRelease release = HtaRelease::k0_6_1);

const char* htaKernelClassName(HtaKernelClass cls);  // "COMMUNICATION", "MEMORY", ...

}  // namespace gapwatch::analysis
