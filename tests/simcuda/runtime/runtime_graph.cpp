// CUDA graphs, as PyTorch's CUDA graphs and torch.compile(mode="reduce-overhead") use them:
// capture a stream's launches, instantiate, then replay with one cudaGraphLaunch. Only the
// captured stream's own order is kept (a linear chain), which is what single-stream capture gives.
// Every kernel of a replay carries the graph launch's correlation id and the graph's id, as CUPTI
// reports graph kernels.
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime_internal.h"

namespace simcuda::runtime {
namespace {

struct Graph {
  std::vector<OpRequest> nodes;
};
struct GraphExec {
  std::vector<OpRequest> nodes;
  uint32_t id;
};

std::mutex g_capture_mu;
std::unordered_map<Stream*, Graph*>& capturing() {
  static auto* map = new std::unordered_map<Stream*, Graph*>;
  return *map;
}
uint32_t g_next_graph_id = 1;

}  // namespace

bool capture_if_active(Stream* stream, const OpRequest& request) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  auto it = capturing().find(stream);
  if (it == capturing().end()) return false;
  it->second->nodes.push_back(request);
  return true;
}

bool stream_is_capturing(Stream* stream) {
  std::lock_guard<std::mutex> lock(g_capture_mu);
  return capturing().count(stream) != 0;
}

}  // namespace simcuda::runtime

using namespace simcuda;
using namespace simcuda::runtime;

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t handle, enum cudaStreamCaptureMode mode) {
  cudaStreamBeginCapture_v10000_params params{handle, mode};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, "cudaStreamBeginCapture", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  Stream* stream = resolve_stream(handle, current_device());
                  if (stream == legacy_stream(current_device())) return cudaErrorStreamCaptureUnsupported;
                  std::lock_guard<std::mutex> lock(g_capture_mu);
                  if (capturing().count(stream)) return cudaErrorIllegalState;
                  capturing()[stream] = new Graph;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* graph) {
  cudaStreamEndCapture_v10000_params params{handle, graph};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, "cudaStreamEndCapture", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  Stream* stream = resolve_stream(handle, current_device());
                  std::lock_guard<std::mutex> lock(g_capture_mu);
                  auto it = capturing().find(stream);
                  if (it == capturing().end()) return cudaErrorIllegalState;
                  if (!graph) return cudaErrorInvalidValue;
                  *graph = reinterpret_cast<cudaGraph_t>(it->second);
                  capturing().erase(it);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  cudaGraphInstantiate_v12000_params params{exec, graph, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, "cudaGraphInstantiate", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!exec || !graph) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(g_capture_mu);
                  auto* e = new GraphExec{reinterpret_cast<Graph*>(graph)->nodes, g_next_graph_id++};
                  *exec = reinterpret_cast<cudaGraphExec_t>(e);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t handle) {
  cudaGraphLaunch_v10000_params params{exec, handle};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch", SIM_CALL_GRAPH_LAUNCH, &params,
                [&](ApiScope& scope) -> cudaError_t {
                  if (!exec) return cudaErrorInvalidValue;
                  auto* e = reinterpret_cast<GraphExec*>(exec);
                  Stream* stream = resolve_stream(handle, current_device());
                  scope.set_stream(stream_id(stream));
                  spend(config().launch_api_ns);
                  cuGraphLaunch_params dp{reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUstream>(handle)};
                  driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", SIM_CALL_GRAPH_LAUNCH, &dp,
                              [&](ApiScope&) -> CUresult {
                                uint64_t node = 0;
                                for (OpRequest r : e->nodes) {
                                  r.stream = stream;
                                  r.correlation_id = scope.correlation_id();
                                  r.graph_id = e->id;
                                  r.graph_node_id = ++node;
                                  scope.set_op(enqueue(r));  // the log keeps the last node's index
                                }
                                return CUDA_SUCCESS;
                              });
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<GraphExec*>(exec);
  return cudaSuccess;
}

SIMCUDA_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}

}  // extern "C"
