// analysis/step_detector.cpp: see step_detector.h.
#include "analysis/step_detector.h"

#include "reader/enum_labels.h"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

namespace gapwatch::analysis {
namespace {

// A kernel period is the step only if the host touches the device (copy, sync, event, NCCL)
// about once per period or more.
constexpr double kMinAnchorsPerPeriod = 0.5;
// A recurring call is regular when this share of its spacings lies within kSpacingTolerance of
// their median.
constexpr double kRegularShare = 0.75;
constexpr double kSpacingTolerance = 0.1;
// Steps delimited by a recurring call must span at least this share of the kernels kept: a loop
// is most of a training run, a few repeated calls at its start or end are not its steps.
constexpr double kMinStepCoverage = 0.5;
// The chosen step-start kernel missing for this many periods means the sequence changed.
constexpr uint64_t kLostAfterPeriods = 4;
// Learning windows without a period before giving up: a warm-up of up to about three windows.
constexpr std::size_t kMaxFailedAttempts = 6;
// What learning may keep besides the kernels, as a multiple of learning_kernels.
constexpr std::size_t kLearningSideFactor = 8;
constexpr std::size_t kMaxRangeDepth = 256;

constexpr uint32_t kNcclAnchorBase = 100;

// Sync kinds delimit steps best; then copies that block, then anything recurring.
int anchorPreference(uint32_t key) {
  switch (key) {
    case v1::API_KIND_DEVICE_SYNC: return 0;
    case v1::API_KIND_STREAM_SYNC: return 1;
    case v1::API_KIND_EVENT_SYNC: return 2;
    case v1::API_KIND_MEMCPY: return 3;
    default: return key >= kNcclAnchorBase ? 4 : 5;
  }
}

std::string anchorLabel(uint32_t key) {
  if (key >= kNcclAnchorBase) return "nccl " + enumLabel(static_cast<v1::NcclOp>(key - kNcclAnchorBase));
  return enumLabel(static_cast<v1::ApiKind>(key));
}

uint64_t idlePpm(uint64_t length_ns, uint64_t busy_ns) {
  if (length_ns == 0) return 0;
  const uint64_t idle_ns = busy_ns >= length_ns ? 0 : length_ns - busy_ns;
  return static_cast<uint64_t>(std::llround(1e6 * static_cast<double>(idle_ns) / static_cast<double>(length_ns)));
}

}  // namespace

// --- StepDetectorStage::StepSeries -------------------------------------------------------------------

void StepDetectorStage::fillStepSample(const StepSeries& series, StepStats& stats) {
  stats.timed_steps = series.timed;
  stats.mean_ns = series.mean_ns;
  stats.first_step_start_ns = series.first_start_ns;
  stats.first_step_end_ns = series.first_end_ns;
  stats.first_step_number = series.first_number;
  stats.stddev_ns =
      series.timed >= 2 ? std::sqrt(series.squared_deviations / static_cast<double>(series.timed - 1)) : 0.0;
}

void StepDetectorStage::StepSeries::begin(uint64_t time_ns, uint64_t busy_ns) {
  if (open) end(time_ns, busy_ns);
  open = true;
  open_ns = time_ns;
  open_busy_ns = busy_ns;
  if (!count_on_end) ++steps;
}

void StepDetectorStage::StepSeries::end(uint64_t time_ns, uint64_t busy_ns) {
  if (!open) return;
  open = false;
  if (count_on_end) ++steps;
  if (time_ns <= open_ns) return;
  const uint64_t length_ns = time_ns - open_ns;
  if (listener && *listener) (*listener)(detected, open_ns, time_ns);
  const uint64_t step_busy_ns = busy_ns >= open_busy_ns ? busy_ns - open_busy_ns : 0;
  if (timed == 0) {
    first_start_ns = open_ns;
    first_end_ns = time_ns;
    first_number = open_number;
  }
  durations.add(length_ns);
  ++timed;
  const double delta = static_cast<double>(length_ns) - mean_ns;
  mean_ns += delta / static_cast<double>(timed);
  squared_deviations += delta * (static_cast<double>(length_ns) - mean_ns);
  idle_ppm.add(idlePpm(length_ns, step_busy_ns));
  timeline.add(open_ns, length_ns, length_ns > step_busy_ns ? length_ns - step_busy_ns : 0);
}

// --- StepDetectorStage -------------------------------------------------------------------------------

StepDetectorStage::StepDetectorStage(const AnalysisOptions& /*options*/, StepDetectorOptions step_options)
    : options_(step_options) {
  options_.learning_kernels = std::max<std::size_t>(options_.learning_kernels, 16);
  options_.min_repetitions = std::max<std::size_t>(options_.min_repetitions, 2);
  marker_steps_.listener = &step_listener_;
  detected_steps_.listener = &step_listener_;
  detected_steps_.detected = true;
  startLearning();
}

uint32_t StepDetectorStage::anchorKey(const ApiCallEvent& call) {
  switch (call.kind) {
    case v1::API_KIND_MEMCPY:
    case v1::API_KIND_MEMCPY_ASYNC:
    case v1::API_KIND_MEMSET:
    case v1::API_KIND_MEMSET_ASYNC:
    case v1::API_KIND_DEVICE_SYNC:
    case v1::API_KIND_STREAM_SYNC:
    case v1::API_KIND_EVENT_SYNC:
    case v1::API_KIND_EVENT_RECORD:
    case v1::API_KIND_STREAM_WAIT_EVENT: return static_cast<uint32_t>(call.kind);
    default: return 0;
  }
}

uint32_t StepDetectorStage::anchorKey(const NcclCallEvent& call) {
  if (call.op == v1::NCCL_OP_UNSPECIFIED || call.op == v1::NCCL_OP_COMM_INIT ||
      call.op == v1::NCCL_OP_COMM_DESTROY || call.op == v1::NCCL_OP_GROUP_START) {
    return 0;
  }
  return kNcclAnchorBase + static_cast<uint32_t>(call.op);
}

void StepDetectorStage::advanceTime(uint64_t time_ns) {
  now_ns_ = std::max(now_ns_, time_ns);
  // Every activity that starts before `time_ns` has arrived, so busy time before a step end at or
  // before it is final.
  while (!pending_ends_.empty() && pending_ends_.top() <= time_ns) {
    const uint64_t end_ns = pending_ends_.top();
    pending_ends_.pop();
    detected_steps_.begin(end_ns, busy_.busyBefore(end_ns));
  }
}

void StepDetectorStage::noteAnchor(uint32_t key, uint64_t end_ns) {
  if (key == 0) return;
  if (mode_ == Mode::kLearning) {
    anchors_.push_back({key, kernels_seen_, end_ns});
    if (anchors_.size() > kLearningSideFactor * options_.learning_kernels) learn(false);
  } else if (mode_ == Mode::kAnchor && key == anchor_key_) {
    pending_ends_.push(end_ns);
  }
}

void StepDetectorStage::onApiCall(const ApiCallEvent& call) {
  advanceTime(call.start_ns);
  noteAnchor(anchorKey(call), std::max(call.end_ns, call.start_ns));
}

void StepDetectorStage::onNcclCall(const NcclCallEvent& call) {
  advanceTime(call.start_ns);
  noteAnchor(anchorKey(call), std::max(call.end_ns, call.start_ns));
}

void StepDetectorStage::onMarker(const MarkerEvent& marker) {
  advanceTime(marker.time_ns);
  const uint64_t busy_ns = busy_.busyBefore(marker.time_ns);
  switch (marker.kind) {
    case v1::MARKER_KIND_STEP_BEGIN:
      saw_step_markers_ = true;
      marker_steps_.begin(marker.time_ns, busy_ns);
      marker_steps_.open_number = marker.step;
      break;
    case v1::MARKER_KIND_STEP_END:
      saw_step_markers_ = true;
      marker_steps_.end(marker.time_ns, busy_ns);
      break;
    case v1::MARKER_KIND_RANGE_PUSH: {
      const std::string* name = strings_ ? strings_->find(v1::STRING_KIND_MARKER_NAME, marker.name_id) : nullptr;
      const bool profiler_step = name && name->starts_with("ProfilerStep#");
      std::vector<bool>& stack = range_stacks_[marker.thread_id];
      if (stack.size() < kMaxRangeDepth) stack.push_back(profiler_step);
      // Explicit step markers, when the program sends them, say more than ranges do.
      if (profiler_step && !saw_step_markers_) marker_steps_.begin(marker.time_ns, busy_ns);
      break;
    }
    case v1::MARKER_KIND_RANGE_POP: {
      std::vector<bool>& stack = range_stacks_[marker.thread_id];
      if (stack.empty()) break;
      const bool profiler_step = stack.back();
      stack.pop_back();
      if (profiler_step && !saw_step_markers_) marker_steps_.end(marker.time_ns, busy_ns);
      break;
    }
    default: break;
  }
}

bool StepDetectorStage::patternMatchesHere() const {
  for (std::size_t d = 0; d < pattern_length_; ++d) {
    if (recent_names_[d] != kNoName && recent_names_[d] != pattern_[d]) return false;
  }
  return true;
}

void StepDetectorStage::onActivity(const DeviceActivityEvent& activity) {
  if (activity.kind == v1::ACTIVITY_KIND_SYNC || activity.kind == v1::ACTIVITY_KIND_UNSPECIFIED) return;
  advanceTime(activity.start_ns);
  if (activity.kind == v1::ACTIVITY_KIND_KERNEL) {
    std::copy_backward(recent_names_.begin(), recent_names_.end() - 1, recent_names_.end());
    recent_names_[0] = activity.name_id;
    ++kernels_seen_;
    if (mode_ == Mode::kLearning) {
      kernels_.push_back({activity.name_id, activity.start_ns, busy_.idleBefore(activity.start_ns)});
    } else if (mode_ == Mode::kKernelPattern) {
      if (patternMatchesHere()) {
        detected_steps_.begin(activity.start_ns, busy_.busyBefore(activity.start_ns));
        kernels_since_step_ = 0;
      } else if (++kernels_since_step_ > kLostAfterPeriods * period_) {
        // The step-start kernel is gone (a recompile renamed it): learn the sequence again, and
        // do not stretch one step across the change.
        detected_steps_.open = false;
        if (relearns_ < options_.max_relearns) {
          ++relearns_;
          startLearning();
        } else {
          mode_ = Mode::kGaveUp;
        }
      }
    }
  }
  busy_.add(activity.start_ns, activity.end_ns);
  if (mode_ == Mode::kLearning &&
      (kernels_.size() >= options_.learning_kernels ||
       busy_.loggedRuns() > kLearningSideFactor * options_.learning_kernels)) {
    learn(false);
  }
}

void StepDetectorStage::startLearning() {
  mode_ = Mode::kLearning;
  kernels_.clear();
  anchors_.clear();
  context_ = recent_names_;
  learning_first_index_ = kernels_seen_;
  failed_attempts_ = 0;
  busy_.startLog();
}

void StepDetectorStage::stopLearning() {
  std::vector<KernelRecord>().swap(kernels_);
  std::vector<AnchorRecord>().swap(anchors_);
  busy_.stopLog();
}

void StepDetectorStage::learn(bool at_end) {
  std::vector<uint32_t> names;
  names.reserve(kernels_.size());
  for (const KernelRecord& k : kernels_) names.push_back(k.name_id);
  const auto fit = findSequencePeriod(names, options_.min_repetitions);
  bool found = false;
  if (fit) {
    // Does the host touch the device, other than by launching, about once a period?
    std::map<uint32_t, std::size_t> per_key;
    for (const AnchorRecord& a : anchors_) ++per_key[a.key];
    std::size_t most = 0;
    for (const auto& [key, count] : per_key) most = std::max(most, count);
    const double periods = static_cast<double>(kernels_.size()) / static_cast<double>(fit->period);
    if (static_cast<double>(most) >= kMinAnchorsPerPeriod * periods) {
      found = tryKernelPattern(fit->period);
    } else {
      // A loop inside the step: the recurring call delimits it, else the loop is all we know.
      found = tryAnchor(fit->period) || tryKernelPattern(fit->period);
    }
  } else {
    found = tryAnchor(std::nullopt);
  }
  if (found) {
    stopLearning();
    return;
  }
  // Only a window full of kernels without a period counts as a failed attempt; learning may also
  // stop early because copies and syncs piled up between few kernels.
  const bool window_full = kernels_.size() >= options_.learning_kernels;
  if (at_end || (window_full && ++failed_attempts_ >= kMaxFailedAttempts)) {
    mode_ = Mode::kGaveUp;
    stopLearning();
    return;
  }
  // No period yet (a long warm-up?): keep the newer half and learn on.
  if (kernels_.size() >= 2) {
    const std::size_t drop = kernels_.size() / 2;
    const Pattern old_context = context_;
    for (std::size_t d = 0; d < kMaxContext; ++d) {
      context_[d] = d < drop ? kernels_[drop - 1 - d].name_id : old_context[d - drop];
    }
    const uint64_t prune_before_ns = kernels_[drop - 1].start_ns;
    kernels_.erase(kernels_.begin(), kernels_.begin() + static_cast<std::ptrdiff_t>(drop));
    learning_first_index_ += drop;
    std::erase_if(anchors_, [&](const AnchorRecord& a) { return a.kernel_index < learning_first_index_; });
    busy_.pruneLogBefore(prune_before_ns);
  }
  // The side records stay bounded even where kernels are rare: their older half goes.
  const std::size_t side_limit = kLearningSideFactor * options_.learning_kernels / 2;
  if (anchors_.size() > side_limit) {
    anchors_.erase(anchors_.begin(), anchors_.begin() + static_cast<std::ptrdiff_t>(anchors_.size() / 2));
  }
  if (busy_.loggedRuns() > side_limit) busy_.pruneOlderHalf();
}

bool StepDetectorStage::anchorStepsRepeat(const std::vector<uint64_t>& boundaries) const {
  // The steps a recurring call delimits are a loop only if they look alike: each begins with the
  // same kernel (most of them do), and together they cover most of the kernels kept. Three
  // different kernels each followed by a synchronize are three calls, not three steps.
  const auto nameAt = [&](uint64_t kernel_index) -> std::optional<uint32_t> {
    if (kernel_index < learning_first_index_) return std::nullopt;
    const uint64_t i = kernel_index - learning_first_index_;
    if (i >= kernels_.size()) return std::nullopt;
    return kernels_[i].name_id;
  };
  std::map<uint32_t, std::size_t> first_kernels;
  std::size_t steps = 0;
  for (std::size_t b = 0; b + 1 < boundaries.size(); ++b) {
    ++steps;
    if (const auto name = nameAt(boundaries[b])) ++first_kernels[*name];
  }
  std::size_t most_common = 0;
  for (const auto& [name, count] : first_kernels) most_common = std::max(most_common, count);
  if (steps == 0 || static_cast<double>(most_common) < kRegularShare * static_cast<double>(steps)) return false;
  const uint64_t covered = boundaries.back() - boundaries.front();
  return static_cast<double>(covered) >= kMinStepCoverage * static_cast<double>(kernels_.size());
}

bool StepDetectorStage::tryKernelPattern(std::size_t period) {
  const std::size_t n = kernels_.size();
  if (period == 0 || n < period) return false;
  // The name `d` kernels before kernel j of what was kept (before it: the context).
  const auto nameAt = [&](std::size_t j, std::size_t d) -> uint32_t {
    return d <= j ? kernels_[j - d].name_id : context_[d - j - 1];
  };
  const auto patternAt = [&](std::size_t j, std::size_t length) {
    Pattern p{kNoName, kNoName, kNoName, kNoName};
    for (std::size_t d = 0; d < length; ++d) p[d] = nameAt(j, d);
    return p;
  };
  const auto matches = [&](std::size_t j, const Pattern& pattern, std::size_t length) {
    for (std::size_t d = 0; d < length; ++d) {
      const uint32_t name = nameAt(j, d);
      if (name != kNoName && name != pattern[d]) return false;
    }
    return true;
  };

  for (std::size_t length = 1; length <= kMaxContext; ++length) {
    // Patterns that occur exactly once in the last period: the steady state.
    std::map<Pattern, std::size_t> in_last_period;
    for (std::size_t j = n - period; j < n; ++j) ++in_last_period[patternAt(j, length)];
    struct Candidate {
      Pattern pattern;
      std::size_t presence = 0;
      uint64_t idle_before_ns = 0;
    };
    std::vector<Candidate> candidates;
    for (const auto& [pattern, count] : in_last_period) {
      if (count == 1) candidates.push_back({pattern});
    }
    if (candidates.empty()) continue;
    std::map<Pattern, std::size_t> candidate_of;
    for (std::size_t i = 0; i < candidates.size(); ++i) candidate_of[candidates[i].pattern] = i;
    for (std::size_t j = 0; j < n; ++j) {
      const Pattern here = patternAt(j, length);
      if (std::find(here.begin(), here.begin() + static_cast<std::ptrdiff_t>(length), kNoName) ==
          here.begin() + static_cast<std::ptrdiff_t>(length)) {
        if (const auto it = candidate_of.find(here); it != candidate_of.end()) {
          ++candidates[it->second].presence;
          candidates[it->second].idle_before_ns += kernels_[j].idle_before_ns;
        }
        continue;
      }
      // The first kernels of the recording have no predecessors: they match on what they have.
      for (Candidate& c : candidates) {
        if (!matches(j, c.pattern, length)) continue;
        ++c.presence;
        c.idle_before_ns += kernels_[j].idle_before_ns;
      }
    }
    // Present through warm-up and recompiles first; then where the device waited longest.
    std::size_t most_present = 0;
    for (const Candidate& c : candidates) most_present = std::max(most_present, c.presence);
    const Candidate* chosen = nullptr;
    for (const Candidate& c : candidates) {
      // One step more matters more than a better-placed boundary: a pattern that misses the
      // first step (its predecessor there was a warm-up kernel) would undercount.
      if (c.presence < most_present) continue;
      if (!chosen || c.idle_before_ns > chosen->idle_before_ns) chosen = &c;
    }
    pattern_ = chosen->pattern;
    pattern_length_ = length;
    period_ = period;
    mode_ = Mode::kKernelPattern;
    detected_steps_.count_on_end = false;
    kernels_since_step_ = 0;
    for (std::size_t j = 0; j < n; ++j) {
      if (matches(j, pattern_, length)) {
        detected_steps_.begin(kernels_[j].start_ns, busy_.loggedBusyBefore(kernels_[j].start_ns));
        kernels_since_step_ = 0;
      } else {
        ++kernels_since_step_;
      }
    }
    method_ = "recurring kernel sequence";
    how_ = "the kernel sequence repeats every " + std::to_string(period) + " kernel" + (period == 1 ? "" : "s") +
           "; a step begins at each " + kernelLabel(pattern_[0]);
    for (std::size_t d = 1; d < length; ++d) how_ += (d == 1 ? " that follows " : " after ") + kernelLabel(pattern_[d]);
    return true;
  }
  return false;
}

bool StepDetectorStage::tryAnchor(std::optional<std::size_t> period) {
  // key -> kernel index of each call. Calls with no kernel between them are one boundary: a step
  // holds at least one kernel (vector add's two copies in are not two steps).
  std::map<uint32_t, std::vector<uint64_t>> positions;
  for (const AnchorRecord& a : anchors_) {
    std::vector<uint64_t>& at = positions[a.key];
    if (at.empty() || at.back() != a.kernel_index) at.push_back(a.kernel_index);
  }
  uint32_t best_key = 0;
  uint64_t best_spacing = 0;
  for (auto& [key, at] : positions) {
    if (at.size() < options_.min_repetitions) continue;
    if (!anchorStepsRepeat(at)) continue;
    std::vector<uint64_t> spacings;
    for (std::size_t i = 1; i < at.size(); ++i) spacings.push_back(at[i] - at[i - 1]);
    std::vector<uint64_t> sorted = spacings;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    const uint64_t median = sorted[sorted.size() / 2];
    if (median == 0 || (period && median < *period)) continue;  // within a kernel period: not the step
    const auto tolerance = static_cast<uint64_t>(std::ceil(kSpacingTolerance * static_cast<double>(median)));
    std::size_t regular = 0;
    for (uint64_t s : spacings) regular += (s + tolerance >= median && s <= median + tolerance);
    if (static_cast<double>(regular) < kRegularShare * static_cast<double>(spacings.size())) continue;
    const bool better = best_key == 0 || median < best_spacing ||
                        (median == best_spacing && anchorPreference(key) < anchorPreference(best_key));
    if (better) {
      best_key = key;
      best_spacing = median;
    }
  }
  if (best_key == 0) return false;

  anchor_key_ = best_key;
  mode_ = Mode::kAnchor;
  detected_steps_.count_on_end = true;
  // From the start of the recording, the first step begins with the device's first work.
  if (learning_first_index_ == 0 && !busy_.empty()) detected_steps_.begin(busy_.firstStart(), 0);
  std::vector<uint64_t> ends;
  for (const AnchorRecord& a : anchors_) {
    if (a.key == best_key) ends.push_back(a.end_ns);
  }
  std::sort(ends.begin(), ends.end());
  for (uint64_t end_ns : ends) {
    if (end_ns <= now_ns_) {
      detected_steps_.begin(end_ns, busy_.loggedBusyBefore(end_ns));
    } else {
      pending_ends_.push(end_ns);  // work that starts before it may still arrive
    }
  }
  method_ = "recurring sync point";
  how_ = "a step ends where each " + anchorLabel(best_key) + " call returns; it recurs once every " +
         std::to_string(best_spacing) + " kernels";
  if (period) {
    how_ += " (the kernel sequence alone repeats every " + std::to_string(*period) +
            ", with no copy or sync in between: a loop inside the step)";
  }
  return true;
}

std::string StepDetectorStage::kernelLabel(uint32_t name_id) const {
  const std::string* name = strings_ ? strings_->find(v1::STRING_KIND_KERNEL_NAME, name_id) : nullptr;
  if (!name) return "kernel #" + std::to_string(name_id);
  std::string label = *name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(name->c_str(), nullptr, nullptr, &status),
                                                   std::free);
  if (status == 0 && demangled) label = demangled.get();
  // The parameter list says nothing a user needs here.
  if (const auto paren = label.find('('); paren != std::string::npos && paren > 0) label.resize(paren);
  if (label.size() > 80) label = label.substr(0, 77) + "...";
  return label;
}

