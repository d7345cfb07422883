// Step detection (analysis/step_detector.h): period finding on name sequences, and the
// stage on synthetic training loops fed in time order. Times in microseconds (us()).
#include "analysis/step_detector.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace gapwatch;
using namespace gapwatch::analysis;

namespace {

constexpr uint64_t us(uint64_t v) { return v * 1'000; }

std::vector<uint32_t> repeat(const std::vector<uint32_t>& unit, std::size_t times) {
  std::vector<uint32_t> out;
  for (std::size_t i = 0; i < times; ++i) out.insert(out.end(), unit.begin(), unit.end());
  return out;
}

std::vector<uint32_t> concat(std::vector<uint32_t> a, const std::vector<uint32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("the period of a clean periodic sequence is its unit", "[step_detector]") {
  const auto period = findSequencePeriod(repeat({1, 2, 3, 4}, 10));
  REQUIRE(period);
  CHECK(period->period == 4);
  CHECK(period->mismatch_rate == 0);
}

TEST_CASE("warm-up kernels before the steady state do not change the period", "[step_detector]") {
  const auto period = findSequencePeriod(concat({90, 91, 92, 93, 94}, repeat({1, 2, 3, 4, 5, 6}, 12)));
  REQUIRE(period);
  CHECK(period->period == 6);
}

TEST_CASE("a recompile that renames a kernel mid-run keeps the steady-state period", "[step_detector]") {
  // Kernel 3 becomes kernel 33 from the seventh step on: the period still agrees everywhere but
  // at the change, its multiples disagree more often.
  const auto period = findSequencePeriod(concat(repeat({1, 2, 3, 4, 5}, 6), repeat({1, 2, 33, 4, 5}, 6)));
  REQUIRE(period);
  CHECK(period->period == 5);
  CHECK(period->mismatch_rate == Approx(1.0 / 55.0));
}

TEST_CASE("a loop inside the step is not taken for the step", "[step_detector]") {
  // Step: five times (gemm, loss), then the optimizer. (gemm, loss) nearly repeats every 2, but
  // only the 11-kernel step repeats exactly.
  const auto period = findSequencePeriod(repeat(concat(repeat({1, 2}, 5), {3}), 8));
  REQUIRE(period);
  CHECK(period->period == 11);
}

TEST_CASE("sequences without a repeating unit have no period", "[step_detector]") {
  std::vector<uint32_t> distinct(60);
  for (uint32_t i = 0; i < distinct.size(); ++i) distinct[i] = i + 1;
  CHECK_FALSE(findSequencePeriod(distinct));
  // A unit seen only twice is not enough to call it periodic (three repetitions needed).
  CHECK_FALSE(findSequencePeriod(repeat({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2)));
}

namespace {

constexpr uint32_t kK1 = 1, kK2 = 2, kK3 = 3, kK2Recompiled = 4, kK1Renamed = 5, kWarmup = 10, kA = 20, kB = 21;

StringTable names() {
  StringTable strings;
  strings.define(v1::STRING_KIND_KERNEL_NAME, kK1, "_Z9embeddingPKfS0_Pf");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kK2, "_Z9attentionPKfS0_Pf");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kK3, "_Z5adamwPKfS0_Pf");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kK2Recompiled, "triton_attention_v2");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kK1Renamed, "triton_embedding_v2");
  for (uint32_t i = 0; i < 5; ++i) strings.define(v1::STRING_KIND_KERNEL_NAME, kWarmup + i, "autotune_" + std::to_string(i));
  strings.define(v1::STRING_KIND_KERNEL_NAME, kA, "_Z3addPKfS0_Pf");
  strings.define(v1::STRING_KIND_KERNEL_NAME, kB, "_Z3mulPKfS0_Pf");
  strings.define(v1::STRING_KIND_MARKER_NAME, 1, "ProfilerStep#0");
  strings.define(v1::STRING_KIND_MARKER_NAME, 2, "forward");
  return strings;
}

DeviceActivityEvent kernel(uint32_t name_id, uint64_t start_ns, uint64_t end_ns) {
  DeviceActivityEvent e;
  e.kind = v1::ACTIVITY_KIND_KERNEL;
  e.name_id = name_id;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.stream = 7;
  return e;
}

ApiCallEvent hostCall(v1::ApiKind kind, uint64_t start_ns, uint64_t end_ns, bool blocked = false) {
  ApiCallEvent e;
  e.kind = kind;
  e.thread_id = 100;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.blocked = blocked;
  return e;
}

MarkerEvent marker(v1::MarkerKind kind, uint64_t time_ns, uint32_t name_id = 0) {
  MarkerEvent e;
  e.kind = kind;
  e.thread_id = 100;
  e.time_ns = time_ns;
  e.name_id = name_id;
  return e;
}

StepStats run(StepDetectorStage& stage) {
  stage.finish();
  ProcessAnalysis result;
  stage.contribute(result);
  return result.steps;
}

// A training loop: per step the host prepares a batch for 1000 us (the device idles), copies it
// (an async copy call shortly before the first kernel), then three kernels run back to back.
// Step 0 runs slower (kernels of 300 us instead of 100 us) after five autotuning kernels; from
// `recompile_at` on, the second kernel is a recompiled one; from `rename_at` on, the first.
// Each regular step is 1000 + 3 x 100 = 1300 us, 1000 us of it idle.
void feedTrainingLoop(StepDetectorStage& stage, std::size_t steps, std::size_t recompile_at = SIZE_MAX,
                      std::size_t rename_at = SIZE_MAX, bool with_warmup = true, uint32_t warmup_kernels = 5,
                      bool with_copy = true) {
  uint64_t t = us(100);
  if (with_warmup) {
    for (uint32_t i = 0; i < warmup_kernels; ++i, t += us(50)) stage.onActivity(kernel(kWarmup + i, t, t + us(50)));
  }
  for (std::size_t s = 0; s < steps; ++s) {
    t += us(1000);
    if (with_copy) stage.onApiCall(hostCall(v1::API_KIND_MEMCPY_ASYNC, t - us(100), t - us(90)));
    const uint64_t d = (with_warmup && s == 0) ? us(300) : us(100);
    const uint32_t first = s >= rename_at ? kK1Renamed : kK1;
    const uint32_t second = s >= recompile_at ? kK2Recompiled : kK2;
    stage.onActivity(kernel(first, t, t + d));
    stage.onActivity(kernel(second, t + d, t + 2 * d));
    stage.onActivity(kernel(kK3, t + 2 * d, t + 3 * d));
    t += 3 * d;
  }
}

}  // namespace

