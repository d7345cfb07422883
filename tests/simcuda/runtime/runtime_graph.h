// CUDA graphs in the simulated runtime: what cudaGraph_t, cudaGraphNode_t and cudaGraphExec_t
// point to, shared by stream capture and launch (runtime_graph.cpp) and explicit construction
// (runtime_graph_build.cpp).
#pragma once

#include <mutex>
#include <vector>

#include "runtime_internal.h"

namespace simcuda::runtime {

struct Graph;

struct GraphNode {
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  OpRequest request;               // what it runs (kernels, copies, memsets, host functions)
  std::vector<GraphNode*> deps;    // nodes it depends on, in this graph
  Graph* graph = nullptr;
  uint64_t id = 0;                 // unique per node, CUPTI's graphNodeId
  const Kernel* kernel = nullptr;  // kernel nodes: for cudaGraphExecKernelNodeSetParams
};

struct Graph {
  std::vector<GraphNode*> nodes;  // in the order they were added
};

// One lock for every graph, node, exec and capture.
std::mutex& graph_mu();
GraphNode* new_node(Graph* graph, cudaGraphNodeType type, const OpRequest& request,
                    const cudaGraphNode_t* deps, size_t num_deps);  // caller holds graph_mu()
uint64_t next_node_id();

// A kernel node's op from its parameters (nullptr: not a registered kernel).
bool kernel_request(const cudaKernelNodeParams* params, OpRequest* out, const Kernel** kernel);

}  // namespace simcuda::runtime
