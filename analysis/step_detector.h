// analysis/step_detector.h: the training step (iteration) of one process, and its time.
//
// Users think in steps ("a step takes 8 s and the GPU works for 2 of them"), so the report gives
// the step count, the median, p10 and p90 step time and the median idle fraction per step (device
// idle inside the step, the union of all the process's device work counting as busy). How the
// step was found is reported with it (StepStats.method, .how), in this order of preference:
//   1. "markers": MarkerEvent STEP_BEGIN/STEP_END, or NVTX ranges named "ProfilerStep#N" (what
//      PyTorch's profiler pushes). A step runs from its begin to its end (or the next begin).
//   2. "recurring kernel sequence": training runs the same kernels in the same order every step,
//      so the sequence of kernel names is periodic. The period is the shift p under which the
//      sequence best agrees with itself (fewest positions i with name[i] != name[i + p]; the
//      smallest such p when several agree about as well). Warm-up kernels at the start and
//      recompiles (new kernel names from some step on) disagree under every shift, the true
//      period still agrees best, and its multiples agree worse (each recompile breaks them more
//      often), so the steady-state period wins. A step begins at the kernel that occurs once per
//      period (with up to three predecessors as context when no single name does); of those,
//      the one present in the most periods, then the one after the longest device idle (where
//      the host prepared the next batch).
//   3. "recurring sync point": a kernel period in which the host never touches the device other
//      than by launching (no copy, sync, event or NCCL call) is a loop inside the step, not the
//      step ("100 x (add, mul, softmax), then loss.item()"). The step is then delimited by the
//      sync or copy call that recurs regularly (every D kernels), and ends where that call returns.
//      This is also the answer when the kernels have no period but such a call recurs.
//   4. "none": no steps found.
// Detected steps are measured on the device's timeline (kernel starts, sync returns), which is the
// iteration time the GPU sees: where the host runs ahead and syncs only every N steps, host-side
// step starts bunch up (most steps a fraction of a millisecond, every N-th one long) while the
// device's steps stay even.
// `steps` counts the steps that were delimited: with markers and kernel sequences every step
// begun (the last one's end is never seen, so it has no time), with a sync point every step
// ended (what follows the last sync is teardown, not a step). Step times (median, p10, p90, by
// nearest rank) and idle fractions are over complete steps. Steps inside a stretch the stage had
// to learn again (after a recompile renamed the step-start kernel) are not counted.
//
// Memory: to learn the period the stage keeps the first `learning_kernels` kernels (name, start,
// idle before it), the copy/sync calls among them and the device's busy runs meanwhile; then it
// frees them and follows the steps as they come in O(1) state per event, step times going into
// fixed-size percentile sketches. A window without a period (a warm-up longer than it) is slid on
// by half, a bounded number of times. If the chosen step-start kernel stops appearing for four
// periods (a recompile renamed it), the stage learns again from there, a bounded number of times.
#pragma once

#include "analysis/analysis_stage.h"
#include "analysis/busy_timeline.h"
#include "analysis/duration_percentiles.h"
#include "analysis/sequence_period.h"
#include "analysis/step_timeline.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

