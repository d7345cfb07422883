// CUDA graphs: stream capture, instantiation and launch (explicit construction is in
// runtime_graph_build.cpp). A graph is a DAG of nodes (kernel, memcpy, memset, host, empty).
//
// Capture, as the CUDA programming guide and cudaStreamBeginCapture's documentation describe it:
// work queued on a capturing stream becomes nodes instead of running; each capturing stream keeps
// its current dependency set (the nodes the next node depends on). cudaEventRecord on a capturing
// stream makes the event stand for that set; cudaStreamWaitEvent(s1, e) with such an event makes
// s1 part of the same capture (a fork) or adds the event's set to s1's (a join). Capture ends on
// the stream it began on (else cudaErrorStreamCaptureUnmatched); every other stream of the capture
// must by then have been joined back into it, i.e. its last nodes are ancestors of the origin's
// (else cudaErrorStreamCaptureUnjoined, and no graph). Capture modes: while a thread has a capture
// begun in Global or ThreadLocal mode, its "potentially unsafe" calls (cudaMalloc, synchronous
// copies and memsets, synchronisations, queries) fail with cudaErrorStreamCaptureUnsupported and
// invalidate that capture; a Global capture also prohibits them on other threads whose mode
// (cudaThreadExchangeStreamCaptureMode) is Global; Relaxed prohibits nothing. A thread-local or
// global capture must end on the thread that began it (cudaErrorStreamCaptureWrongThread).
//
// Launch: the nodes run in dependency order on the device. Each node is queued as its own op
// (a "detached" op: it waits for the launch stream's earlier work and its graph dependencies, and
// not for the previous node); a node with no dependencies starts with the stream's earlier work
// done. The graph's end becomes the stream's last op: its only sink node, or else a zero-length
// marker that waits for every sink. Every kernel, copy and memset of a launch carries the
// cudaGraphLaunch's correlation id and the exec's graph id, as CUPTI reports graph work.
#include "runtime_graph.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace simcuda::runtime {
namespace {

struct Capture {
  Graph* graph = nullptr;
  Stream* origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  int32_t tid = 0;
  unsigned long long id = 0;
  bool invalidated = false;
  std::unordered_map<Stream*, std::vector<GraphNode*>> frontier;  // every stream in the capture
};

struct CapturedEvent {
  Capture* capture;
  std::vector<GraphNode*> nodes;
};

struct ExecNode {
  OpRequest request;
  cudaGraphNodeType type;
  std::vector<size_t> deps;  // indices into GraphExec::nodes
  uint64_t id;
  GraphNode* source;         // the graph node it was instantiated from (compared, never read)
  const Kernel* kernel;      // kernel nodes
};

struct GraphExec {
  std::vector<ExecNode> nodes;  // in topological order
  uint32_t id;
};

std::unordered_map<Stream*, Capture*>& capturing() {
  static auto* map = new std::unordered_map<Stream*, Capture*>;
  return *map;
}
std::unordered_map<const Event*, CapturedEvent>& captured_events() {
  static auto* map = new std::unordered_map<const Event*, CapturedEvent>;
  return *map;
}
std::vector<Capture*>& captures() {  // live capture sequences
  static auto* v = new std::vector<Capture*>;
  return *v;
}
std::atomic<uint32_t> g_next_graph_id{1};
std::atomic<uint64_t> g_next_node_id{1};
unsigned long long g_next_capture_id = 1;
thread_local cudaStreamCaptureMode t_capture_mode = cudaStreamCaptureModeGlobal;

cudaGraphNodeType node_type_of(const OpRequest& r) {
  switch (r.kind) {
    case SIM_OP_KERNEL: return cudaGraphNodeTypeKernel;
    case SIM_OP_MEMCPY: return cudaGraphNodeTypeMemcpy;
    case SIM_OP_MEMSET: return cudaGraphNodeTypeMemset;
    case SIM_OP_HOST_FUNC: return cudaGraphNodeTypeHost;
    default: return cudaGraphNodeTypeEmpty;
  }
}

void add_unique(std::vector<GraphNode*>& to, const std::vector<GraphNode*>& from) {
  for (GraphNode* n : from)
    if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
}

// Ends a capture sequence: its streams and events leave it. Caller holds graph_mu().
void end_capture_locked(Capture* c) {
  for (auto& [stream, nodes] : c->frontier) capturing().erase(stream);
  for (auto it = captured_events().begin(); it != captured_events().end();)
    it = it->second.capture == c ? captured_events().erase(it) : std::next(it);
  captures().erase(std::remove(captures().begin(), captures().end(), c), captures().end());
}

// Every node `from` reaches through dependencies, itself included.
std::unordered_set<GraphNode*> ancestors(const std::vector<GraphNode*>& from) {
  std::unordered_set<GraphNode*> seen;
  std::vector<GraphNode*> todo(from.begin(), from.end());
  while (!todo.empty()) {
    GraphNode* n = todo.back();
    todo.pop_back();
    if (!seen.insert(n).second) continue;
    for (GraphNode* d : n->deps) todo.push_back(d);
  }
  return seen;
}

Capture* capture_of(Stream* stream) {
  auto it = capturing().find(stream);
  return it == capturing().end() ? nullptr : it->second;
}

cudaError_t begin_capture(cudaStream_t handle, cudaStreamCaptureMode mode, bool per_thread) {
  void* h = handle;
  if (per_thread && !h) h = reinterpret_cast<void*>(cudaStreamPerThread);
  if (h == nullptr || h == reinterpret_cast<void*>(cudaStreamLegacy)) return cudaErrorStreamCaptureUnsupported;
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return cudaErrorInvalidValue;
  Stream* stream = resolve_stream(h, current_device());
  std::lock_guard<std::mutex> lock(graph_mu());
  if (capturing().count(stream)) return cudaErrorIllegalState;
  auto* c = new Capture;
  c->graph = new Graph;
  c->origin = stream;
  c->mode = mode;
  c->tid = current_tid();
  c->id = g_next_capture_id++;
  c->frontier[stream] = {};
  capturing()[stream] = c;
  captures().push_back(c);
  return cudaSuccess;
}

cudaError_t end_capture(cudaStream_t handle, cudaGraph_t* graph, bool per_thread) {
  void* h = handle;
  if (per_thread && !h) h = reinterpret_cast<void*>(cudaStreamPerThread);
  if (!graph) return cudaErrorInvalidValue;
  Stream* stream = resolve_stream(h, current_device());
  std::lock_guard<std::mutex> lock(graph_mu());
  Capture* c = capture_of(stream);
  if (!c) return cudaErrorIllegalState;
  if (c->origin != stream) return cudaErrorStreamCaptureUnmatched;
  if (c->mode != cudaStreamCaptureModeRelaxed && c->tid != current_tid()) return cudaErrorStreamCaptureWrongThread;
  *graph = nullptr;
  cudaError_t result = cudaSuccess;
  if (c->invalidated) {
    result = cudaErrorStreamCaptureInvalidated;
  } else {
    std::unordered_set<GraphNode*> joined = ancestors(c->frontier[stream]);
    for (auto& [s, nodes] : c->frontier)
      for (GraphNode* n : nodes)
        if (!joined.count(n)) result = cudaErrorStreamCaptureUnjoined;
  }
  end_capture_locked(c);
  if (result == cudaSuccess) {
    *graph = reinterpret_cast<cudaGraph_t>(c->graph);
  } else {
    for (GraphNode* n : c->graph->nodes) delete n;
    delete c->graph;
  }
  delete c;
  return result;
}

Stream* capture_stream(cudaStream_t handle, bool per_thread) {
  void* h = handle;
  if (per_thread && !h) h = reinterpret_cast<void*>(cudaStreamPerThread);
  return resolve_stream(h, current_device());
}

cudaError_t instantiate(cudaGraphExec_t* exec, cudaGraph_t graph_handle) {
  if (!exec || !graph_handle) return cudaErrorInvalidValue;
  auto* graph = reinterpret_cast<Graph*>(graph_handle);
  std::lock_guard<std::mutex> lock(graph_mu());
  // Topological order (Kahn), ties kept in the order the nodes were added.
  std::unordered_map<GraphNode*, size_t> pending;
  for (GraphNode* n : graph->nodes) pending[n] = n->deps.size();
  std::unordered_map<GraphNode*, std::vector<GraphNode*>> dependents;
  for (GraphNode* n : graph->nodes)
    for (GraphNode* d : n->deps) dependents[d].push_back(n);
  auto* e = new GraphExec;
  e->id = g_next_graph_id.fetch_add(1);
  std::unordered_map<GraphNode*, size_t> index;
  std::vector<GraphNode*> ready;
  for (GraphNode* n : graph->nodes)
    if (n->deps.empty()) ready.push_back(n);
  while (!ready.empty()) {
    GraphNode* n = ready.front();
    ready.erase(ready.begin());
    ExecNode x{n->request, n->type, {}, n->id, n, n->kernel};
    for (GraphNode* d : n->deps) x.deps.push_back(index.at(d));
    index[n] = e->nodes.size();
    e->nodes.push_back(x);
    for (GraphNode* m : dependents[n])
      if (--pending[m] == 0) ready.push_back(m);
  }
  if (e->nodes.size() != graph->nodes.size()) {  // a cycle
    delete e;
    return cudaErrorInvalidValue;
  }
  *exec = reinterpret_cast<cudaGraphExec_t>(e);
  return cudaSuccess;
}

cudaError_t launch_graph(ApiScope& scope, GraphExec* e, Stream* stream, cudaGraphExec_t exec, cudaStream_t handle) {
  scope.set_stream(stream_id(stream));
  spend(config().launch_api_ns);
  cuGraphLaunch_params dp{reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUstream>(handle)};
  driver_call(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch", SIM_CALL_GRAPH_LAUNCH, &dp,
              [&](ApiScope&) -> CUresult {
                std::vector<ExecNode> nodes;
                {
                  std::lock_guard<std::mutex> lock(graph_mu());
                  nodes = e->nodes;
                }
                size_t n = nodes.size();
                if (n == 0) return CUDA_SUCCESS;
                // The ops a node's dependents wait for: its own op, or (an empty node) its deps'.
                std::vector<std::vector<int64_t>> ends(n);
                std::vector<bool> has_dependents(n, false);
                for (const ExecNode& x : nodes)
                  for (size_t d : x.deps) has_dependents[d] = true;
                std::vector<int64_t> sinks;
                for (size_t i = 0; i < n; ++i) {
                  const ExecNode& x = nodes[i];
                  std::vector<int64_t> after;
                  for (size_t d : x.deps) after.insert(after.end(), ends[d].begin(), ends[d].end());
                  std::sort(after.begin(), after.end());
                  after.erase(std::unique(after.begin(), after.end()), after.end());
                  if (x.type == cudaGraphNodeTypeEmpty) {
                    ends[i] = after;
                  } else {
                    OpRequest r = x.request;
                    r.stream = stream;
                    r.correlation_id = scope.correlation_id();
                    r.graph_id = e->id;
                    r.graph_node_id = x.id;
                    r.after_ops = after.data();
                    r.num_after_ops = after.size();
                    // The last node in topological order has no dependents; it ends the graph
                    // when it is the only sink.
                    bool only_sink = i == n - 1 && sinks.empty();
                    for (size_t j = 0; j < n - 1 && only_sink; ++j)
                      if (!has_dependents[j] && !ends[j].empty()) only_sink = false;
                    r.detached = !only_sink;
                    int64_t op = enqueue(r);
                    scope.set_op(op);  // the log keeps the last node's index
                    ends[i] = {op};
                    if (only_sink) return CUDA_SUCCESS;
                  }
                  if (!has_dependents[i]) sinks.insert(sinks.end(), ends[i].begin(), ends[i].end());
                }
                if (!sinks.empty()) {
                  OpRequest join;
                  join.kind = SIM_OP_MARKER;
                  join.stream = stream;
                  join.correlation_id = scope.correlation_id();
                  join.graph_id = e->id;
                  join.after_ops = sinks.data();
                  join.num_after_ops = sinks.size();
                  enqueue(join);
                }
                return CUDA_SUCCESS;
              });
  return cudaSuccess;
}

cudaError_t graph_launch(CUpti_CallbackId cbid, const char* name, cudaGraphExec_t exec, cudaStream_t handle,
                         bool per_thread) {
  cudaGraphLaunch_v10000_params params{exec, handle};
  return traced(cbid, name, SIM_CALL_GRAPH_LAUNCH, &params, [&](ApiScope& scope) -> cudaError_t {
    if (!exec) return cudaErrorInvalidValue;
    Stream* stream = capture_stream(handle, per_thread);
    if (stream_is_capturing(stream)) return cudaErrorStreamCaptureUnsupported;  // no child graphs here
    return launch_graph(scope, reinterpret_cast<GraphExec*>(exec), stream, exec, handle);
  });
}

cudaError_t is_capturing(cudaStream_t handle, cudaStreamCaptureStatus* status, bool per_thread) {
  if (!status) return cudaErrorInvalidValue;
  Stream* stream = capture_stream(handle, per_thread);
  std::lock_guard<std::mutex> lock(graph_mu());
  Capture* c = capture_of(stream);
  *status = !c ? cudaStreamCaptureStatusNone
               : c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t capture_info(cudaStream_t handle, cudaStreamCaptureStatus* status, unsigned long long* id,
                         cudaGraph_t* graph, const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                         size_t* num_deps, bool per_thread) {
  if (!status) return cudaErrorInvalidValue;
  Stream* stream = capture_stream(handle, per_thread);
  std::lock_guard<std::mutex> lock(graph_mu());
  Capture* c = capture_of(stream);
  if (!c) {
    *status = cudaStreamCaptureStatusNone;
    return cudaSuccess;
  }
  *status = c->invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  if (id) *id = c->id;
  if (graph) *graph = reinterpret_cast<cudaGraph_t>(c->graph);
  // The array stays valid until the stream's capture changes, as documented.
  std::vector<GraphNode*>& f = c->frontier[stream];
  if (deps) *deps = reinterpret_cast<const cudaGraphNode_t*>(f.data());
  if (edges) *edges = nullptr;  // every edge is a default one
  if (num_deps) *num_deps = f.size();
  return cudaSuccess;
}

}  // namespace

std::mutex& graph_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}