TEST_CASE("steps from a recurring kernel sequence, through warm-up and a recompile", "[step_detector]") {
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  feedTrainingLoop(stage, 12, /*recompile_at=*/6);
  const StepStats steps = run(stage);
  CHECK(steps.method == "recurring kernel sequence");
  // A step begins at the kernel after the host's batch preparation, present in every step.
  CHECK(steps.how == "the kernel sequence repeats every 3 kernels; a step begins at each embedding");
  CHECK(steps.steps == 12);
  // Eleven complete steps: step 0 is 1000 + 900 us, the other ten 1300 us.
  CHECK(steps.median_ns == us(1300));
  CHECK(steps.p10_ns == us(1300));
  CHECK(steps.p90_ns == us(1300));
  CHECK(steps.median_idle_fraction == Approx(1000.0 / 1300.0).margin(1e-6));
}

TEST_CASE("after the step-start kernel is renamed the stage learns the sequence again", "[step_detector]") {
  // Learning on 30 kernels (ten steps). From step 20 the first kernel has a new name: the
  // pattern is missed for more than four periods (12 kernels) after step 19's start, at kernel 70;
  // learning restarts at kernel 71 (step 23's last) and, at kernel 100, finds steps 24..33 in
  // those 30 kernels, then follows steps 34..39. Steps 20..23 are not delimited, and step 19 is
  // not closed across the change: 20 + 16 = 36 steps, 19 + 15 = 34 of them timed.
  const StringTable strings = names();
  StepDetectorOptions options;
  options.learning_kernels = 30;
  StepDetectorStage stage({}, options);
  stage.setStrings(&strings);
  feedTrainingLoop(stage, 40, SIZE_MAX, /*rename_at=*/20, /*with_warmup=*/false);
  const StepStats steps = run(stage);
  CHECK(steps.method == "recurring kernel sequence");
  CHECK(steps.steps == 36);
  CHECK(steps.median_ns == us(1300));
  CHECK(steps.median_idle_fraction == Approx(1000.0 / 1300.0).margin(1e-6));
}

