// The occupancy calculator of the driver API, on the simulated H200's limits: 2048 threads, 32
// blocks, 64 K registers and 228 KiB of shared memory per SM (1 KiB reserved per block), 132 SMs.
// The simulator does not know a kernel's register or static shared memory use, so a block's cost
// is its threads (rounded up to whole warps) and its dynamic shared memory: what launch-shape
// heuristics in libraries need, not a real kernel's occupancy.
#include <algorithm>

#include "driver_internal.h"

namespace simcuda::driver {
namespace {

constexpr int kSms = 132, kThreadsPerSm = 2048, kBlocksPerSm = 32, kWarp = 32;
constexpr size_t kSharedPerSm = 233472, kReservedPerBlock = 1024;

int blocks_per_sm(const Function* f, int block_size, size_t dynamic_smem) {
  if (block_size <= 0 || block_size > 1024) return 0;
  if (dynamic_smem > size_t(f->max_dynamic_shared)) return 0;
  int threads = (block_size + kWarp - 1) / kWarp * kWarp;
  int by_threads = kThreadsPerSm / threads;
  int by_smem = int(kSharedPerSm / (dynamic_smem + kReservedPerBlock));
  return std::max(0, std::min({kBlocksPerSm, by_threads, by_smem}));
}

}  // namespace
}  // namespace simcuda::driver

using namespace simcuda;
using namespace simcuda::driver;

extern "C" {

SIMCUDA_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* num_blocks, CUfunction func, int block_size,
                                                                    size_t dynamic_smem) {
  cuOccupancyMaxActiveBlocksPerMultiprocessor_params params{num_blocks, func, block_size, dynamic_smem};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessor,
                "cuOccupancyMaxActiveBlocksPerMultiprocessor", SIM_CALL_OTHER, &params, [&](ApiScope&) -> CUresult {
                  if (!num_blocks) return CUDA_ERROR_INVALID_VALUE;
                  const Function* f = as_function(func);
                  if (!f) return CUDA_ERROR_INVALID_HANDLE;
                  *num_blocks = blocks_per_sm(f, block_size, dynamic_smem);
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* num_blocks, CUfunction func,
                                                                             int block_size, size_t dynamic_smem,
                                                                             unsigned int flags) {
  cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_params params{num_blocks, func, block_size, dynamic_smem,
                                                                     flags};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
                "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> CUresult {
                  if (!num_blocks || (flags & ~unsigned(CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)))
                    return CUDA_ERROR_INVALID_VALUE;
                  const Function* f = as_function(func);
                  if (!f) return CUDA_ERROR_INVALID_HANDLE;
                  *num_blocks = blocks_per_sm(f, block_size, dynamic_smem);
                  return CUDA_SUCCESS;
                });
}

// The block size (a multiple of the warp size, at most `limit`) with the most resident threads per
// SM, the larger one on a tie; `min_grid` is the grid that fills the device at that size.
SIMCUDA_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction func,
                                                         CUoccupancyB2DSize smem_of, size_t dynamic_smem,
                                                         int limit) {
  cuOccupancyMaxPotentialBlockSize_params params{min_grid, block_size, func, smem_of, dynamic_smem, limit};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSize, "cuOccupancyMaxPotentialBlockSize",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> CUresult {
                  if (!min_grid || !block_size) return CUDA_ERROR_INVALID_VALUE;
                  const Function* f = as_function(func);
                  if (!f) return CUDA_ERROR_INVALID_HANDLE;
                  int top = limit > 0 ? std::min(limit, 1024) : 1024;
                  int best_size = 0, best_blocks = 0, best_threads = 0;
                  for (int bs = top / kWarp * kWarp; bs >= kWarp; bs -= kWarp) {
                    size_t smem = smem_of ? smem_of(bs) : dynamic_smem;
                    int blocks = blocks_per_sm(f, bs, smem);
                    if (blocks * bs > best_threads) {
                      best_threads = blocks * bs;
                      best_size = bs;
                      best_blocks = blocks;
                    }
                  }
                  *block_size = best_size;
                  *min_grid = best_blocks * kSms;
                  return CUDA_SUCCESS;
                });
}

SIMCUDA_EXPORT CUresult cuOccupancyMaxActiveClusters(int* num_clusters, CUfunction func, const CUlaunchConfig* config) {
  cuOccupancyMaxActiveClusters_params params{num_clusters, func, config};
  return traced(CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> CUresult {
                  if (!num_clusters || !config) return CUDA_ERROR_INVALID_VALUE;
                  const Function* f = as_function(func);
                  if (!f) return CUDA_ERROR_INVALID_HANDLE;
                  unsigned cluster = 1;
                  for (unsigned i = 0; i < config->numAttrs && config->attrs; ++i)
                    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
                      const auto& d = config->attrs[i].value.clusterDim;
                      cluster = d.x * d.y * d.z;
                    }
                  if (cluster == 1 && f->required_cluster[0] > 0)
                    cluster = unsigned(f->required_cluster[0] * std::max(1, f->required_cluster[1]) *
                                       std::max(1, f->required_cluster[2]));
                  unsigned portable = f->non_portable_cluster ? 16 : 8;
                  if (!cluster || cluster > portable) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
                  int threads = int(config->blockDimX * config->blockDimY * config->blockDimZ);
                  int blocks = blocks_per_sm(f, threads, config->sharedMemBytes);
                  *num_clusters = blocks * kSms / int(cluster);
                  return CUDA_SUCCESS;
                });
}

}  // extern "C"
