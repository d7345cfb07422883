// Which kernel names are NCCL's and which collective they run (analysis/nccl_kernel_name.h).
#include "analysis/nccl_kernel_name.h"

#include <catch2/catch.hpp>

#include <string>

using gapwatch::analysis::NcclCollective;
using gapwatch::analysis::ncclCollectiveName;
using gapwatch::analysis::ncclCollectiveOfOp;
using gapwatch::analysis::parseNcclKernelName;
namespace v1 = gapwatch::v1;

namespace {

std::string collectiveOf(const std::string& name) {
  const auto collective = parseNcclKernelName(name);
  return collective ? std::string(ncclCollectiveName(*collective)) : "not nccl";
}

}  // namespace

TEST_CASE("mangled ncclDevKernel names give their collective", "[nccl_kernel_name]") {
  CHECK(collectiveOf("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE") == "all_reduce");
  CHECK(collectiveOf("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE") == "all_reduce");
  CHECK(collectiveOf("_Z31ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE") == "all_gather");
  CHECK(collectiveOf("_Z43ncclDevKernel_ReduceScatter_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE") ==
        "reduce_scatter");
  CHECK(collectiveOf("_Z31ncclDevKernel_Broadcast_RING_LL24ncclDevKernelArgsStorageILm4096EE") == "broadcast");
  CHECK(collectiveOf("_Z36ncclDevKernel_Reduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE") == "reduce");
  CHECK(collectiveOf("_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE") == "send_recv");
}

TEST_CASE("the generic dispatcher kernel is NCCL's with the collective unknown", "[nccl_kernel_name]") {
  CHECK(collectiveOf("_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE") == "generic");
  CHECK(collectiveOf("ncclDevKernel_Generic_4") == "generic");
  // A collective a newer NCCL adds is still an NCCL kernel.
  CHECK(collectiveOf("ncclDevKernel_AlltoAllv_RING_LL") == "generic");
}

TEST_CASE("the protocol and algorithm suffix does not change the collective", "[nccl_kernel_name]") {
  CHECK(collectiveOf("ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128") == "all_reduce");
  CHECK(collectiveOf("ncclDevKernel_AllReduce_Sum_bf16_RING_SIMPLE") == "all_reduce");
  CHECK(collectiveOf("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL") == "reduce_scatter");
}

TEST_CASE("demangled signatures are parsed like mangled names", "[nccl_kernel_name]") {
  CHECK(collectiveOf("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "all_gather");
  CHECK(collectiveOf("void ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") ==
        "send_recv");
}

TEST_CASE("symmetric-memory kernels of NCCL 2.27 and 2.28 are recognised", "[nccl_kernel_name]") {
  CHECK(collectiveOf("ncclSymkDevKernel_AllReduce_RSxLDMC_AGxSTMC_sum_bf16") == "all_reduce");
  CHECK(collectiveOf("ncclSymDevKernel_AllGather_LL") == "all_gather");
  CHECK(collectiveOf("_Z40ncclSymDevKernel_ReduceScatter_LD_sum_f3219ncclSymDevArgs") == "reduce_scatter");
}

TEST_CASE("kernels of NCCL 2.18 and older are recognised", "[nccl_kernel_name]") {
  CHECK(collectiveOf("ncclKernel_AllReduce_RING_LL_Sum_float") == "all_reduce");
  CHECK(collectiveOf("ncclKernel_Broadcast_RING_LL_Sum_int8_t") == "broadcast");
  CHECK(collectiveOf("ncclAllReduceRingLLKernel_sum_f32") == "all_reduce");
  CHECK(collectiveOf("ncclReduceScatterRingLLKernel_sum_f16") == "reduce_scatter");
  CHECK(collectiveOf("ncclSendRecvKernel_copy_i8") == "send_recv");
}

TEST_CASE("compute kernels are not NCCL kernels", "[nccl_kernel_name]") {
  CHECK(collectiveOf("_Z13gemm_bf16_128PKfS0_Pf") == "not nccl");
  CHECK(collectiveOf("ampere_sgemm_128x64_nn") == "not nccl");
  CHECK(collectiveOf("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)") ==
        "not nccl");
  CHECK(collectiveOf("") == "not nccl");
  // "nccl" inside another word, and NCCL types among the parameters, do not make a kernel NCCL's.
  CHECK(collectiveOf("myncclKernel_AllReduce") == "not nccl");
  CHECK(collectiveOf("_Z10my_kernelP17ncclDevKernelArgs") == "not nccl");
  CHECK(collectiveOf("_Z9copy_commP8ncclComm") == "not nccl");
}

TEST_CASE("any kernel whose name starts with nccl counts as communication, as in HTA", "[nccl_kernel_name]") {
  CHECK(collectiveOf("ncclSomeFutureKernel") == "generic");
  CHECK(collectiveOf("_Z20ncclSomeFutureKernelv") == "generic");
}

TEST_CASE("host calls map to the collective their kernels run", "[nccl_kernel_name]") {
  CHECK(ncclCollectiveOfOp(v1::NCCL_OP_ALL_REDUCE) == NcclCollective::kAllReduce);
  CHECK(ncclCollectiveOfOp(v1::NCCL_OP_ALL_GATHER) == NcclCollective::kAllGather);
  CHECK(ncclCollectiveOfOp(v1::NCCL_OP_REDUCE_SCATTER) == NcclCollective::kReduceScatter);
  CHECK(ncclCollectiveOfOp(v1::NCCL_OP_BROADCAST) == NcclCollective::kBroadcast);
  CHECK(ncclCollectiveOfOp(v1::NCCL_OP_REDUCE) == NcclCollective::kReduce);
  CHECK(ncclCollectiveOfOp(v1::NCCL_OP_SEND) == NcclCollective::kSendRecv);
  CHECK(ncclCollectiveOfOp(v1::NCCL_OP_RECV) == NcclCollective::kSendRecv);
  CHECK_FALSE(ncclCollectiveOfOp(v1::NCCL_OP_GROUP_START).has_value());
  CHECK_FALSE(ncclCollectiveOfOp(v1::NCCL_OP_GROUP_END).has_value());
  CHECK_FALSE(ncclCollectiveOfOp(v1::NCCL_OP_COMM_INIT).has_value());
}