uint64_t next_node_id() { return g_next_node_id.fetch_add(1); }

GraphNode* new_node(Graph* graph, cudaGraphNodeType type, const OpRequest& request, const cudaGraphNode_t* deps,
                    size_t num_deps) {
  auto* n = new GraphNode;
  n->type = type;
  n->request = request;
  n->graph = graph;
  n->id = next_node_id();
  for (size_t i = 0; i < num_deps; ++i) {
    auto* d = reinterpret_cast<GraphNode*>(deps[i]);
    if (std::find(n->deps.begin(), n->deps.end(), d) == n->deps.end()) n->deps.push_back(d);
  }
  graph->nodes.push_back(n);
  return n;
}

bool capture_if_active(Stream* stream, const OpRequest& request) {
  std::lock_guard<std::mutex> lock(graph_mu());
  Capture* c = capture_of(stream);
  if (!c) return false;
  if (c->invalidated) return true;  // swallowed: the capture will fail at its end
  std::vector<GraphNode*>& f = c->frontier[stream];
  GraphNode* n = new_node(c->graph, node_type_of(request), request,
                          reinterpret_cast<const cudaGraphNode_t*>(f.data()), f.size());
  f = {n};
  return true;
}

bool stream_is_capturing(Stream* stream) {
  std::lock_guard<std::mutex> lock(graph_mu());
  return capture_of(stream) != nullptr;
}