TEST_CASE("a warm-up longer than the learning window is skipped by learning on", "[step_detector]") {
  // 40 distinct warm-up kernels, then 30 steps (step k's kernels are 40 + 3k ...), learning on 30
  // kernels.
  const StringTable strings = names();
  StepDetectorOptions options;
  options.learning_kernels = 30;
  StepDetectorStage stage({}, options);
  stage.setStrings(&strings);
  SECTION("kernels only: learning slides until the window holds the period") {
    // Windows [0, 30), [15, 45) and [30, 60) hold too much warm-up for a period; [45, 75) finds
    // it, with steps 2..11 in it; steps 12..29 follow. Steps 0 and 1 are not delimited.
    feedTrainingLoop(stage, 30, SIZE_MAX, SIZE_MAX, true, /*warmup_kernels=*/40, /*with_copy=*/false);
    const StepStats steps = run(stage);
    CHECK(steps.method == "recurring kernel sequence");
    CHECK(steps.steps == 28);
    CHECK(steps.median_ns == us(1300));
    CHECK(steps.p90_ns == us(1300));
  }
  SECTION("a copy every step delimits the steps before the kernels show their period") {
    // Window [30, 60) has no kernel period yet, but the copy before each step's first kernel
    // recurs every 3 kernels from step 0 on: 30 copies end 29 complete steps of 1300 us.
    feedTrainingLoop(stage, 30, SIZE_MAX, SIZE_MAX, true, /*warmup_kernels=*/40, /*with_copy=*/true);
    const StepStats steps = run(stage);
    CHECK(steps.method == "recurring sync point");
    CHECK(steps.how.find("memcpy_async") != std::string::npos);
    CHECK(steps.steps == 29);
    CHECK(steps.median_ns == us(1300));
  }
}

TEST_CASE("a kernel loop without host interaction is delimited by the recurring sync", "[step_detector]") {
  // Six steps of 20 x (add, mul), 10 us each, back to back from the step's start; the host then
  // waits in cudaStreamSynchronize until the queue drains (400 us after the step's start) and
  // spends 100 us before the next step's first kernel. The kernel sequence alone repeats every
  // 2 kernels; the sync recurs every 40.
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  uint64_t t = us(1000);
  for (int s = 0; s < 6; ++s) {
    const uint64_t step_start = t;
    stage.onActivity(kernel(kA, t, t + us(10)));
    stage.onApiCall(hostCall(v1::API_KIND_STREAM_SYNC, t + us(5), step_start + us(400), true));
    for (int i = 0; i < 40; ++i, t += us(10)) {
      if (i > 0) stage.onActivity(kernel(i % 2 == 0 ? kA : kB, t, t + us(10)));
    }
    t = step_start + us(400) + us(100);
  }
  const StepStats steps = run(stage);
  CHECK(steps.method == "recurring sync point");
  CHECK(steps.how.find("stream_sync") != std::string::npos);
  CHECK(steps.how.find("every 40 kernels") != std::string::npos);
  CHECK(steps.steps == 6);
  // Step 0 runs from the first kernel to the first sync's return: 400 us, all busy. Steps 1..5:
  // from one sync's return to the next, 500 us with 100 us idle. Nearest-rank median of
  // (400, 500 x 5) is the third value.
  CHECK(steps.median_ns == us(500));
  CHECK(steps.p10_ns == us(400));
  CHECK(steps.median_idle_fraction == Approx(0.2).margin(1e-6));
}

