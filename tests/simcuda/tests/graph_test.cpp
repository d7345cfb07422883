// CUDA graphs as the CUDA programming guide and runtime API reference describe them: explicitly
// built graphs run their nodes in dependency order (independent branches concurrently), every op
// of a launch carries the cudaGraphLaunch's correlation id and one graph id; stream capture
// follows work forked to other streams through events, must be joined before it ends, and the
// capture modes prohibit unsafe calls as documented.
#include <catch2/catch.hpp>
#include <cupti.h>

#include <atomic>
#include <thread>
#include <vector>

#include "sim_test_kernels.h"
#include "sim_test_log.h"
#include "simcuda/timeline.h"

using simtest::launch;
using simtest::op_count;
using simtest::op;
using simtest::last_call;

namespace {

simtest::TestKernel& kernel() {
  static simtest::TestKernel k;
  static bool once = (simtest::register_kernel(k, "_Z10graph_kernv"), true);
  (void)once;
  return k;
}

constexpr int64_t kMs = 1000000;

// The launch's ops with the given kind, by name order of creation.
std::vector<SimDeviceOp> ops_since(size_t first, uint32_t kind) {
  std::vector<SimDeviceOp> out;
  for (size_t i = first; i < op_count(); ++i)
    if (op(i).kind == kind) out.push_back(op(i));
  return out;
}

cudaKernelNodeParams kernel_params(void** args) {
  cudaKernelNodeParams p{};
  p.func = &kernel().stub;
  p.gridDim = dim3(1);
  p.blockDim = dim3(32);
  p.kernelParams = args;
  return p;
}

std::atomic<int> g_host_calls{0};
void CUDART_CB count_host(void*) { g_host_calls++; }

}  // namespace

