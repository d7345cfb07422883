// tests/unit/analysis_hta_view_test.cpp: report --hta's numbers (analysis/hta_view.h) on cases
// computed by hand with HTA's rules; the shared real traces are checked against HTA's own
// numbers by tests/unit/hta_parity.py.

#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "analysis/hta_kernel_class.h"
#include "analysis/hta_view.h"

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

AnalysisOptions withHta() {
  AnalysisOptions options;
  options.hta_view = true;
  return options;
}

ApiCallEvent named(ApiCallEvent e, uint32_t api_name_id) {
  e.api_name_id = api_name_id;
  return e;
}

DeviceActivityEvent namedKernel(uint64_t start_ns, uint64_t end_ns, uint64_t correlation_id, uint32_t name_id,
                                uint64_t stream = 7) {
  DeviceActivityEvent e = kernelAt(start_ns, end_ns, correlation_id, stream);
  e.name_id = name_id;
  return e;
}

MarkerEvent step(v1::MarkerKind kind, uint64_t time_ns, uint64_t number) {
  MarkerEvent m;
  m.kind = kind;
  m.thread_id = 1;
  m.time_ns = time_ns;
  m.step = number;
  return m;
}

const HtaStreamIdle* streamOf(const HtaView& h, int64_t stream) {
  for (const HtaStreamIdle& s : h.idle_breakdown) {
    if (s.stream == stream) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("HTA's kernel classes follow its name patterns") {
  CHECK(htaKernelClass("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)") == HtaKernelClass::kCommunication);
  CHECK(htaKernelClass("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)") == HtaKernelClass::kCommunication);
  CHECK(htaKernelClass("void at::native::ncclKernelLike()") == HtaKernelClass::kCommunication);
  CHECK(htaKernelClass("Memcpy HtoD (Pageable -> Device)") == HtaKernelClass::kMemory);
  CHECK(htaKernelClass("Memset (Device)") == HtaKernelClass::kMemory);
  CHECK(htaKernelClass("Stream Sync") == HtaKernelClass::kOther);
  CHECK(htaKernelClass("Context Sync") == HtaKernelClass::kOther);
  CHECK(htaKernelClass("Stream Wait Event") == HtaKernelClass::kOther);
  CHECK(htaKernelClass("void vectorized_Memcpy_kernel()") == HtaKernelClass::kOther);  // ".*Memcpy"
  CHECK(htaKernelClass("volta_sgemm_128x64_nn") == HtaKernelClass::kComputation);
  CHECK(htaKernelClass("") == HtaKernelClass::kComputation);
}

TEST_CASE("HTA 0.5.0's kernel classes differ from 0.6.1's where its patterns do") {
  const HtaRelease old = HtaRelease::k0_5_0;
  CHECK(htaKernelClass("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)", old) == HtaKernelClass::kCommunication);
  // ^nccl.*Kernel: a name without "Kernel" after "nccl" is not communication, and not excluded
  // from computation either.
  CHECK(htaKernelClass("ncclAllReduceRingLLKern", old) == HtaKernelClass::kComputation);
  CHECK(htaKernelClass("ncclAllReduceRingLLKern") == HtaKernelClass::kCommunication);
  CHECK(htaKernelClass("Stream Wait Event", old) == HtaKernelClass::kComputation);
  CHECK(htaKernelClass("Stream Wait Event") == HtaKernelClass::kOther);
  CHECK(htaKernelClass("Stream Sync", old) == HtaKernelClass::kOther);
  CHECK(htaKernelClass("Memcpy HtoD (Pinned -> Device)", old) == HtaKernelClass::kMemory);
  CHECK(htaKernelClass("void x_Memset_kernel()", old) == HtaKernelClass::kComputation);  // Memset only at the start
  CHECK(htaKernelClass("void x_Memset_kernel()") == HtaKernelClass::kOther);
}

TEST_CASE("the temporal breakdown is the union of all GPU work, compute the union of computation kernels") {
  // Stream 7: gemm [10, 20), a copy [40, 50); stream 8: an NCCL kernel [15, 30).
  // kernel time 50 - 10 = 40; union [10, 30) + [40, 50) = 30, so idle 10; compute 10 (the gemm);
  // non-compute 40 - 10 - 10 = 20. Overlap: the NCCL kernel (15 long) meets the gemm for 5.
  EngineFeed feed(withHta());
  feed.name(v1::STRING_KIND_KERNEL_NAME, 1, "volta_sgemm_128x64_nn")
      .name(v1::STRING_KIND_KERNEL_NAME, 2, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)")
      .name(v1::STRING_KIND_API_NAME, 1, "cudaLaunchKernel")
      .name(v1::STRING_KIND_API_NAME, 2, "cudaMemcpyAsync")
      .add(named(launch(1, us(0), us(5), 1), 1))
      .add(named(launch(1, us(1), us(6), 2, 8), 1))
      .add(named(call(v1::API_KIND_MEMCPY_ASYNC, 1, us(2), us(7), 3), 2))
      .add(namedKernel(us(10), us(20), 1, 1))
      .add(namedKernel(us(15), us(30), 2, 2, 8))
      .add(copyAt(us(40), us(50), 3, v1::MEMORY_KIND_PINNED));
  const ProcessAnalysis p = feed.run();
  REQUIRE(p.hta);
  const HtaView& h = *p.hta;
  CHECK(h.cut == "all");
  CHECK(h.gpu_events == 3);
  CHECK(h.gpu_events_dropped == 0);
  CHECK(h.kernel_time_us == 40);
  CHECK(h.idle_time_us == 10);
  CHECK(h.compute_time_us == 10);
  CHECK(h.non_compute_time_us == 20);
  CHECK(h.idle_time_pctg == Approx(25.0));
  CHECK(h.compute_time_pctg == Approx(25.0));
  CHECK(h.non_compute_time_pctg == Approx(50.0));
  REQUIRE(h.comm_comp_overlap_pctg);
  CHECK(*h.comm_comp_overlap_pctg == Approx(33.33));
  // Launch delays 10 - 5, 15 - 6, 40 - 7; no kernel shorter than its 5 us call.
  CHECK(h.launches == 3);
  CHECK(h.short_kernels == 0);
  CHECK(h.runtime_outliers == 0);
  CHECK(h.launch_delay_outliers == 0);
  CHECK(h.mean_launch_delay_us == Approx(47.0 / 3.0));
  // Stream 7: the copy's gap of 20 after the gemm, whose call came before the gemm ended: kernel_wait.
  const HtaStreamIdle* s7 = streamOf(h, 7);
  REQUIRE(s7);
  CHECK_FALSE(s7->has_host_wait);
  CHECK(s7->has_kernel_wait);
  CHECK(s7->kernel_wait_us == 20);
  CHECK(s7->other_us == 0);
  const HtaStreamIdle* s8 = streamOf(h, 8);
  REQUIRE(s8);  // a stream with one record has only its (empty) other row
  CHECK_FALSE(s8->has_host_wait);
  CHECK_FALSE(s8->has_kernel_wait);
  CHECK(s8->other_us == 0);
}

TEST_CASE("without --hta nothing of HTA's view is computed") {
  EngineFeed feed;
  feed.add(launch(1, us(0), us(5), 1)).add(kernelAt(us(10), us(20), 1));
  CHECK_FALSE(feed.run().hta);
}

TEST_CASE("with two or more steps, work launched at or after the last step's start is left out") {
  // Steps begin at 100 and 200. corr 1 is launched before any step, corr 2 in step 1 but runs in
  // step 2 (kept: HTA cuts by the call), corr 3 in step 2 (left out), corr 99 has no call.
  EngineFeed feed(withHta());
  feed.add(launch(1, us(50), us(55), 1))
      .add(launch(1, us(150), us(155), 2))
      .add(launch(1, us(210), us(215), 3))
      .add(step(v1::MARKER_KIND_STEP_BEGIN, us(100), 1))
      .add(step(v1::MARKER_KIND_STEP_END, us(190), 1))
      .add(step(v1::MARKER_KIND_STEP_BEGIN, us(200), 2))
      .add(step(v1::MARKER_KIND_STEP_END, us(290), 2))
      .add(kernelAt(us(60), us(70), 1))
      .add(kernelAt(us(80), us(90), 99))
      .add(kernelAt(us(220), us(230), 3))
      .add(kernelAt(us(250), us(260), 2));
  const HtaView h = *feed.run().hta;
  CHECK(h.profiler_steps == 2);
  CHECK(h.cut == "before_last_step_start");
  CHECK(h.gpu_events == 2);
  CHECK(h.gpu_events_dropped == 2);
  CHECK(h.kernel_time_us == 200);  // 260 - 60
  CHECK(h.idle_time_us == 180);
  // Stream 7 keeps [60, 70) and [250, 260); corr 2's call (150) began after 70: host_wait 180.
  const HtaStreamIdle* s7 = streamOf(h, 7);
  REQUIRE(s7);
  CHECK(s7->has_host_wait);
  CHECK(s7->host_wait_us == 180);
  CHECK_FALSE(s7->has_kernel_wait);
}

TEST_CASE("with one step, nothing is left out, as released HTA (0.5.0 and 0.6.1) does") {
  // HTA's `_filter_irrelevant_gpu_kernels` returns early with fewer than two steps: the kernel
  // launched after the only step's end (corr 2) and the one without a call (corr 99) stay. (HTA's
  // later source would cut at the step's end; traceinsight 0.6.1 does not, checked live.)
  for (const HtaRelease release : {HtaRelease::k0_6_1, HtaRelease::k0_5_0}) {
    AnalysisOptions options = withHta();
    options.hta_release = release;
    EngineFeed feed(options);
    feed.add(launch(1, us(20), us(25), 3))
        .add(launch(1, us(150), us(155), 1))
        .add(launch(1, us(250), us(255), 2))
        .add(step(v1::MARKER_KIND_STEP_BEGIN, us(100), 1))
        .add(step(v1::MARKER_KIND_STEP_END, us(200), 1))
        .add(kernelAt(us(30), us(40), 3))
        .add(kernelAt(us(120), us(125), 99))
        .add(kernelAt(us(160), us(170), 1))
        .add(kernelAt(us(260), us(270), 2));
    const HtaView h = *feed.run().hta;
    CHECK(h.release == release);
    CHECK(h.profiler_steps == 1);
    CHECK(h.cut == "all");
    CHECK(h.gpu_events == 4);
    CHECK(h.gpu_events_dropped == 0);
    CHECK(h.kernel_time_us == 240);  // 270 - 30
  }
}

TEST_CASE("starts round up and ends down to whole microseconds") {
  // [10.2, 20.7) us becomes [11, 20); [30.1, 30.8) becomes [31, 30): HTA keeps its length of -1
  // (trace_parser.py's round_down_time_stamps, then merge_kernel_intervals sums end - ts).
  EngineFeed feed(withHta());
  feed.add(launch(1, 1000, 5000, 1))
      .add(launch(1, 1500, 6000, 2))
      .add(kernelAt(10'200, 20'700, 1))
      .add(kernelAt(30'100, 30'800, 2));
  const HtaView h = *feed.run().hta;
  CHECK(h.kernel_time_us == 19);  // the last merged interval's end, 30, - 11
  CHECK(h.idle_time_us == 11);    // 19 - (9 - 1)
  CHECK(h.compute_time_us == 8);  // unnamed kernels match none of HTA's patterns: computation
  CHECK(h.non_compute_time_us == 0);
}

TEST_CASE("a record under a microsecond that rounds to an end before its start keeps HTA's length of -1") {
  // Newer Kineto writes ns timestamps: kernels of 0.5 us are common. [20.2, 20.7) -> [21, 20),
  // then [21.0, 25.0) -> [21, 25): HTA starts a new merged interval at 21 (21 > the ends so far,
  // 20), so the run time is 10 + -1 + 4 = 13 where an empty [21, 21) would merge into 14.
  EngineFeed feed(withHta());
  feed.add(launch(1, 1000, 2000, 1)).add(launch(1, 3000, 4000, 2)).add(launch(1, 5000, 6000, 3));
  feed.add(kernelAt(us(10), us(20), 1)).add(kernelAt(20'200, 20'700, 2)).add(kernelAt(us(21), us(25), 3));
  const HtaView h = *feed.run().hta;
  CHECK(h.kernel_time_us == 15);
  CHECK(h.compute_time_us == 13);
  CHECK(h.idle_time_us == 2);
  // Idle per stream takes each record's end as HTA computes it: 21 - 20 = 1, then 21 - 20 = 1.
  const HtaStreamIdle* s = streamOf(h, 7);
  REQUIRE(s != nullptr);
  CHECK(s->other_us + s->kernel_wait_us + s->host_wait_us == 2);
}

TEST_CASE("idle per stream: gaps to the previous record's end, sync records only in the temporal breakdown") {
  EngineFeed feed(withHta());
  feed.add(launch(1, us(0), us(1), 1))
      .add(launch(1, us(5), us(6), 2))
      .add(launch(1, us(8), us(9), 3))
      .add(launch(1, us(200), us(201), 4))
      .add(launch(1, us(202), us(203), 5))
      .add(call(v1::API_KIND_STREAM_SYNC, 1, us(204), us(300), 6))
      .add(kernelAt(us(10), us(20), 1))
      .add(kernelAt(us(25), us(40), 2))    // gap 5, call before the previous end: kernel_wait
      .add(kernelAt(us(100), us(110), 3))  // gap 60: other
      .add(kernelAt(us(205), us(215), 4))  // gap 95, call (200) after the previous end: host_wait
      .add(kernelAt(us(212), us(220), 5))  // overlaps: gap -3, summed as HTA does: kernel_wait
      .add(work(v1::ACTIVITY_KIND_SYNC, us(220), us(300), 6));
  const HtaView h = *feed.run().hta;
  const HtaStreamIdle* s7 = streamOf(h, 7);
  REQUIRE(s7);
  CHECK(s7->host_wait_us == 95);
  CHECK(s7->kernel_wait_us == 2);
  CHECK(s7->other_us == 60);
  // Temporal: the sync record is GPU time (HTA: stream != -1). Union 10 + 15 + 10 + [205, 300) 95.
  CHECK(h.gpu_events == 6);
  CHECK(h.kernel_time_us == 290);
  CHECK(h.idle_time_us == 160);
  CHECK(h.compute_time_us == 50);
  CHECK(h.non_compute_time_us == 80);
}

TEST_CASE("launch statistics take HTA's four call names, rounded durations and a delay clipped at 0") {
  EngineFeed feed(withHta());
  feed.name(v1::STRING_KIND_API_NAME, 1, "cudaLaunchKernel")
      .name(v1::STRING_KIND_API_NAME, 2, "cudaLaunchKernel_v7000")
      .name(v1::STRING_KIND_API_NAME, 3, "__cudaLaunchKernel")
      .name(v1::STRING_KIND_API_NAME, 4, "cudaGraphLaunch")
      .name(v1::STRING_KIND_API_NAME, 5, "cudaMemsetAsync")
      .add(named(launch(1, us(0), us(10), 1), 1))     // cpu 10, gpu 1, delay 0 (clipped): short
      .add(named(launch(1, us(20), us(90), 2), 2))    // cpu 70: runtime outlier; delay 210: outlier
      .add(named(launch(1, us(400), us(405), 3), 3))  // CUDA 13's <<<>>> name: not HTA's
      .add(named(call(v1::API_KIND_GRAPH_LAUNCH, 1, us(500), us(505), 4), 4))
      .add(named(call(v1::API_KIND_MEMSET_ASYNC, 1, us(600), us(602), 5), 5))  // cpu 2, gpu 1, delay 98
      .add(kernelAt(us(8), us(9), 1))
      .add(kernelAt(us(300), us(310), 2))
      .add(kernelAt(us(406), us(407), 3))
      .add(kernelAt(us(510), us(520), 4))
      .add(kernelAt(us(520), us(530), 4))
      .add(work(v1::ACTIVITY_KIND_MEMSET, us(700), us(701), 5));
  const HtaView h = *feed.run().hta;
  CHECK(h.gpu_events == 6);  // both kernels of the graph join its launch
  CHECK(h.launches == 3);
  CHECK(h.short_kernels == 2);
  CHECK(h.runtime_outliers == 1);
  CHECK(h.launch_delay_outliers == 1);
  CHECK(h.mean_launch_delay_us == Approx(308.0 / 3.0));
}

TEST_CASE("work held for the cut is folded as each step begins, in order") {
  // 50 steps of 100 us, one kernel per step launched in it and run in the next: every kernel but
  // the last step's is kept, whatever order the cut resolves them in.
  EngineFeed feed(withHta());
  for (uint64_t i = 0; i < 50; ++i) {
    feed.add(step(v1::MARKER_KIND_STEP_BEGIN, us(100 * i), i + 1));
    feed.add(launch(1, us(100 * i + 10), us(100 * i + 15), i + 1));
    feed.add(kernelAt(us(100 * i + 120), us(100 * i + 130), i + 1));
  }
  const HtaView h = *feed.run().hta;
  CHECK(h.profiler_steps == 50);
  CHECK(h.gpu_events == 49);
  CHECK(h.gpu_events_dropped == 1);
  CHECK(h.kernel_time_us == 100 * 48 + 10);  // [120, 130) to [4920, 4930)
  CHECK(h.idle_time_us == 100 * 48 + 10 - 49 * 10);
}

TEST_CASE("work without a call is dropped once a second step shows up") {
  EngineFeed feed(withHta());
  feed.add(launch(1, us(50), us(55), 1))
      .add(step(v1::MARKER_KIND_STEP_BEGIN, us(100), 1))
      .add(step(v1::MARKER_KIND_STEP_BEGIN, us(200), 2))
      .add(kernelAt(us(60), us(70), 1))
      .add(kernelAt(us(80), us(90), 99));  // no call: held until the second step, then dropped
  const HtaView h = *feed.run().hta;
  CHECK(h.cut == "before_last_step_start");
  CHECK(h.gpu_events == 1);
  CHECK(h.gpu_events_dropped == 1);
}

TEST_CASE("where HTA's own non-compute assertion would fail, the view says so") {
  // Computation [10, 20), a copy [20.2, 20.7) -> [21, 20), computation [21, 25): all work merges
  // to 10 - 1 + 4 = 13, computation alone to 10 + 4 = 14, so HTA's non-compute is 15 - 14 - 2 =
  // -1 and its get_temporal_breakdown raises AssertionError (checked with HTA 0.5.0 on this trace).
  EngineFeed feed(withHta());
  feed.add(launch(1, 1000, 2000, 1)).add(launch(1, 3000, 4000, 2)).add(launch(1, 5000, 6000, 3));
  feed.add(kernelAt(us(10), us(20), 1))
      .add(copyAt(20'200, 20'700, 2, v1::MEMORY_KIND_PINNED))
      .add(kernelAt(us(21), us(25), 3));
  const HtaView h = *feed.run().hta;
  CHECK(h.kernel_time_us == 15);
  CHECK(h.idle_time_us == 2);
  CHECK(h.compute_time_us == 14);
  CHECK(h.non_compute_time_us == 0);
  CHECK(h.hta_asserts_non_compute);
}

TEST_CASE("every GPU record of one id that starts before its call joins it, not only the first") {
  // A graph launch (one id on each of its kernels) whose kernels' clock runs ahead of the call's:
  // HTA joins them all by id.
  EngineFeed feed(withHta());
  feed.name(v1::STRING_KIND_API_NAME, 1, "cudaLaunchKernel")
      .add(named(launch(1, us(0), us(5), 1), 1))
      .add(kernelAt(us(10), us(15), 1))
      .add(kernelAt(us(16), us(18), 2))
      .add(kernelAt(us(19), us(21), 2))
      .add(kernelAt(us(22), us(30), 2))
      .add(call(v1::API_KIND_GRAPH_LAUNCH, 1, us(24), us(26), 2, false, 7));
  const HtaView h = *feed.run().hta;
  CHECK(h.gpu_events == 4);
  CHECK(h.gpu_events_dropped == 0);
  CHECK(h.kernel_time_us == 20);
  CHECK(h.idle_time_us == 3);
}

TEST_CASE("GPU work that starts before its call's timestamp still joins it") {
  // The trace's GPU clock runs 3 us ahead of the CPU's here: the kernel of corr 2 starts at 20,
  // its call at 22. HTA joins by id regardless of time, so it is kept and counted as a launch.
  EngineFeed feed(withHta());
  feed.name(v1::STRING_KIND_API_NAME, 1, "cudaLaunchKernel")
      .add(named(launch(1, us(0), us(5), 1), 1))
      .add(named(launch(1, us(22), us(30), 2), 1))
      .add(kernelAt(us(10), us(15), 1))
      .add(kernelAt(us(20), us(40), 2));
  const HtaView h = *feed.run().hta;
  CHECK(h.gpu_events == 2);
  CHECK(h.gpu_events_dropped == 0);
  CHECK(h.launches == 2);
  CHECK(h.kernel_time_us == 30);
  CHECK(h.idle_time_us == 5);
}