namespace gapwatch::analysis {

struct StepDetectorOptions {
  std::size_t learning_kernels = 32768;  // kernels kept to learn the period (steps up to a third)
  std::size_t min_repetitions = 3;       // a period must repeat this often in what was kept
  std::size_t max_relearns = 8;          // learning again after the step-start kernel vanished
};

class StepDetectorStage final : public AnalysisStage {
 public:
  // AnalysisOptions has no step knobs yet; taken so that every stage is built the same way.
  explicit StepDetectorStage(const AnalysisOptions& options = {}, StepDetectorOptions step_options = {});

  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void begin(const RecordingFacts& facts) override { kineto_trace_ = facts.kineto_trace; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void onNcclCall(const NcclCallEvent& call) override;
  void onMarker(const MarkerEvent& marker) override;
  void finish() override;
  // Writes `steps`.
  void contribute(ProcessAnalysis& result) override;
  // The complete steps so far: by markers, or once the period has been learned (until then none).
  void snapshot(ProcessAnalysis& result) const override;

  const StepStats& stats() const { return stats_; }

  // Hears every complete step as it is delimited: by markers (`detected` false) or found in the
  // kernels or sync points (`detected` true). Per kind in time order, except that a stretch learnt
  // again may repeat times already heard (a listener that draws steps keeps them ordered).
  using StepListener = std::function<void(bool detected, uint64_t start_ns, uint64_t end_ns)>;
  void setStepListener(StepListener listener) { step_listener_ = std::move(listener); }

 private:
  bool kineto_trace_ = false;  // steps from a trace's ProfilerStep#N ranges (the how says so)
  static constexpr std::size_t kMaxContext = 4;  // names in a step-start pattern
  static constexpr uint32_t kNoName = UINT32_MAX;  // before the first kernel: matches anything
  using Pattern = std::array<uint32_t, kMaxContext>;  // [0] = the kernel, [1] its predecessor, ...

  // Steps as their boundaries arrive in time order, into bounded percentile sketches.
  struct StepSeries {
    uint64_t steps = 0;
    bool count_on_end = false;  // count a step when it ends (sync-delimited), else when it begins
    bool open = false;
    uint64_t open_ns = 0, open_busy_ns = 0;
    DurationPercentiles durations;
    DurationPercentiles idle_ppm;  // idle fraction x 1e6
    StepTimeline timeline;
    // Welford's running mean and sum of squared deviations of the durations: exact, in O(1)
    // state, where the sketches give only percentiles.
    uint64_t timed = 0;
    double mean_ns = 0, squared_deviations = 0;
    uint64_t first_start_ns = 0, first_end_ns = 0;  // the first complete step
    uint64_t open_number = 0, first_number = 0;     // step numbers from markers (0: none)
    const StepListener* listener = nullptr;  // hears each complete step
    bool detected = false;                   // what the listener is told
    void begin(uint64_t time_ns, uint64_t busy_ns);  // opens a step (closing the open one)
    void end(uint64_t time_ns, uint64_t busy_ns);    // closes the open step
  };

  struct KernelRecord {
    uint32_t name_id;
    uint64_t start_ns;
    uint64_t idle_before_ns;
  };
  struct AnchorRecord {
    uint32_t key;
    uint64_t kernel_index;  // kernels seen before the call
    uint64_t end_ns;
  };
  enum class Mode { kLearning, kKernelPattern, kAnchor, kGaveUp };

  // A call, other than a launch, by which the host touches the device; 0 for none.
  static uint32_t anchorKey(const ApiCallEvent& call);
  static uint32_t anchorKey(const NcclCallEvent& call);
  void noteAnchor(uint32_t key, uint64_t end_ns);
  void advanceTime(uint64_t time_ns);  // resolves step ends the timeline has now passed
  void learn(bool at_end);             // tries to find the step in what was kept
  static void fillStepSample(const StepSeries& series, StepStats& stats);  // timed_steps, mean, stddev
  bool tryKernelPattern(std::size_t period);
  bool tryAnchor(std::optional<std::size_t> period);
  // Do the steps between these boundaries (kernel indices of one recurring call) repeat?
  bool anchorStepsRepeat(const std::vector<uint64_t>& boundaries) const;
  void startLearning();
  void stopLearning();
  bool patternMatchesHere() const;  // the last kernels seen match pattern_
  std::string kernelLabel(uint32_t name_id) const;

  StepDetectorOptions options_;
  const StringTable* strings_ = nullptr;
  BusyTimeline busy_;
  uint64_t now_ns_ = 0;  // the latest event time seen

  // Markers.
  StepListener step_listener_;
  StepSeries marker_steps_;
  bool saw_step_markers_ = false;
  std::unordered_map<uint32_t, std::vector<bool>> range_stacks_;  // per thread: is it a ProfilerStep

  // Detection.
  Mode mode_ = Mode::kLearning;
  StepSeries detected_steps_;
  uint64_t kernels_seen_ = 0;
  Pattern recent_names_{kNoName, kNoName, kNoName, kNoName};  // [0] = the latest kernel
  std::vector<KernelRecord> kernels_;  // while learning
  std::vector<AnchorRecord> anchors_;  // while learning
  Pattern context_{};                  // recent_names_ when learning began
  uint64_t learning_first_index_ = 0;
  std::size_t failed_attempts_ = 0, relearns_ = 0;
  // What was found.
  std::size_t period_ = 0;
  std::size_t pattern_length_ = 0;
  Pattern pattern_{};
  uint64_t kernels_since_step_ = 0;
  uint32_t anchor_key_ = 0;
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> pending_ends_;
  std::string how_;
  std::string method_;

  StepStats stats_;
};

}  // namespace gapwatch::analysis