TEST_CASE("an explicit diamond graph runs in dependency order under the launch's correlation id", "[graph]") {
  cudaGraph_t g;
  REQUIRE(cudaGraphCreate(&g, 0) == cudaSuccess);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphCreate_v10000);
  // b and c run 200 ms: far longer than the host needs to queue the graph's nodes, so their
  // overlap does not depend on the host's speed.
  int64_t a_ns = 2 * kMs, b_ns = 200 * kMs, c_ns = 200 * kMs, d_ns = 1 * kMs;
  void* a_args[] = {&a_ns};
  void* b_args[] = {&b_ns};
  void* c_args[] = {&c_ns};
  void* d_args[] = {&d_ns};
  cudaKernelNodeParams pa = kernel_params(a_args), pb = kernel_params(b_args), pc = kernel_params(c_args),
                       pd = kernel_params(d_args);
  cudaGraphNode_t a, b, c, d, h;
  REQUIRE(cudaGraphAddKernelNode(&a, g, nullptr, 0, &pa) == cudaSuccess);
  REQUIRE(cudaGraphAddKernelNode(&b, g, &a, 1, &pb) == cudaSuccess);
  REQUIRE(cudaGraphAddKernelNode(&c, g, &a, 1, &pc) == cudaSuccess);
  cudaGraphNode_t bc[] = {b, c};
  REQUIRE(cudaGraphAddKernelNode(&d, g, bc, 2, &pd) == cudaSuccess);
  cudaHostNodeParams hp{count_host, nullptr};
  REQUIRE(cudaGraphAddHostNode(&h, g, nullptr, 0, &hp) == cudaSuccess);
  REQUIRE(cudaGraphAddDependencies(g, &d, &h, nullptr, 1) == cudaSuccess);
  CHECK(cudaGraphAddDependencies(g, &d, &h, nullptr, 1) == cudaErrorInvalidValue);  // already there
  size_t n = 0;
  REQUIRE(cudaGraphGetNodes(g, nullptr, &n) == cudaSuccess);
  CHECK(n == 5);
  size_t roots = 0;
  cudaGraphNode_t root[4] = {};
  roots = 4;
  REQUIRE(cudaGraphGetRootNodes(g, root, &roots) == cudaSuccess);
  CHECK(roots == 1);
  CHECK(root[0] == a);
  cudaGraphNodeType type;
  REQUIRE(cudaGraphNodeGetType(h, &type) == cudaSuccess);
  CHECK(type == cudaGraphNodeTypeHost);

  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiateWithFlags(&exec, g, 0) == cudaSuccess);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  size_t first = op_count();
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_GRAPH_LAUNCH);
  uint64_t correlation = last_call().correlation_id;
  launch(kernel(), 1 * kMs, s);  // work after the launch waits for the whole graph
  uint64_t after = op_count() - 1;
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(g_host_calls == 1);
  auto kernels = ops_since(first, SIM_OP_KERNEL);
  REQUIRE(kernels.size() == 5);  // a, b, c, d and the kernel after the launch
  const SimDeviceOp &ka = kernels[0], &kb = kernels[1], &kc = kernels[2], &kd = kernels[3];
  for (int i = 0; i < 4; ++i) CHECK(kernels[size_t(i)].correlation_id == correlation);
  CHECK(kb.start_ns >= ka.end_ns);
  CHECK(kc.start_ns >= ka.end_ns);
  CHECK(kb.start_ns < kc.end_ns);  // the two branches overlap
  CHECK(kc.start_ns < kb.end_ns);
  CHECK(kd.start_ns >= kb.end_ns);
  CHECK(kd.start_ns >= kc.end_ns);
  auto hosts = ops_since(first, SIM_OP_HOST_FUNC);
  REQUIRE(hosts.size() == 1);
  CHECK(hosts[0].start_ns >= kd.end_ns);
  CHECK(op(after).start_ns >= hosts[0].end_ns);

  // A second launch of a clone: new ops, the same shape, its own correlation id.
  cudaGraph_t clone;
  REQUIRE(cudaGraphClone(&clone, g) == cudaSuccess);
  cudaGraphExec_t exec2;
  REQUIRE(cudaGraphInstantiate(&exec2, clone, 0) == cudaSuccess);
  first = op_count();
  REQUIRE(cudaGraphLaunch(exec2, s) == cudaSuccess);
  uint64_t correlation2 = last_call().correlation_id;
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  auto again = ops_since(first, SIM_OP_KERNEL);
  REQUIRE(again.size() == 4);
  CHECK(again[0].correlation_id == correlation2);
  CHECK(correlation2 != correlation);
  CHECK(g_host_calls == 2);

  // Changing a kernel node's parameters in the exec changes what the next launch runs.
  int64_t longer = 10 * kMs;
  void* l_args[] = {&longer};
  cudaKernelNodeParams pl = kernel_params(l_args);
  REQUIRE(cudaGraphExecKernelNodeSetParams(exec, a, &pl) == cudaSuccess);
  first = op_count();
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  auto changed = ops_since(first, SIM_OP_KERNEL);
  REQUIRE(changed.size() == 4);
  CHECK(changed[0].end_ns - changed[0].start_ns == uint64_t(longer));
  REQUIRE(cudaGraphExecDestroy(exec) == cudaSuccess);
  REQUIRE(cudaGraphExecDestroy(exec2) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(clone) == cudaSuccess);
}

