// The virtual device behaves as the CUDA documentation says a GPU does: streams run in order and
// concurrently, events order streams, the legacy default stream orders with blocking streams, and
// every synchronising call really blocks until the work it waits for is done (and only those).
#include <catch2/catch.hpp>
#include <time.h>

#include <vector>

#include "sim_test_kernels.h"
#include "sim_test_log.h"
#include "simcuda/timeline.h"

using simtest::launch;
using simtest::mono_ns;
using simtest::op;
using simtest::last_op;
using simtest::last_call;

namespace {

simtest::TestKernel& kernel() {
  static simtest::TestKernel k;
  static bool once = (simtest::register_kernel(k, "_Z10sim_kernelPf"), true);
  (void)once;
  return k;
}

constexpr int64_t kMs = 1000000;
// Timing: the virtual device runs on the host's clock, so a check that the host got somewhere
// *before* device work ended ("returned while the device was still busy", "b did not wait for
// a") depends on the host not being preempted for longer than that work between two calls. The
// work those checks race against lasts kBusy: a preemption of 200 ms on a loaded 2-core machine
// is far beyond what the scheduler does (its period is a few ms; scripts/test-under-load.sh runs
// the suite with stress-ng on every core), and the host's own steps take microseconds, so a
// machine hundreds of times slower still passes. Checks of the other direction (a sync returned *after* the work
// it waited for) and device intervals computed from stream order hold on any machine.
constexpr int64_t kBusy = 200 * kMs;

}  // namespace

TEST_CASE("a kernel's device time is the duration its launch asked for", "[device]") {
  REQUIRE(launch(kernel(), 3 * kMs) == cudaSuccess);
  const SimDeviceOp& k = last_op();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(k.kind == SIM_OP_KERNEL);
  CHECK(k.end_ns - k.start_ns == uint64_t(3 * kMs));
  CHECK(std::string(k.name) == "_Z10sim_kernelPf");
  CHECK(k.start_ns >= k.queued_ns);
}

TEST_CASE("work on one stream runs in order, work on two streams overlaps", "[device]") {
  cudaStream_t a, b;
  REQUIRE(cudaStreamCreate(&a) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&b) == cudaSuccess);
  launch(kernel(), kBusy, a);
  uint64_t a1 = last_op().index;
  launch(kernel(), 5 * kMs, a);
  uint64_t a2 = last_op().index;
  launch(kernel(), 5 * kMs, b);
  uint64_t b1 = last_op().index;
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(op(a2).start_ns >= op(a1).end_ns);
  CHECK(op(b1).start_ns < op(a1).end_ns);  // b did not wait for a
  CHECK(op(a1).stream != op(b1).stream);
}

TEST_CASE("an event recorded on one stream orders work queued after a wait on another", "[device]") {
  cudaStream_t a, b;
  cudaEvent_t e;
  REQUIRE(cudaStreamCreate(&a) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&b) == cudaSuccess);
  REQUIRE(cudaEventCreate(&e) == cudaSuccess);
  launch(kernel(), kBusy, a);
  uint64_t producer = last_op().index;
  REQUIRE(cudaEventRecord(e, a) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(b, e, 0) == cudaSuccess);
  launch(kernel(), 1 * kMs, b);
  uint64_t consumer = last_op().index;
  uint64_t before = mono_ns();
  REQUIRE(cudaEventSynchronize(e) == cudaSuccess);
  CHECK(mono_ns() >= op(producer).end_ns);
  CHECK(last_call().blocked == 1);
  CHECK(last_call().waited_until_ns == op(producer).end_ns);
  REQUIRE(cudaStreamSynchronize(b) == cudaSuccess);
  CHECK(op(consumer).start_ns >= op(producer).end_ns);
  CHECK(before < op(producer).end_ns);  // the event sync really had to wait
}

TEST_CASE("the legacy default stream waits for blocking streams and they wait for it", "[device]") {
  cudaStream_t s, nb;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking) == cudaSuccess);
  launch(kernel(), 4 * kMs, s);
  uint64_t on_s = last_op().index;
  launch(kernel(), kBusy, nb);
  uint64_t on_nb = last_op().index;
  launch(kernel(), 1 * kMs, nullptr);
  uint64_t legacy = last_op().index;
  launch(kernel(), 1 * kMs, s);
  uint64_t after = last_op().index;
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(op(legacy).start_ns >= op(on_s).end_ns);
  CHECK(op(legacy).start_ns < op(on_nb).end_ns);  // non-blocking streams do not order with it
  CHECK(op(after).start_ns >= op(legacy).end_ns);
}

TEST_CASE("cudaStreamSynchronize blocks until the stream's last op ends, not other streams'", "[device][sync]") {
  cudaStream_t a, b;
  REQUIRE(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) == cudaSuccess);
  launch(kernel(), kBusy, b);
  uint64_t long_op = last_op().index;
  launch(kernel(), 2 * kMs, a);
  uint64_t short_op = last_op().index;
  REQUIRE(cudaStreamSynchronize(a) == cudaSuccess);
  uint64_t returned = mono_ns();
  CHECK(returned >= op(short_op).end_ns);
  CHECK(returned < op(long_op).end_ns);
  CHECK(last_call().kind == SIM_CALL_STREAM_SYNC);
  CHECK(last_call().waited_until_ns == op(short_op).end_ns);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(mono_ns() >= op(long_op).end_ns);
  CHECK(last_call().waited_until_ns == op(long_op).end_ns);
}

