// analysis/nccl_kernel_name.h: is a kernel one of NCCL's, and which collective it runs.
//
// CUPTI reports NCCL's communication kernels by their (usually mangled) device symbol. The names
// come in several families, all of which this recognises (research/cupti-facts.md section 4.3):
//   ncclDevKernel_<Coll>_...        NCCL >= 2.19 ("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24...")
//   ncclSymDevKernel_<Coll>_...     symmetric-memory kernels (2.27)
//   ncclSymkDevKernel_<Coll>_...    symmetric-memory kernels (2.28+)
//   ncclKernel_<Coll>_...           NCCL <= 2.18
//   nccl<Coll>...Kernel...          older releases ("ncclAllReduceRingLLKernel_sum_f32")
// Only the collective is parsed. The algorithm and protocol parts of the name are not: NCCL
// launches a "_RING_LL" kernel as a dispatcher for whatever protocol it tuned, so the suffix lies.
// ncclDevKernel_Generic (and any family member whose collective is not recognised) is an NCCL
// kernel of collective kGeneric: the caller may know the collective from the host call instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <gapwatch/v1/events.pb.h>

namespace gapwatch::analysis {

enum class NcclCollective : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kSendRecv,  // point to point: send, recv and their fused kernel
  kGeneric,   // an NCCL kernel whose collective the name does not tell
  // NCCL 2.28's all-to-all, gather and scatter: known from the host call (their kernel is a
  // SendRecv one, which the host call's collective then names).
  kAllToAll,
  kGather,
  kScatter,
};
inline constexpr std::size_t kNcclCollectiveCount = 10;

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "send_recv", "generic",
// "all_to_all", "gather", "scatter": the names NcclTypeStats.op uses.
std::string_view ncclCollectiveName(NcclCollective collective);

// The collective of an NCCL kernel name (mangled, demangled or plain), or nullopt when the name is
// not an NCCL kernel's.
std::optional<NcclCollective> parseNcclKernelName(std::string_view kernel_name);

inline bool isNcclKernelName(std::string_view kernel_name) {
  return parseNcclKernelName(kernel_name).has_value();
}

// The collective a host call performs; nullopt for calls that are not collectives or
// point-to-point operations (group start/end, communicator set-up and tear-down, other).
std::optional<NcclCollective> ncclCollectiveOfOp(v1::NcclOp op);

}  // namespace gapwatch::analysis