TEST_CASE("memcpy and memset nodes run as copies and memsets of the graph", "[graph]") {
  void* dev = nullptr;
  void* host = nullptr;
  REQUIRE(cudaMalloc(&dev, 1 << 20) == cudaSuccess);
  REQUIRE(cudaMallocHost(&host, 1 << 20) == cudaSuccess);
  cudaGraph_t g;
  REQUIRE(cudaGraphCreate(&g, 0) == cudaSuccess);
  cudaGraphNode_t ms, cp, cp1;
  cudaMemsetParams mp{};
  mp.dst = dev;
  mp.elementSize = 4;
  mp.width = 1024;
  mp.height = 1;
  REQUIRE(cudaGraphAddMemsetNode(&ms, g, nullptr, 0, &mp) == cudaSuccess);
  cudaMemcpy3DParms c{};
  c.srcPtr = cudaPitchedPtr{host, 1 << 20, 1 << 20, 1};  // what make_cudaPitchedPtr builds
  c.dstPtr = cudaPitchedPtr{dev, 1 << 20, 1 << 20, 1};
  c.extent = cudaExtent{1 << 20, 1, 1};
  c.kind = cudaMemcpyHostToDevice;
  REQUIRE(cudaGraphAddMemcpyNode(&cp, g, &ms, 1, &c) == cudaSuccess);
  REQUIRE(cudaGraphAddMemcpyNode1D(&cp1, g, &cp, 1, host, dev, 4096, cudaMemcpyDeviceToHost) == cudaSuccess);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
  size_t first = op_count();
  REQUIRE(cudaGraphLaunch(exec, nullptr) == cudaSuccess);
  uint64_t correlation = last_call().correlation_id;
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  auto sets = ops_since(first, SIM_OP_MEMSET);
  auto copies = ops_since(first, SIM_OP_MEMCPY);
  REQUIRE(sets.size() == 1);
  REQUIRE(copies.size() == 2);
  CHECK(sets[0].bytes == 4096);
  CHECK(copies[0].bytes == 1 << 20);
  CHECK(copies[0].copy_kind == SIM_COPY_H2D);
  CHECK(copies[0].src_kind == SIM_MEM_PINNED);
  CHECK(copies[1].copy_kind == SIM_COPY_D2H);
  CHECK(copies[0].start_ns >= sets[0].end_ns);
  CHECK(copies[1].start_ns >= copies[0].end_ns);
  CHECK(sets[0].correlation_id == correlation);
  CHECK(copies[1].correlation_id == correlation);
  REQUIRE(cudaGraphExecDestroy(exec) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  REQUIRE(cudaFreeHost(host) == cudaSuccess);
  REQUIRE(cudaFree(dev) == cudaSuccess);
}

TEST_CASE("capture follows work forked to another stream through events and joined back", "[graph][capture]") {
  cudaStream_t s0, s1;
  REQUIRE(cudaStreamCreate(&s0) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
  cudaEvent_t fork, join;
  REQUIRE(cudaEventCreate(&fork) == cudaSuccess);
  REQUIRE(cudaEventCreate(&join) == cudaSuccess);
  size_t before = op_count();
  REQUIRE(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal) == cudaSuccess);
  cudaStreamCaptureStatus status;
  REQUIRE(cudaStreamIsCapturing(s1, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusNone);
  launch(kernel(), 2 * kMs, s0);                       // A
  REQUIRE(cudaEventRecord(fork, s0) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(s1, fork, 0) == cudaSuccess);
  REQUIRE(cudaStreamIsCapturing(s1, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);     // s1 joined the capture
  launch(kernel(), 200 * kMs, s1);                     // B, after A
  launch(kernel(), 200 * kMs, s0);                     // C, after A, concurrent with B
  unsigned long long id = 0;
  cudaGraph_t capturing_graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t num_deps = 0;
  REQUIRE(cudaStreamGetCaptureInfo(s1, &status, &id, &capturing_graph, &deps, nullptr, &num_deps) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  CHECK(id != 0);
  CHECK(capturing_graph != nullptr);
  CHECK(num_deps == 1);  // B
  REQUIRE(cudaEventRecord(join, s1) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(s0, join, 0) == cudaSuccess);
  CHECK(cudaEventQuery(join) == cudaErrorCapturedEvent);  // recorded in a capture in progress
  launch(kernel(), 1 * kMs, s0);                       // D, after B and C
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(s0, &graph) == cudaSuccess);
  CHECK(op_count() == before);  // captured, nothing ran
  REQUIRE(cudaStreamIsCapturing(s1, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusNone);
  size_t n = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &n) == cudaSuccess);
  CHECK(n == 4);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  size_t first = op_count();
  REQUIRE(cudaGraphLaunch(exec, s0) == cudaSuccess);
  uint64_t correlation = last_call().correlation_id;
  REQUIRE(cudaStreamSynchronize(s0) == cudaSuccess);
  auto k = ops_since(first, SIM_OP_KERNEL);
  REQUIRE(k.size() == 4);
  const SimDeviceOp &a = k[0], &b = k[1], &c = k[2], &d = k[3];
  CHECK(b.start_ns >= a.end_ns);
  CHECK(c.start_ns >= a.end_ns);
  CHECK(b.start_ns < c.end_ns);
  CHECK(c.start_ns < b.end_ns);
  CHECK(d.start_ns >= b.end_ns);
  CHECK(d.start_ns >= c.end_ns);
  for (auto& x : k) CHECK(x.correlation_id == correlation);
  REQUIRE(cudaGraphExecDestroy(exec) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
}

TEST_CASE("a capture whose fork is not joined back fails with cudaErrorStreamCaptureUnjoined", "[graph][capture]") {
  cudaStream_t s0, s1;
  REQUIRE(cudaStreamCreate(&s0) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&s1) == cudaSuccess);
  cudaEvent_t fork;
  REQUIRE(cudaEventCreate(&fork) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  launch(kernel(), 1 * kMs, s0);
  REQUIRE(cudaEventRecord(fork, s0) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(s1, fork, 0) == cudaSuccess);
  launch(kernel(), 1 * kMs, s1);
  cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(1);
  CHECK(cudaStreamEndCapture(s1, &graph) == cudaErrorStreamCaptureUnmatched);  // not the origin
  CHECK(cudaStreamEndCapture(s0, &graph) == cudaErrorStreamCaptureUnjoined);
  CHECK(graph == nullptr);
  cudaStreamCaptureStatus status;
  REQUIRE(cudaStreamIsCapturing(s1, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusNone);
  // The streams work normally again.
  size_t first = op_count();
  launch(kernel(), 1 * kMs, s1);
  CHECK(op_count() == first + 1);
  REQUIRE(cudaStreamSynchronize(s1) == cudaSuccess);
  cudaGetLastError();
}

TEST_CASE("capture modes: unsafe calls are prohibited as documented, relaxed allows them", "[graph][capture]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  void* p = nullptr;
  // Global: this thread's cudaMalloc fails and invalidates the capture.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  launch(kernel(), 1 * kMs, s);
  CHECK(cudaMalloc(&p, 64) == cudaErrorStreamCaptureUnsupported);
  cudaStreamCaptureStatus status;
  REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusInvalidated);
  cudaGraph_t graph;
  CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated);
  // Global capture on this thread: another thread in Global mode is prohibited too, one that
  // switched itself to Relaxed is not.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  cudaError_t relaxed_thread = cudaErrorUnknown;
  std::thread([&] {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    void* q = nullptr;
    relaxed_thread = cudaMalloc(&q, 64);
    if (q) cudaFree(q);
  }).join();
  CHECK(relaxed_thread == cudaSuccess);
  REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  cudaError_t global_thread = cudaErrorUnknown;
  std::thread([&] {
    void* q = nullptr;
    global_thread = cudaMalloc(&q, 64);
  }).join();
  CHECK(global_thread == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated);
  // Relaxed capture: cudaMalloc works during it.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  launch(kernel(), 1 * kMs, s);
  REQUIRE(cudaMalloc(&p, 64) == cudaSuccess);
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
  // Syncing a capturing stream is never allowed.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
  REQUIRE(cudaFree(p) == cudaSuccess);
  cudaGetLastError();
}

TEST_CASE("cudaLaunchHostFunc in a capture becomes a host node", "[graph][capture]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  int before = g_host_calls;
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  launch(kernel(), 1 * kMs, s);
  REQUIRE(cudaLaunchHostFunc(s, count_host, nullptr) == cudaSuccess);
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  CHECK(g_host_calls == before);
  cudaGraphNode_t nodes[2];
  size_t n = 2;
  REQUIRE(cudaGraphGetNodes(graph, nodes, &n) == cudaSuccess);
  REQUIRE(n == 2);
  cudaGraphNodeType type;
  REQUIRE(cudaGraphNodeGetType(nodes[1], &type) == cudaSuccess);
  CHECK(type == cudaGraphNodeTypeHost);
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(g_host_calls == before + 1);
  REQUIRE(cudaGraphExecDestroy(exec) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(graph) == cudaSuccess);
}