TEST_CASE("synchronous copies block except small host-to-device ones", "[device][copy]") {
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 1 << 24) == cudaSuccess);
  std::vector<char> host(1 << 24);
  launch(kernel(), kBusy);
  uint64_t busy = last_op().index;
  REQUIRE(cudaMemcpy(dev, host.data(), 4096, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(last_call().blocked == 0);
  CHECK(mono_ns() < op(busy).end_ns);  // returned while the device was still busy
  REQUIRE(cudaMemcpy(host.data(), dev, 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  const SimDeviceOp& d2h = last_op();
  CHECK(last_call().blocked == 1);
  CHECK(d2h.start_ns >= op(busy).end_ns);  // the legacy stream ordered it after the kernel
  CHECK(mono_ns() >= d2h.end_ns);
  CHECK(d2h.copy_kind == SIM_COPY_D2H);
  CHECK(d2h.src_kind == SIM_MEM_DEVICE);
  CHECK(d2h.dst_kind == SIM_MEM_PAGEABLE);
  REQUIRE(cudaMemcpy(dev, host.data(), 1 << 20, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(last_call().blocked == 1);
  CHECK(mono_ns() >= last_op().end_ns);
  REQUIRE(cudaFree(dev) == cudaSuccess);
}

TEST_CASE("async copies block on pageable memory and not on pinned memory", "[device][copy]") {
  void* dev = nullptr;
  void* pinned = nullptr;
  REQUIRE(cudaMalloc(&dev, 1 << 22) == cudaSuccess);
  REQUIRE(cudaMallocHost(&pinned, 1 << 22) == cudaSuccess);
  std::vector<char> pageable(1 << 22);
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  launch(kernel(), kBusy, s);
  uint64_t busy = last_op().index;
  REQUIRE(cudaMemcpyAsync(dev, pinned, 1 << 22, cudaMemcpyHostToDevice, s) == cudaSuccess);
  const SimDeviceOp& pinned_copy = last_op();
  CHECK(last_call().blocked == 0);
  CHECK(mono_ns() < op(busy).end_ns);
  CHECK(pinned_copy.src_kind == SIM_MEM_PINNED);
  CHECK(pinned_copy.is_async == 1);
  REQUIRE(cudaMemcpyAsync(dev, pageable.data(), 1 << 22, cudaMemcpyHostToDevice, s) == cudaSuccess);
  const SimDeviceOp& pageable_copy = last_op();
  CHECK(last_call().blocked == 1);
  CHECK(mono_ns() >= pageable_copy.end_ns);
  CHECK(pageable_copy.src_kind == SIM_MEM_PAGEABLE);
  // Pageable copies run slower than pinned ones of the same size.
  CHECK(pageable_copy.end_ns - pageable_copy.start_ns > pinned_copy.end_ns - pinned_copy.start_ns);
  REQUIRE(cudaFreeHost(pinned) == cudaSuccess);
  REQUIRE(cudaFree(dev) == cudaSuccess);
}

TEST_CASE("memsets on device memory never block; malloc and free wait for the device", "[device][sync]") {
  void* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 1 << 20) == cudaSuccess);
  launch(kernel(), kBusy);
  uint64_t busy = last_op().index;
  REQUIRE(cudaMemset(dev, 0, 1 << 20) == cudaSuccess);
  CHECK(last_call().blocked == 0);
  CHECK(last_op().kind == SIM_OP_MEMSET);
  CHECK(mono_ns() < op(busy).end_ns);
  void* other = nullptr;
  REQUIRE(cudaMalloc(&other, 64) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_MALLOC);
  CHECK(last_call().blocked == 1);
  CHECK(mono_ns() >= op(busy).end_ns);
  launch(kernel(), 5 * kMs);
  uint64_t busy2 = last_op().index;
  REQUIRE(cudaFree(other) == cudaSuccess);
  CHECK(last_call().blocked == 1);
  CHECK(mono_ns() >= op(busy2).end_ns);
  REQUIRE(cudaFree(dev) == cudaSuccess);
}

TEST_CASE("a captured graph replays its kernels under one correlation id", "[device][graph]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  size_t ops_before;
  {
    const SimDeviceOp* ops;
    ops_before = simcuda_device_ops(&ops);
  }
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
  for (int i = 0; i < 3; ++i) launch(kernel(), 100000, s);
  cudaGraph_t graph;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  {
    const SimDeviceOp* ops;
    CHECK(simcuda_device_ops(&ops) == ops_before);  // captured, not run
  }
  cudaGraphExec_t exec;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  uint32_t correlation = uint32_t(last_call().correlation_id);
  CHECK(last_call().kind == SIM_CALL_GRAPH_LAUNCH);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  const SimDeviceOp* ops;
  size_t n = simcuda_device_ops(&ops);
  REQUIRE(n == ops_before + 3);
  for (size_t i = ops_before; i < n; ++i) CHECK(ops[i].correlation_id == correlation);
  CHECK(ops[ops_before + 1].start_ns >= ops[ops_before].end_ns);
}

TEST_CASE("an unregistered kernel fails to launch and sets the last error", "[device][errors]") {
  static char not_a_kernel;
  int64_t ns = 1000;
  void* args[] = {&ns};
  CHECK(cudaLaunchKernel(&not_a_kernel, dim3(1), dim3(1), args, 0, nullptr) == cudaErrorInvalidDeviceFunction);
  CHECK(cudaGetLastError() == cudaErrorInvalidDeviceFunction);
  CHECK(cudaGetLastError() == cudaSuccess);
}
