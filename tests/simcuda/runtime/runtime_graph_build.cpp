// Explicit graph construction (cudaGraphCreate, cudaGraphAdd*Node, cudaGraphAddDependencies,
// cudaGraphClone, queries). Nodes hold what they will run, computed when they are added (the
// runtime copies node parameters at that point, as documented): a kernel node's device time from
// kernel_duration_ns() with its grid, block and arguments; a copy's and a memset's from the
// bandwidths and the memory kinds of its pointers. Supported node types: kernel, memcpy (3D params
// of linear memory, and 1D), memset, host, empty. Child-graph, event, semaphore, memory-allocation
// and conditional nodes are not simulated (cudaErrorNotSupported).
#include <string.h>

#include <algorithm>
#include <unordered_map>

#include "runtime_graph.h"

namespace simcuda::runtime {

bool kernel_request(const cudaKernelNodeParams* p, OpRequest* out, const Kernel** kernel) {
  const Kernel* k = kernel_for_stub(p->func);
  if (!k) return false;
  OpRequest r;
  r.kind = SIM_OP_KERNEL;
  r.name = k->name;
  const unsigned grid[3] = {p->gridDim.x, p->gridDim.y, p->gridDim.z};
  const unsigned block[3] = {p->blockDim.x, p->blockDim.y, p->blockDim.z};
  r.duration_ns = kernel_duration_ns(k->name, grid, block, p->kernelParams);
  for (int i = 0; i < 3; ++i) r.grid[i] = int(grid[i]), r.block[i] = int(block[i]);
  *out = r;
  *kernel = k;
  return true;
}

}  // namespace simcuda::runtime

using namespace simcuda;
using namespace simcuda::runtime;