cudaError_t capture_check_unsafe(bool unsafe) {
  if (!unsafe) return cudaSuccess;
  std::lock_guard<std::mutex> lock(graph_mu());
  if (captures().empty() || t_capture_mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  int32_t me = current_tid();
  bool prohibited = false;
  for (Capture* c : captures()) {
    bool mine = c->tid == me && c->mode != cudaStreamCaptureModeRelaxed;
    bool global_elsewhere = c->tid != me && c->mode == cudaStreamCaptureModeGlobal &&
                            t_capture_mode == cudaStreamCaptureModeGlobal;
    if (mine || global_elsewhere) {
      c->invalidated = true;
      prohibited = true;
    }
  }
  return prohibited ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

bool capture_event_record(Stream* stream, const Event* event) {
  std::lock_guard<std::mutex> lock(graph_mu());
  Capture* c = capture_of(stream);
  if (!c) {
    captured_events().erase(event);  // recorded outside any capture again
    return false;
  }
  captured_events()[event] = {c, c->frontier[stream]};
  return true;
}

bool event_is_captured(const Event* event) {
  std::lock_guard<std::mutex> lock(graph_mu());
  return captured_events().count(event) != 0;
}

bool capture_stream_wait(Stream* stream, const Event* event, cudaError_t* error) {
  *error = cudaSuccess;
  std::lock_guard<std::mutex> lock(graph_mu());
  auto it = captured_events().find(event);
  Capture* mine = capture_of(stream);
  if (it == captured_events().end()) {
    if (!mine) return false;  // ordinary work outside capture
    // A capturing stream waiting for work outside its capture.
    mine->invalidated = true;
    *error = cudaErrorStreamCaptureIsolation;
    return true;
  }
  Capture* theirs = it->second.capture;
  if (mine && mine != theirs) {
    mine->invalidated = theirs->invalidated = true;
    *error = cudaErrorStreamCaptureMerge;
    return true;
  }
  if (!mine) {
    // A fork: the stream joins the capture, depending on what the event captured.
    capturing()[stream] = theirs;
    theirs->frontier[stream] = it->second.nodes;
    return true;
  }
  add_unique(theirs->frontier[stream], it->second.nodes);  // a join
  return true;
}

}  // namespace simcuda::runtime

using namespace simcuda;
using namespace simcuda::runtime;

extern "C" {

SIMCUDA_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t handle, enum cudaStreamCaptureMode mode) {
  cudaStreamBeginCapture_v10000_params params{handle, mode};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_v10000, "cudaStreamBeginCapture", SIM_CALL_OTHER,
                &params, [&](ApiScope&) { return begin_capture(handle, mode, false); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t handle, enum cudaStreamCaptureMode mode) {
  cudaStreamBeginCapture_v10000_params params{handle, mode};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamBeginCapture_ptsz_v10000, "cudaStreamBeginCapture_ptsz",
                SIM_CALL_OTHER, &params, [&](ApiScope&) { return begin_capture(handle, mode, true); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* graph) {
  cudaStreamEndCapture_v10000_params params{handle, graph};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_v10000, "cudaStreamEndCapture", SIM_CALL_OTHER,
                &params, [&](ApiScope&) { return end_capture(handle, graph, false); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t handle, cudaGraph_t* graph) {
  cudaStreamEndCapture_v10000_params params{handle, graph};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamEndCapture_ptsz_v10000, "cudaStreamEndCapture_ptsz",
                SIM_CALL_OTHER, &params, [&](ApiScope&) { return end_capture(handle, graph, true); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t handle, enum cudaStreamCaptureStatus* status) {
  cudaStreamIsCapturing_v10000_params params{handle, status};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000, "cudaStreamIsCapturing", SIM_CALL_OTHER,
                &params, [&](ApiScope&) { return is_capturing(handle, status, false); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t handle, enum cudaStreamCaptureStatus* status) {
  cudaStreamIsCapturing_v10000_params params{handle, status};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_ptsz_v10000, "cudaStreamIsCapturing_ptsz",
                SIM_CALL_OTHER, &params, [&](ApiScope&) { return is_capturing(handle, status, true); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t handle, enum cudaStreamCaptureStatus* status,
                                                    unsigned long long* id, cudaGraph_t* graph,
                                                    const cudaGraphNode_t** deps, const cudaGraphEdgeData** edges,
                                                    size_t* num_deps) {
  cudaStreamGetCaptureInfo_v12030_params params{handle, status, id, graph, deps, edges, num_deps};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030, "cudaStreamGetCaptureInfo", SIM_CALL_OTHER,
                &params, [&](ApiScope&) { return capture_info(handle, status, id, graph, deps, edges, num_deps, false); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t handle, enum cudaStreamCaptureStatus* status,
                                                         unsigned long long* id, cudaGraph_t* graph,
                                                         const cudaGraphNode_t** deps,
                                                         const cudaGraphEdgeData** edges, size_t* num_deps) {
  cudaStreamGetCaptureInfo_v12030_params params{handle, status, id, graph, deps, edges, num_deps};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_ptsz_v12030, "cudaStreamGetCaptureInfo_ptsz",
                SIM_CALL_OTHER, &params,
                [&](ApiScope&) { return capture_info(handle, status, id, graph, deps, edges, num_deps, true); });
}

SIMCUDA_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  cudaThreadExchangeStreamCaptureMode_v10010_params params{mode};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaThreadExchangeStreamCaptureMode_v10010,
                "cudaThreadExchangeStreamCaptureMode", SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!mode) return cudaErrorInvalidValue;
                  cudaStreamCaptureMode old = t_capture_mode;
                  t_capture_mode = *mode;
                  *mode = old;
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  cudaGraphInstantiate_v12000_params params{exec, graph, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiate_v12000, "cudaGraphInstantiate", SIM_CALL_OTHER,
                &params, [&](ApiScope&) { return instantiate(exec, graph); });
}

SIMCUDA_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph,
                                                         unsigned long long flags) {
  cudaGraphInstantiateWithFlags_v11040_params params{exec, graph, flags};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphInstantiateWithFlags_v11040, "cudaGraphInstantiateWithFlags",
                SIM_CALL_OTHER, &params, [&](ApiScope&) { return instantiate(exec, graph); });
}

SIMCUDA_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t handle) {
  return graph_launch(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch", exec, handle, false);
}

SIMCUDA_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t exec, cudaStream_t handle) {
  return graph_launch(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, "cudaGraphLaunch_ptsz", exec, handle,
                      true);
}

SIMCUDA_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream) {
  cudaGraphUpload_v10000_params params{exec, stream};
  // Uploading only moves the exec's resources to the device ahead of a launch: no device work here.
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphUpload_v10000, "cudaGraphUpload", SIM_CALL_OTHER, &params,
                [&](ApiScope&) { return exec ? cudaSuccess : cudaErrorInvalidValue; });
}