void StepDetectorStage::finish() {
  if (mode_ == Mode::kLearning) learn(true);
  advanceTime(UINT64_MAX);

  stats_ = StepStats{};
  const StepSeries* series = nullptr;
  if (marker_steps_.steps > 0) {
    series = &marker_steps_;
    stats_.method = "markers";
    // A trace's steps are its ProfilerStep#N ranges, which the import hands over as step markers.
    stats_.how = kineto_trace_       ? "the trace's ProfilerStep#N ranges"
                 : saw_step_markers_ ? "the program's step markers (STEP_BEGIN/STEP_END)"
                                     : "NVTX ranges named ProfilerStep#N";
  } else if (detected_steps_.steps > 0) {
    series = &detected_steps_;
    stats_.method = method_;
    stats_.how = how_;
  } else {
    stats_.method = "none";
    stats_.how = "no step markers, and neither the kernels nor the host's syncs and copies recur regularly";
    return;
  }
  stats_.steps = series->steps;
  stats_.median_ns = series->durations.percentile(50);
  stats_.p10_ns = series->durations.percentile(10);
  stats_.p90_ns = series->durations.percentile(90);
  stats_.median_idle_fraction = static_cast<double>(series->idle_ppm.percentile(50)) / 1e6;
  stats_.timeline = series->timeline.points();
  fillStepSample(*series, stats_);
}

void StepDetectorStage::contribute(ProcessAnalysis& result) { result.steps = stats_; }

void StepDetectorStage::snapshot(ProcessAnalysis& result) const {
  const bool markers = marker_steps_.steps > 0;
  const StepSeries& series = markers ? marker_steps_ : detected_steps_;
  StepStats stats;
  stats.method = markers ? "markers" : series.steps > 0 ? method_ : "none";
  stats.steps = series.steps;
  stats.median_ns = series.durations.percentile(50);
  stats.p10_ns = series.durations.percentile(10);
  stats.p90_ns = series.durations.percentile(90);
  stats.median_idle_fraction = static_cast<double>(series.idle_ppm.percentile(50)) / 1e6;
  fillStepSample(series, stats);
  result.steps = std::move(stats);
}

}  // namespace gapwatch::analysis
