// Host functions in stream order (cudaLaunchHostFunc, cudaStreamAddCallback) as the CUDA runtime
// API reference documents them: the function runs on a thread the runtime owns, only after all
// work queued before it on the stream has completed; work queued after it on that stream waits
// until it returns; it may start threads and make CUDA calls on other streams. And copy engines:
// copies in one direction on different streams queue behind each other, kernels do not.
#include <catch2/catch.hpp>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "sim_test_kernels.h"
#include "sim_test_log.h"
#include "simcuda/timeline.h"

using simtest::launch;
using simtest::mono_ns;
using simtest::op;
using simtest::last_op_index;
using simtest::last_call;

namespace {

simtest::TestKernel& kernel() {
  static simtest::TestKernel k;
  static bool once = (simtest::register_kernel(k, "_Z12host_fn_kernv"), true);
  (void)once;
  return k;
}

constexpr int64_t kMs = 1000000;

struct Seen {
  std::atomic<int> calls{0};
  std::atomic<long> tid{0};
  std::atomic<uint64_t> ran_at{0};
  std::atomic<uint64_t> returned_at{0};
  int64_t hold_ns = 0;
  cudaStream_t stream = nullptr;
  cudaStream_t seen_stream = reinterpret_cast<cudaStream_t>(1);
  cudaError_t seen_status = cudaErrorUnknown;
};

void CUDART_CB host_fn(void* p) {
  auto* s = static_cast<Seen*>(p);
  s->tid = long(syscall(SYS_gettid));
  s->ran_at = mono_ns();
  if (s->hold_ns) {
    uint64_t until = mono_ns() + uint64_t(s->hold_ns);
    while (mono_ns() < until) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  s->returned_at = mono_ns();
  s->calls++;
}

void CUDART_CB stream_callback(cudaStream_t stream, cudaError_t status, void* p) {
  auto* s = static_cast<Seen*>(p);
  s->seen_stream = stream;
  s->seen_status = status;
  host_fn(p);
}

}  // namespace

TEST_CASE("a host function runs on another thread after the stream's earlier work", "[host_func]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  launch(kernel(), 30 * kMs, s);
  uint64_t before = last_op_index();
  Seen seen;
  REQUIRE(cudaLaunchHostFunc(s, host_fn, &seen) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_HOST_FUNC);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000);
  uint64_t host_op = last_op_index();
  CHECK(op(host_op).kind == SIM_OP_HOST_FUNC);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(seen.calls == 1);
  CHECK(seen.tid != long(syscall(SYS_gettid)));
  CHECK(seen.ran_at >= op(before).end_ns);  // after the kernel had finished
  CHECK(op(host_op).start_ns >= op(before).end_ns);
  CHECK(op(host_op).start_ns <= seen.ran_at);
  CHECK(op(host_op).end_ns >= seen.returned_at);
  CHECK(mono_ns() >= op(host_op).end_ns);  // the sync waited for the function to return
}

TEST_CASE("work queued after a host function waits until it returns; other streams do not", "[host_func]") {
  cudaStream_t s, other;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) == cudaSuccess);
  Seen seen;
  seen.hold_ns = 200 * kMs;  // far longer than the host needs to queue the next two launches
  REQUIRE(cudaStreamAddCallback(s, stream_callback, &seen, 0) == cudaSuccess);
  CHECK(last_call().kind == SIM_CALL_HOST_FUNC);
  CHECK(last_call().cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamAddCallback_v5000);
  uint64_t host_op = last_op_index();
  launch(kernel(), 1 * kMs, s);
  uint64_t after = last_op_index();
  launch(kernel(), 1 * kMs, other);
  uint64_t elsewhere = last_op_index();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(seen.seen_stream == s);
  CHECK(seen.seen_status == cudaSuccess);
  CHECK(op(after).start_ns >= seen.returned_at);
  CHECK(op(after).start_ns >= op(host_op).end_ns);
  CHECK(op(host_op).end_ns - op(host_op).start_ns >= uint64_t(200 * kMs));
  CHECK(op(elsewhere).start_ns < op(host_op).end_ns);  // the other stream ran meanwhile
  CHECK(cudaStreamAddCallback(s, stream_callback, &seen, 1) == cudaErrorInvalidValue);  // flags must be 0
  cudaGetLastError();
}

namespace {
struct Chained {
  cudaStream_t work_stream;
  std::atomic<bool> done{false};
  std::thread worker;
};
void CUDART_CB starts_a_thread(void* p) {
  auto* c = static_cast<Chained*>(p);
  // As NVIDIA's simpleCallback sample does: the callback hands off to a new thread, which uses CUDA.
  c->worker = std::thread([c] {
    cudaSetDevice(0);
    int64_t ns = 1000000;
    void* args[] = {&ns};
    cudaLaunchKernel(&kernel().stub, dim3(1), dim3(32), args, 0, c->work_stream);
    cudaStreamSynchronize(c->work_stream);
    c->done = true;
  });
}
}  // namespace