namespace {

Graph* as_graph(cudaGraph_t g) { return reinterpret_cast<Graph*>(g); }
GraphNode* as_node(cudaGraphNode_t n) { return reinterpret_cast<GraphNode*>(n); }

// The documented argument checks of every cudaGraphAdd*Node: a node pointer and a graph, and
// dependencies that are nodes of that graph, each at most once.
cudaError_t check_add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t num_deps) {
  if (!out || !graph || (num_deps && !deps)) return cudaErrorInvalidValue;
  for (size_t i = 0; i < num_deps; ++i) {
    if (!deps[i] || as_node(deps[i])->graph != as_graph(graph)) return cudaErrorInvalidValue;
    for (size_t j = 0; j < i; ++j)
      if (deps[j] == deps[i]) return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

cudaError_t add(cudaGraphNode_t* out, cudaGraph_t graph, const cudaGraphNode_t* deps, size_t num_deps,
                cudaGraphNodeType type, const OpRequest& r, const Kernel* kernel = nullptr) {
  std::lock_guard<std::mutex> lock(graph_mu());
  if (cudaError_t e = check_add(out, graph, deps, num_deps); e != cudaSuccess) return e;
  GraphNode* n = new_node(as_graph(graph), type, r, deps, num_deps);
  n->kernel = kernel;
  *out = reinterpret_cast<cudaGraphNode_t>(n);
  return cudaSuccess;
}

// The caller's array semantics of cudaGraphGetNodes / GetRootNodes: with a null array, the count;
// else up to *count entries, the rest null, and *count the number written.
cudaError_t list(const std::vector<GraphNode*>& nodes, cudaGraphNode_t* out, size_t* count) {
  if (!count) return cudaErrorInvalidValue;
  if (!out) {
    *count = nodes.size();
    return cudaSuccess;
  }
  size_t n = std::min(*count, nodes.size());
  for (size_t i = 0; i < *count; ++i) out[i] = i < n ? reinterpret_cast<cudaGraphNode_t>(nodes[i]) : nullptr;
  *count = n;
  return cudaSuccess;
}

}  // namespace

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned int flags) {
  cudaGraphCreate_v10000_params params{graph, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphCreate_v10000, "cudaGraphCreate", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!graph || flags != 0) return cudaErrorInvalidValue;  // flags: must be 0
                  *graph = reinterpret_cast<cudaGraph_t>(new Graph);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                                  const cudaGraphNode_t* deps, size_t num_deps,
                                                  const struct cudaKernelNodeParams* node_params) {
  cudaGraphAddKernelNode_v10000_params params{node, graph, deps, num_deps, node_params};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddKernelNode_v10000, "cudaGraphAddKernelNode", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!node_params) return cudaErrorInvalidValue;
                  OpRequest r;
                  const Kernel* k = nullptr;
                  if (!kernel_request(node_params, &r, &k)) return cudaErrorInvalidDeviceFunction;
                  return add(node, graph, deps, num_deps, cudaGraphNodeTypeKernel, r, k);
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                                  const cudaGraphNode_t* deps, size_t num_deps,
                                                  const struct cudaMemcpy3DParms* copy) {
  cudaGraphAddMemcpyNode_v10000_params params{node, graph, deps, num_deps, copy};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode_v10000, "cudaGraphAddMemcpyNode", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!copy) return cudaErrorInvalidValue;
                  if (copy->srcArray || copy->dstArray) return cudaErrorNotSupported;  // CUDA arrays
                  size_t bytes = copy->extent.width * std::max<size_t>(copy->extent.height, 1) *
                                 std::max<size_t>(copy->extent.depth, 1);
                  auto* dst = static_cast<char*>(copy->dstPtr.ptr) +
                              copy->dstPos.x + copy->dstPos.y * copy->dstPtr.pitch;
                  auto* src = static_cast<const char*>(copy->srcPtr.ptr) +
                              copy->srcPos.x + copy->srcPos.y * copy->srcPtr.pitch;
                  if (!copy->dstPtr.ptr || !copy->srcPtr.ptr) return cudaErrorInvalidValue;
                  return add(node, graph, deps, num_deps, cudaGraphNodeTypeMemcpy,
                             copy_request(dst, src, bytes, copy->kind));
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* node, cudaGraph_t graph,
                                                    const cudaGraphNode_t* deps, size_t num_deps, void* dst,
                                                    const void* src, size_t count, enum cudaMemcpyKind kind) {
  cudaGraphAddMemcpyNode1D_v11010_params params{node, graph, deps, num_deps, dst, src, count, kind};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemcpyNode1D_v11010, "cudaGraphAddMemcpyNode1D", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!dst || !src) return cudaErrorInvalidValue;
                  return add(node, graph, deps, num_deps, cudaGraphNodeTypeMemcpy,
                             copy_request(dst, src, count, kind));
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                                  const cudaGraphNode_t* deps, size_t num_deps,
                                                  const struct cudaMemsetParams* memset_params) {
  cudaGraphAddMemsetNode_v10000_params params{node, graph, deps, num_deps, memset_params};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddMemsetNode_v10000, "cudaGraphAddMemsetNode", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  const cudaMemsetParams* m = memset_params;
                  if (!m || !m->dst) return cudaErrorInvalidValue;
                  if (m->elementSize != 1 && m->elementSize != 2 && m->elementSize != 4) return cudaErrorInvalidValue;
                  size_t bytes = size_t(m->elementSize) * m->width * std::max<size_t>(m->height, 1);
                  return add(node, graph, deps, num_deps, cudaGraphNodeTypeMemset, memset_request(m->dst, bytes));
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                size_t num_deps, const struct cudaHostNodeParams* host) {
  cudaGraphAddHostNode_v10000_params params{node, graph, deps, num_deps, host};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddHostNode_v10000, "cudaGraphAddHostNode", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!host || !host->fn) return cudaErrorInvalidValue;
                  OpRequest r;
                  r.kind = SIM_OP_HOST_FUNC;
                  r.host_fn = host->fn;
                  r.host_user_data = host->userData;
                  return add(node, graph, deps, num_deps, cudaGraphNodeTypeHost, r);
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* deps,
                                                 size_t num_deps) {
  cudaGraphAddEmptyNode_v10000_params params{node, graph, deps, num_deps};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddEmptyNode_v10000, "cudaGraphAddEmptyNode", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  OpRequest r;
                  r.kind = SIM_OP_MARKER;
                  return add(node, graph, deps, num_deps, cudaGraphNodeTypeEmpty, r);
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t* from,
                                                    const cudaGraphNode_t* to, const cudaGraphEdgeData* edge_data,
                                                    size_t num) {
  cudaGraphAddDependencies_v12030_params params{graph, from, to, edge_data, num};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphAddDependencies_v12030, "cudaGraphAddDependencies", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!graph || (num && (!from || !to))) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  for (size_t i = 0; i < num; ++i) {
                    GraphNode* a = as_node(from[i]);
                    GraphNode* b = as_node(to[i]);
                    if (!a || !b || a == b || a->graph != as_graph(graph) || b->graph != as_graph(graph))
                      return cudaErrorInvalidValue;
                    // "Specifying an existing dependency will return an error."
                    if (std::find(b->deps.begin(), b->deps.end(), a) != b->deps.end()) return cudaErrorInvalidValue;
                  }
                  for (size_t i = 0; i < num; ++i) as_node(to[i])->deps.push_back(as_node(from[i]));
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t original) {
  cudaGraphClone_v10000_params params{clone, original};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphClone_v10000, "cudaGraphClone", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!clone || !original) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  auto* g = new Graph;
                  std::unordered_map<GraphNode*, GraphNode*> copy_of;
                  for (GraphNode* n : as_graph(original)->nodes) {
                    auto* c = new GraphNode(*n);
                    c->graph = g;
                    c->id = next_node_id();
                    copy_of[n] = c;
                    g->nodes.push_back(c);
                  }
                  for (GraphNode* c : g->nodes)
                    for (GraphNode*& d : c->deps) d = copy_of.at(d);
                  *clone = reinterpret_cast<cudaGraph_t>(g);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* num_nodes) {
  cudaGraphGetNodes_v10000_params params{graph, nodes, num_nodes};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphGetNodes_v10000, "cudaGraphGetNodes", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!graph) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  return list(as_graph(graph)->nodes, nodes, num_nodes);
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t* roots, size_t* num_roots) {
  cudaGraphGetRootNodes_v10000_params params{graph, roots, num_roots};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphGetRootNodes_v10000, "cudaGraphGetRootNodes", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!graph) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  std::vector<GraphNode*> r;
                  for (GraphNode* n : as_graph(graph)->nodes)
                    if (n->deps.empty()) r.push_back(n);
                  return list(r, roots, num_roots);
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, enum cudaGraphNodeType* type) {
  cudaGraphNodeGetType_v10000_params params{node, type};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphNodeGetType_v10000, "cudaGraphNodeGetType", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  if (!node || !type) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  *type = as_node(node)->type;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t* deps,
                                                        cudaGraphEdgeData* edge_data, size_t* num_deps) {
  cudaGraphNodeGetDependencies_v12030_params params{node, deps, edge_data, num_deps};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphNodeGetDependencies_v12030, "cudaGraphNodeGetDependencies",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!node) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  const auto& d = as_node(node)->deps;
                  if (edge_data && deps)
                    for (size_t i = 0; i < std::min(*num_deps, d.size()); ++i) memset(&edge_data[i], 0, sizeof(*edge_data));
                  return list(d, deps, num_deps);
                });
}

}  // extern "C"