SIMCUDA_EXPORT cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t exec, cudaGraphNode_t node,
                                                            const struct cudaKernelNodeParams* node_params) {
  cudaGraphExecKernelNodeSetParams_v10010_params params{exec, node, node_params};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecKernelNodeSetParams_v10010, "cudaGraphExecKernelNodeSetParams",
                SIM_CALL_OTHER, &params, [&](ApiScope&) -> cudaError_t {
                  if (!exec || !node || !node_params) return cudaErrorInvalidValue;
                  OpRequest r;
                  const Kernel* k = nullptr;
                  if (!kernel_request(node_params, &r, &k)) return cudaErrorInvalidDeviceFunction;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  auto* e = reinterpret_cast<GraphExec*>(exec);
                  auto* source = reinterpret_cast<GraphNode*>(node);
                  for (ExecNode& x : e->nodes) {
                    if (x.source != source) continue;
                    if (x.type != cudaGraphNodeTypeKernel) return cudaErrorInvalidValue;
                    // "The node's function cannot change" (only its launch parameters).
                    if (x.kernel && x.kernel != k) return cudaErrorInvalidValue;
                    x.request = r;
                    return cudaSuccess;
                  }
                  return cudaErrorInvalidValue;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  cudaGraphExecDestroy_v10000_params params{exec};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecDestroy_v10000, "cudaGraphExecDestroy", SIM_CALL_OTHER,
                &params, [&](ApiScope&) -> cudaError_t {
                  std::lock_guard<std::mutex> lock(graph_mu());
                  delete reinterpret_cast<GraphExec*>(exec);
                  return cudaSuccess;
                });
}

SIMCUDA_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  cudaGraphDestroy_v10000_params params{graph};
  return traced(CUPTI_RUNTIME_TRACE_CBID_cudaGraphDestroy_v10000, "cudaGraphDestroy", SIM_CALL_OTHER, &params,
                [&](ApiScope&) -> cudaError_t {
                  if (!graph) return cudaErrorInvalidValue;
                  std::lock_guard<std::mutex> lock(graph_mu());
                  auto* g = reinterpret_cast<Graph*>(graph);
                  for (GraphNode* n : g->nodes) delete n;
                  delete g;
                  return cudaSuccess;
                });
}

}  // extern "C"