TEST_CASE("step markers are used when the program sends them", "[step_detector]") {
  // Three steps of 10, 12 and 11 ms, each with 5 ms of kernel work; the periodic kernels would
  // give other boundaries, but markers win.
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  const uint64_t lengths_us[] = {10'000, 12'000, 11'000};
  uint64_t t = us(1000);
  for (uint64_t length_us : lengths_us) {
    stage.onMarker(marker(v1::MARKER_KIND_STEP_BEGIN, t));
    stage.onActivity(kernel(kK1, t + us(1000), t + us(3000)));
    stage.onActivity(kernel(kK2, t + us(3000), t + us(6000)));
    stage.onMarker(marker(v1::MARKER_KIND_STEP_END, t + us(length_us)));
    t += us(length_us);
  }
  const StepStats steps = run(stage);
  CHECK(steps.method == "markers");
  CHECK(steps.steps == 3);
  CHECK(steps.median_ns == us(11'000));
  CHECK(steps.p10_ns == us(10'000));
  CHECK(steps.p90_ns == us(12'000));
  // Idle fractions 5/10, 7/12, 6/11: the median is 6/11.
  CHECK(steps.median_idle_fraction == Approx(6.0 / 11.0).margin(1e-6));
  // The sample for gapwatch diff: mean 11 ms, sample standard deviation 1 ms (deviations -1, 1, 0).
  CHECK(steps.timed_steps == 3);
  CHECK(steps.mean_ns == Approx(static_cast<double>(us(11'000))));
  CHECK(steps.stddev_ns == Approx(static_cast<double>(us(1'000))));
}

TEST_CASE("NVTX ranges named ProfilerStep#N delimit steps; other ranges inside them do not", "[step_detector]") {
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  uint64_t t = us(1000);
  for (int s = 0; s < 4; ++s) {
    stage.onMarker(marker(v1::MARKER_KIND_RANGE_PUSH, t, 1));  // ProfilerStep#0 (name reused)
    stage.onMarker(marker(v1::MARKER_KIND_RANGE_PUSH, t + us(100), 2));  // forward
    stage.onActivity(kernel(kK1, t + us(200), t + us(2200)));
    stage.onMarker(marker(v1::MARKER_KIND_RANGE_POP, t + us(2300)));
    stage.onMarker(marker(v1::MARKER_KIND_RANGE_POP, t + us(4000)));
    t += us(5000);  // 1 ms between steps, outside any step
  }
  const StepStats steps = run(stage);
  CHECK(steps.method == "markers");
  CHECK(steps.how.find("ProfilerStep") != std::string::npos);
  CHECK(steps.steps == 4);
  CHECK(steps.median_ns == us(4000));
  CHECK(steps.median_idle_fraction == Approx(0.5).margin(1e-6));
}

TEST_CASE("without markers, periodic kernels or a recurring sync there are no steps", "[step_detector]") {
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  for (uint32_t i = 0; i < 5; ++i) stage.onActivity(kernel(kWarmup + i, us(100 * i), us(100 * i + 50)));
  const StepStats steps = run(stage);
  CHECK(steps.method == "none");
  CHECK(steps.steps == 0);
  CHECK(steps.median_ns == 0);
}

TEST_CASE("a program without a loop reports no steps", "[step_detector]") {
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  SECTION("vector add: two copies in, one kernel, one copy out") {
    // Three synchronous copies, two of them before the one kernel: the copies are no step
    // boundaries, as no kernel runs between the first two.
    stage.onApiCall(hostCall(v1::API_KIND_MEMCPY, us(100), us(300), true));
    stage.onApiCall(hostCall(v1::API_KIND_MEMCPY, us(400), us(600), true));
    stage.onActivity(kernel(kK1, us(700), us(800)));
    stage.onApiCall(hostCall(v1::API_KIND_MEMCPY, us(650), us(1000), true));
  }
  SECTION("three different kernels, each followed by a synchronize") {
    // The sync recurs once per kernel, but what it delimits never repeats.
    uint64_t t = us(100);
    for (uint32_t name : {kK1, kK2, kK3}) {
      stage.onActivity(kernel(name, t, t + us(100)));
      stage.onApiCall(hostCall(v1::API_KIND_DEVICE_SYNC, t + us(10), t + us(110), true));
      t += us(200);
    }
  }
  const StepStats steps = run(stage);
  CHECK(steps.method == "none");
  CHECK(steps.steps == 0);
}

TEST_CASE("a single kernel repeated 300 times is a loop of 300 steps", "[step_detector]") {
  // matrixMul: one warm-up kernel and a synchronize, then 300 timed launches of the same kernel
  // between two event records, then an event synchronize.
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  stage.onActivity(kernel(kK1, us(100), us(200)));
  stage.onApiCall(hostCall(v1::API_KIND_DEVICE_SYNC, us(110), us(200), true));
  stage.onApiCall(hostCall(v1::API_KIND_EVENT_RECORD, us(210), us(212)));
  uint64_t t = us(300);
  for (int i = 0; i < 300; ++i, t += us(100)) stage.onActivity(kernel(kK1, t, t + us(100)));
  stage.onApiCall(hostCall(v1::API_KIND_EVENT_RECORD, us(400), us(402)));
  stage.onApiCall(hostCall(v1::API_KIND_EVENT_SYNC, us(410), t, true));
  const StepStats steps = run(stage);
  CHECK(steps.method == "recurring kernel sequence");
  CHECK(steps.steps == 301);
  CHECK(steps.median_ns == us(100));
}

TEST_CASE("a single kernel with a synchronize after each of 300 launches is a loop", "[step_detector]") {
  const StringTable strings = names();
  StepDetectorStage stage;
  stage.setStrings(&strings);
  uint64_t t = us(100);
  for (int i = 0; i < 300; ++i, t += us(150)) {
    stage.onActivity(kernel(kK1, t, t + us(100)));
    stage.onApiCall(hostCall(v1::API_KIND_DEVICE_SYNC, t + us(10), t + us(100), true));
  }
  const StepStats steps = run(stage);
  CHECK(steps.method != "none");
  CHECK(steps.steps >= 299);
  CHECK(steps.median_ns == us(150));
}

TEST_CASE("BusyTimeline answers busy time before any instant not before the last start", "[step_detector]") {
  BusyTimeline busy;
  busy.add(us(10), us(20));
  busy.add(us(15), us(30));  // merges: [10, 30)
  CHECK(busy.busyBefore(us(25)) == us(15));
  CHECK(busy.idleBefore(us(40)) == us(10));
  busy.startLog();
  busy.add(us(40), us(50));
  busy.add(us(60), us(70));
  CHECK(busy.busyBefore(us(100)) == us(40));
  CHECK(busy.loggedBusyBefore(us(45)) == us(25));
  CHECK(busy.loggedBusyBefore(us(55)) == us(30));
  CHECK(busy.loggedBusyBefore(us(65)) == us(35));
}