TEST_CASE("a host function may start a thread that makes CUDA calls", "[host_func]") {
  cudaStream_t s, w;
  REQUIRE(cudaStreamCreate(&s) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&w, cudaStreamNonBlocking) == cudaSuccess);
  Chained c;
  c.work_stream = w;
  launch(kernel(), 2 * kMs, s);
  REQUIRE(cudaLaunchHostFunc(s, starts_a_thread, &c) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  uint64_t deadline = mono_ns() + 20000 * uint64_t(kMs);
  while (!c.done && mono_ns() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(c.done);
  if (c.worker.joinable()) c.worker.join();
}

TEST_CASE("host functions of several streams run one at a time, each after its own stream's work", "[host_func]") {
  std::vector<cudaStream_t> streams(4);
  std::vector<Seen> seen(4);
  std::vector<uint64_t> kernels(4), hosts(4);
  for (int i = 0; i < 4; ++i) {
    REQUIRE(cudaStreamCreateWithFlags(&streams[size_t(i)], cudaStreamNonBlocking) == cudaSuccess);
    launch(kernel(), (i + 1) * 5 * kMs, streams[size_t(i)]);
    kernels[size_t(i)] = last_op_index();
    seen[size_t(i)].hold_ns = 5 * kMs;
    REQUIRE(cudaLaunchHostFunc(streams[size_t(i)], host_fn, &seen[size_t(i)]) == cudaSuccess);
    hosts[size_t(i)] = last_op_index();
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  for (int i = 0; i < 4; ++i) {
    CHECK(seen[size_t(i)].calls == 1);
    CHECK(op(hosts[size_t(i)]).start_ns >= op(kernels[size_t(i)]).end_ns);
    CHECK(seen[size_t(i)].tid == seen[0].tid);  // one callback thread per device
    intervals.push_back({op(hosts[size_t(i)]).start_ns, op(hosts[size_t(i)]).end_ns});
  }
  std::sort(intervals.begin(), intervals.end());
  for (size_t i = 1; i < intervals.size(); ++i) CHECK(intervals[i].first >= intervals[i - 1].second);  // serialised
}

TEST_CASE("copies in one direction queue for the copy engine; kernels and opposite directions overlap",
          "[copy_engines]") {
  void* dev = nullptr;
  // 4 GiB per copy: 215 ms at the default 20 GB/s, far longer than the host needs to queue the
  // next copies. The host side is registered, never-touched address space (pinned for copies).
  constexpr size_t kBytes = size_t(4) << 30;
  void* pinned = mmap(nullptr, 3 * kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  REQUIRE(pinned != MAP_FAILED);
  REQUIRE(cudaHostRegister(pinned, 3 * kBytes, 0) == cudaSuccess);
  REQUIRE(cudaMalloc(&dev, 3 * kBytes) == cudaSuccess);
  std::vector<cudaStream_t> s(4);
  for (auto& st : s) REQUIRE(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(dev, pinned, kBytes, cudaMemcpyHostToDevice, s[0]) == cudaSuccess);
  uint64_t h2d_a = last_op_index();
  REQUIRE(cudaMemcpyAsync(static_cast<char*>(dev) + kBytes, static_cast<char*>(pinned) + kBytes, kBytes,
                          cudaMemcpyHostToDevice, s[1]) == cudaSuccess);
  uint64_t h2d_b = last_op_index();
  REQUIRE(cudaMemcpyAsync(static_cast<char*>(pinned) + 2 * kBytes, static_cast<char*>(dev) + 2 * kBytes, kBytes,
                          cudaMemcpyDeviceToHost, s[2]) == cudaSuccess);
  uint64_t d2h = last_op_index();
  launch(kernel(), 10 * kMs, s[3]);
  uint64_t k1 = last_op_index();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  // The second H2D copy starts only when the first has freed the H2D engine.
  CHECK(op(h2d_b).start_ns >= op(h2d_a).end_ns);
  // The D2H copy has its own engine: it overlaps the H2D copies.
  CHECK(op(d2h).start_ns < op(h2d_a).end_ns);
  // Kernels on another stream are not held back by copies.
  CHECK(op(k1).start_ns < op(h2d_a).end_ns);
  REQUIRE(cudaHostUnregister(pinned) == cudaSuccess);
  munmap(pinned, 3 * kBytes);
  REQUIRE(cudaFree(dev) == cudaSuccess);
}
