// analysis/findings.cpp: see findings.h.
#include "analysis/findings.h"

#include "analysis/diagnosis_numbers.h"
#include "analysis/kernel_class.h"
#include "analysis/kernel_stats.h"
#include "analysis/process_summary.h"
#include "analysis/quantity_text.h"
#include "analysis/sync_advice.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace gapwatch::analysis::findings {
namespace {

using namespace diagnosis_numbers;

// Collects a finding's evidence: each entry printed for people and, where it is a number, keyed
// for scripts.
class FindingBuilder {
 public:
  FindingBuilder(const char* id, std::string title, uint64_t idle_ns, const IdleExplanation& x) {
    finding_.id = id;
    finding_.title = std::move(title);
    finding_.idle_ns = idle_ns;
    finding_.idle_share = ratio(static_cast<double>(idle_ns), static_cast<double>(x.idle_ns));
    const double window_share = ratio(static_cast<double>(idle_ns), static_cast<double>(x.window_ns));
    if (idle_ns > 0) {
      evidence("idle explained", formatDuration(idle_ns) + " = " + formatWholePercent(finding_.idle_share) +
                                     " of idle, " + formatPercent(window_share) + " of the window");
    }
    number("window_fraction", window_share);
    // The most this finding's fix can buy: the window without its idle (an upper bound: the work
    // in the window stays, and removing one cause can expose another).
    if (idle_ns > 0 && x.window_ns > idle_ns && window_share >= 0.01) {
      const double bound = static_cast<double>(x.window_ns) / static_cast<double>(x.window_ns - idle_ns);
      evidence("ceiling", "up to " + formatSpeedup(bound) + " faster: the " +
                              (x.steady_state && id != std::string(kFindingFirstPass) ? "steady state's " : "window's ") +
                              formatDuration(x.window_ns) + " would take " + formatDuration(x.window_ns - idle_ns) +
                              " without this idle");
      number("speedup_bound_factor", bound);
    }
  }
  void evidence(std::string name, std::string value) {
    finding_.evidence.emplace_back(std::move(name), std::move(value));
  }
  void number(std::string key, double value) { finding_.numbers.emplace_back(std::move(key), value); }
  void fix(std::string text) { finding_.fix = std::move(text); }
  void pythonSite(std::string site) { finding_.python_site = std::move(site); }
  Finding take() { return std::move(finding_); }

 private:
  Finding finding_;
};

}  // namespace

std::string formatSpeedup(double factor) {
  char text[32];
  std::snprintf(text, sizeof text, factor < 10 ? "%.2fx" : "%.0fx", factor);
  return text;
}

namespace {

std::string shareOfIdle(uint64_t ns, const IdleExplanation& x) {
  return formatDuration(ns) + " = " + formatPercent(ratio(static_cast<double>(ns), static_cast<double>(x.idle_ns))) +
         " of idle";
}

GapHistogram::Bucket gapsInBuckets(const ProcessAnalysis& p, std::size_t first, std::size_t end) {
  GapHistogram::Bucket total;
  for (const DeviceAnalysis& d : p.devices) {
    for (std::size_t b = first; b < end && b < GapHistogram::kBucketCount; ++b) {
      total.count += d.gaps.bucket(b).count;
      total.total_ns += d.gaps.bucket(b).total_ns;
    }
  }
  return total;
}

uint64_t deviceCopies(const ProcessAnalysis& p) {
  uint64_t n = 0;
  for (const DeviceAnalysis& d : p.devices) n += d.memcpys;
  return n;
}

uint64_t deviceKernels(const ProcessAnalysis& p) {
  uint64_t n = 0;
  for (const DeviceAnalysis& d : p.devices) n += d.kernels;
  return n;
}

void addStepEvidence(FindingBuilder& f, const ProcessAnalysis& p) {
  if (p.steps.steps == 0) return;
  f.evidence("steps", formatCount(p.steps.steps) + ", median " + formatDuration(p.steps.median_ns) + ", " +
                          formatPercent(p.steps.median_idle_fraction) + " of it idle" +
                          (p.steps.steps < kFewSteps ? " (" + formatCount(p.steps.steps) +
                                                           (p.steps.steps == 1 ? " step" : " steps") +
                                                           ": per-step figures are rough)"
                                                     : std::string()));
  f.number("steps", static_cast<double>(p.steps.steps));
  f.number("step_median_ns", static_cast<double>(p.steps.median_ns));
  f.number("step_median_idle_fraction", p.steps.median_idle_fraction);
}

// The Python line among a type's call sites whose calls cost most (blocked time and the idle after
// them), or nullptr when none of its sites is a Python line (no stacks recorded, a C++ program).
const CallSite* topPythonSite(const SyncTypeStats& s) {
  const CallSite* best = nullptr;
  for (const CallSite& c : s.top_call_sites) {
    if (c.python_stack.empty()) continue;
    if (!best || c.total_ns + c.idle_after_ns > best->total_ns + best->idle_after_ns) best = &c;
  }
  return best;
}

// "1,200 calls, 1.0 per step, 2.10 s blocked, 3.40 s idle after".
std::string siteCostText(const CallSite& c, uint64_t steps) {
  std::string text = formatCount(c.count) + (c.count == 1 ? " call" : " calls");
  if (steps > 0) {
    char per_step[32];
    std::snprintf(per_step, sizeof per_step, "%.1f", static_cast<double>(c.count) / static_cast<double>(steps));
    text += std::string(", ") + per_step + " per step";
  }
  return text + ", " + formatDuration(c.total_ns) + " blocked, " + formatDuration(c.idle_after_ns) + " idle after";
}

// The line a fix should start at: the costliest Python site of the types it advises on, which
// becomes the finding's python_site.
std::string siteToStartAt(FindingBuilder& f, const std::vector<const SyncTypeStats*>& types, uint64_t steps) {
  const CallSite* best = nullptr;
  for (const SyncTypeStats* s : types) {
    const CallSite* c = topPythonSite(*s);
    if (c && (!best || c->total_ns + c->idle_after_ns > best->total_ns + best->idle_after_ns)) best = c;
  }
  if (!best) return "";
  f.pythonSite(best->name);
  return "Start at " + best->name + " (" + siteCostText(*best, steps) + "). ";
}

void addSyncTypeEvidence(FindingBuilder& f, const SyncTypeStats& s, bool with_idle_after, uint64_t steps) {
  std::string text = formatCount(s.count) + (s.count == 1 ? " call, " : " calls, ") + formatDuration(s.total_ns) +
                     " blocked, p50 " + formatDuration(s.p50_ns);
  if (with_idle_after) text += ", " + formatDuration(s.idle_after_ns) + " idle after";
  if (s.small_reads > 0 && !mostlySmallReads(s)) {
    text += "; " + formatCount(s.small_reads) + " of them reads of values (to the host, at most 64 KiB)";
  }
  f.evidence(syncTypeLabel(s), text);
  if (const CallSite* site = topPythonSite(s)) f.evidence(syncTypeLabel(s) + ", most at", site->name + ": " + siteCostText(*site, steps));
  const std::string key = syncPointKey(s.kind);
  f.number(key + "_calls", static_cast<double>(s.count));
  f.number(key + "_blocked_ns", static_cast<double>(s.total_ns));
  if (with_idle_after) f.number(key + "_idle_after_ns", static_cast<double>(s.idle_after_ns));
}

// The gap's largest cause.
std::size_t mainCause(const IdleGap& gap) {
  std::size_t best = 0;
  for (std::size_t c = 1; c < kIdleCauseCount; ++c) {
    if (gap.by_cause_ns[c] > gap.by_cause_ns[best]) best = c;
  }
  return best;
}

}  // namespace

namespace {

// The process's host_cpu time by part (the engine's split, before stalls and syncs take theirs),
// and each part's names, over its devices.
struct HostSplit {
  std::array<uint64_t, kHostPartCount> ns{};
  std::array<std::vector<HostLabel>, kHostPartCount> labels;
  uint64_t unknown_in_long_gaps_ns = 0;
  // Where the split came from: a trace's host events where any device had them, else the
  // sampled Python stacks where any device's host time had one (their count summed over devices).
  HostEvidence evidence = HostEvidence::kNone;
  uint64_t python_samples = 0;
};

HostSplit hostSplit(const ProcessAnalysis& p, std::size_t top_n) {
  HostSplit out;
  for (const DeviceAnalysis& d : p.devices) {
    out.unknown_in_long_gaps_ns += d.unknown_host_in_long_gaps_ns;
    out.python_samples += d.python_samples;
    if (d.host_evidence == HostEvidence::kTraceHostEvents) {
      out.evidence = HostEvidence::kTraceHostEvents;
    } else if (d.host_evidence == HostEvidence::kPythonSamples && out.evidence == HostEvidence::kNone) {
      out.evidence = HostEvidence::kPythonSamples;
    }
    for (std::size_t part = 0; part < kHostPartCount; ++part) {
      out.ns[part] += d.host_cpu_by_part_ns[part];
      for (const HostLabel& l : d.host_part_labels[part]) {
        auto it = std::find_if(out.labels[part].begin(), out.labels[part].end(),
                               [&](const HostLabel& seen) { return seen.name == l.name; });
        if (it == out.labels[part].end()) out.labels[part].push_back(l);
        else it->ns += l.ns;
      }
    }
  }
  for (auto& labels : out.labels) {
    std::sort(labels.begin(), labels.end(),
              [](const HostLabel& a, const HostLabel& b) { return a.ns != b.ns ? a.ns > b.ns : a.name < b.name; });
    if (labels.size() > top_n) labels.resize(top_n);
  }
  return out;
}

// "aten::conv2d 506.7 ms, aten::mul 28.5 ms, (no annotation) 7.3 ms".
std::string labelsText(const std::vector<HostLabel>& labels, const char* unnamed) {
  std::string text;
  for (const HostLabel& l : labels) {
    if (!text.empty()) text += ", ";
    text += (l.name.empty() ? std::string(unnamed) : l.name) + " " + formatDuration(l.ns);
  }
  return text;
}

// "train.py:42 in train: 340 ms of idle, 61%; loader.py:17 in next_batch: 120 ms of idle, 22%":
// sampled Python lines, each with its share of the part's host time.
std::string sampledLabelsText(const std::vector<HostLabel>& labels, uint64_t part_ns) {
  std::string text;
  for (const HostLabel& l : labels) {
    if (!text.empty()) text += "; ";
    text += l.name + ": " + formatDuration(l.ns) + " of idle, " +
            formatWholePercent(ratio(static_cast<double>(l.ns), static_cast<double>(part_ns)));
  }
  return text;
}

// The sampled line a finding points at: its part's top label, without the checkpoint prefix.
std::string sampledSite(const std::vector<HostLabel>& labels) {
  if (labels.empty()) return "";
  const std::string& top = labels.front().name;
  const std::string prefix = "checkpoint: ";
  return top.compare(0, prefix.size(), prefix) == 0 ? top.substr(prefix.size()) : top;
}

const char* hostPartFindingId(HostPart part) {
  switch (part) {
    case HostPart::kInputPipeline:
      return kFindingInputPipeline;
    case HostPart::kFramework:
      return kFindingFrameworkOverhead;
    case HostPart::kOther:
      return kFindingHostOther;
    case HostPart::kUnknown:
      return kFindingHostUnknown;
  }
  return kFindingHostUnknown;
}

const char* hostPartTitle(HostPart part, bool sampled) {
  switch (part) {
    case HostPart::kInputPipeline:
      return "waiting on the input pipeline (the host inside data loading)";
    case HostPart::kFramework:
      return "in framework overhead (the host inside PyTorch ops between kernels)";
    case HostPart::kOther:
      return "in host work outside any PyTorch op (Python between ops, per-step work)";
    case HostPart::kUnknown:
      return sampled ? "in host work outside CUDA calls, of unknown kind (no Python sample covers it)"
                     : "in host work outside CUDA calls, of unknown kind (no host events)";
  }
  return "";
}

// Where the host came back after its long stretches of host time: the Python line of the launch
// that ended them (DeviceAnalysis::long_host_gap_sites), over the process's devices. The line
// where the host resumed, which is after what kept it (a DataLoader fetch just before it, logging).
void addLongHostGapEvidence(FindingBuilder& f, const ProcessAnalysis& p, const AnalysisOptions& o) {
  uint64_t gaps = 0;
  std::vector<HostReturnSite> sites;
  for (const DeviceAnalysis& d : p.devices) {
    gaps += d.long_host_gaps;
    for (const HostReturnSite& s : d.long_host_gap_sites) {
      auto same = std::find_if(sites.begin(), sites.end(), [&](const HostReturnSite& t) { return t.name == s.name; });
      if (same == sites.end()) sites.push_back(s);
      else same->gaps += s.gaps, same->host_cpu_ns += s.host_cpu_ns;
    }
  }
  if (gaps == 0 || sites.empty()) return;
  const HostReturnSite& top = *std::min_element(sites.begin(), sites.end(), [](const HostReturnSite& a, const HostReturnSite& b) {
    return a.host_cpu_ns != b.host_cpu_ns ? a.host_cpu_ns > b.host_cpu_ns : a.name < b.name;
  });
  f.evidence("host came back at", top.name + ", the first launch after " + formatCount(top.gaps) + " of the " +
                                      formatCount(gaps) + " host gaps of " + formatDuration(o.long_host_gap_ns) +
                                      " or more (" + formatDuration(top.host_cpu_ns) + " of host time): what kept "
                                      "the host ran just before it");
  f.pythonSite(top.name);
  f.number("long_host_gaps", static_cast<double>(gaps));
  f.number("long_host_gaps_at_top_site", static_cast<double>(top.gaps));
}

}  // namespace

Finding hostPart(const ProcessAnalysis& p, const IdleExplanation& x, const AnalysisOptions& o, HostPart part) {
  const auto causes = summarizeProcess(p).idle_by_cause_ns;
  const std::size_t index = static_cast<std::size_t>(part);
  const HostSplit split = hostSplit(p, o.top_n);
  const uint64_t explained = x.host_part_ns[index];
  // A recording made with the sampler on: its unknown time is what no sample covered, not time
  // nothing could have told apart.
  const bool sampler = !p.source.kineto_trace && (p.python_sampler || split.python_samples > 0);
  const bool sampled = split.evidence == HostEvidence::kPythonSamples;
  FindingBuilder f(hostPartFindingId(part), hostPartTitle(part, sampler), explained, x);
  f.evidence("host time between kernels", shareOfIdle(causes[kHostCpu], x) + ", the launching thread outside any CUDA call for " +
                                              formatDuration(o.launch_threshold_ns) + " or longer");
  f.number("host_cpu_idle_ns", static_cast<double>(causes[kHostCpu]));
  std::string parts;
  for (std::size_t q = 0; q < kHostPartCount; ++q) {
    if (!parts.empty()) parts += ", ";
    parts += std::string(hostPartName(static_cast<HostPart>(q))) + " " + formatDuration(split.ns[q]);
    f.number(std::string("host_") + hostPartName(static_cast<HostPart>(q)) + "_ns", static_cast<double>(split.ns[q]));
  }
  if (split.evidence == HostEvidence::kTraceHostEvents) {
    parts += " (from the trace's host events)";
  } else if (sampled) {
    parts += " (from " + formatCount(split.python_samples) + " sampled Python " +
             (split.python_samples == 1 ? "stack)" : "stacks)");
  }
  f.evidence("what the host was doing", parts);
  f.number("python_samples", static_cast<double>(split.python_samples));
  const uint64_t elsewhere = split.ns[index] - std::min(split.ns[index], explained);
  if (elsewhere * 100 >= split.ns[index] && elsewhere > 0) {  // worth a line from 1 % of it on
    f.evidence("explained elsewhere", formatDuration(elsewhere) + " of it by stalls or sync points (their findings)");
  }
  addLongHostGapEvidence(f, p, o);
  // From samples, each part's names are Python lines: what the host was in, a better place to
  // start than where it came back (the long host gaps' site above).
  if (sampled && part != HostPart::kUnknown && !split.labels[index].empty()) {
    const char* what = part == HostPart::kInputPipeline ? "loader called at"
                       : part == HostPart::kFramework   ? "torch called at"
                                                        : "where, by sampled line";
    f.evidence(what, sampledLabelsText(split.labels[index], split.ns[index]));
    f.pythonSite(sampledSite(split.labels[index]));
  }
  switch (part) {
    case HostPart::kInputPipeline:
      if (!sampled) {
        f.evidence("data loading", labelsText(split.labels[index], "(unnamed)") +
                                       ": the host inside these ranges when the device went idle");
      }
      f.fix("Have batches ready before the GPU needs them: DataLoader(num_workers=N, persistent_workers=True, "
            "prefetch_factor=2 or more, pin_memory=True); preprocess or tokenize offline; move decoding and "
            "augmentation out of the training process or onto the GPU.");
      break;
    case HostPart::kFramework:
      if (!sampled) {
        f.evidence("ops the host was in",
                   labelsText(split.labels[index], "(unnamed)") + " (outermost op of each moment)");
      }
      f.fix("Give each op more work, or dispatch fewer ops: a larger batch; torch.compile (fuses ops; "
            "mode=\"reduce-overhead\" also replays the step as a CUDA graph); CUDA graphs for a static step; "
            "fused or foreach optimizers (fused=True); check the ops above for ones that run on the CPU.");
      break;
    case HostPart::kOther:
      if (!sampled) {
        f.evidence("where, by annotation", labelsText(split.labels[index], "(no annotation)") +
                                               " (innermost annotation around the host)");
      }
      f.fix(std::string("Find what Python runs between the ops: per-step logging, metrics, checkpointing, evaluation "
                        "and model code outside ops. Do per-step bookkeeping every N steps or off the training "
                        "thread; torch.compile removes Python between ops of the model.") +
            (sampled ? " The sampled lines above are where the host was."
                     : " A trace written with with_stack=True names the Python lines."));
      break;
    case HostPart::kUnknown: {
      const uint64_t unknown = split.ns[index];
      if (p.source.kineto_trace) {
        f.evidence("why unknown", formatDuration(unknown) + " with no host event around it: "
                                  "the trace holds no cpu_op or user_annotation events for this time");
      } else if (sampler) {
        std::string why = formatDuration(unknown) +
                          " that no readable Python sample covers: the sampler reads the launching thread's stack "
                          "only once it has been outside CUDA calls for GAPWATCH_PY_SAMPLE_AFTER_MS (1 ms by "
                          "default), then every period, and a sample speaks for one period around it, never across "
                          "a CUDA call; shorter stretches between calls, work launched by a thread without Python "
                          "(the autograd engine's) and stacks that could not be read stay unknown";
        if (p.python_sample_misses > 0) {
          why += " (" + formatCount(p.python_sample_misses) +
                 (p.python_sample_misses == 1 ? " sample" : " samples") + " could not be read or kept)";
        }
        f.evidence("why unknown", why);
      } else {
        f.evidence("why unknown", formatDuration(unknown) + " with no host event around it: the recording holds no "
                                  "host ranges (ops, annotations) around it, and no Python samples: the sampler was "
                                  "off");
      }
      const double long_share = ratio(static_cast<double>(split.unknown_in_long_gaps_ns), static_cast<double>(unknown));
      f.evidence("shape (a hint, not a cause)",
                 formatPercent(long_share) + " of it in gaps of 1.02 ms or more, as per-step host work (data loading, "
                 "logging, evaluation) makes; " + formatPercent(1.0 - long_share) +
                 " in shorter gaps, as op dispatch between kernels makes");
      f.number("unknown_in_long_gaps_ns", static_cast<double>(split.unknown_in_long_gaps_ns));
      if (p.source.kineto_trace) {
        f.fix("To tell what it is: profile a few steps with torch.profiler (with_stack=True names the Python "
              "lines) and run gapwatch report on the trace: it splits this time into data loading, framework ops "
              "and other host work, each with its fix.");
      } else if (sampler) {
        f.fix(std::string(long_share >= 0.5
                              ? "Most of it lies in gaps of 1 ms or more that no sample covered: the work "
                                "after them was launched by a thread the sampler does not read (one without "
                                "Python, as the autograd engine's), its stacks could not be read, or the thread's "
                                "stretches between CUDA calls were each shorter than the sampler's threshold. "
                              : "Most of it lies in short gaps, as op dispatch and Python between launches make, "
                                "shorter than the sampler's threshold: usually framework overhead, which "
                                "torch.compile or CUDA graphs cut. ") +
              "To split it too, sample sooner and more often (GAPWATCH_PY_SAMPLE_AFTER_MS=0 "
              "GAPWATCH_PY_SAMPLE_MS=1, at some CPU cost), or profile a few steps with torch.profiler and run "
              "gapwatch report on the trace, whose op events cover every stretch.");
      } else {
        f.fix("The Python sampler was off (GAPWATCH_PY_SAMPLING=0 or GAPWATCH_PY_STACKS=0 turned it off, or the "
              "recorder predates it): record again without those settings and gapwatch splits this time by the "
              "launching thread's sampled Python stacks into data loading, framework and other host work, each "
              "with its fix. Or profile a few steps with torch.profiler (with_stack=True names the Python lines) "
              "and run gapwatch report on the trace.");
      }
      break;
    }
  }
  addStepEvidence(f, p);
  return f.take();
}

Finding pageableCopies(const ProcessAnalysis& p, const IdleExplanation& x) {
  // The copy types in the order of their blocked time: the fix of the one that blocked longest
  // comes first. Reads of a value (.item()) block as long as a pageable copy of data does, but
  // pinning memory would not help them: the title and the fix say which the copies are.
  std::vector<const SyncTypeStats*> copies_by_time;
  uint64_t blocking_copies = 0, small_reads = 0;
  for (SyncPointKind kind : {SyncPointKind::kPageableAsyncCopy, SyncPointKind::kSyncCopy, SyncPointKind::kMemset}) {
    const SyncTypeStats* s = syncStats(p, kind);
    if (!s || s->count == 0) continue;
    copies_by_time.push_back(s);
    blocking_copies += s->count;
    small_reads += s->small_reads;
  }
  std::stable_sort(copies_by_time.begin(), copies_by_time.end(),
                   [](const SyncTypeStats* a, const SyncTypeStats* b) { return a->total_ns > b->total_ns; });
  const bool reads = blocking_copies > 0 && small_reads * 2 >= blocking_copies;
  FindingBuilder f(kFindingPageableCopies,
                   reads ? "in blocking reads of values to the host (.item()-like copies)"
                         : "in blocking copies (pageable memory, many small copies)",
                   x.pageable_copies_ns, x);
  f.evidence("idle in blocking copies", shareOfIdle(x.pageable_copies_ns, x) +
                                            ", the launching thread inside a copy or memset that blocked");
  f.number("sync_copy_idle_ns", static_cast<double>(x.pageable_copies_ns));
  for (const SyncTypeStats* s : copies_by_time) addSyncTypeEvidence(f, *s, false, p.steps.steps);
  if (small_reads > 0) {
    f.evidence("small reads", formatCount(small_reads) + " of " + formatCount(blocking_copies) +
                                  " blocking copies were to the host and at most 64 KiB");
    f.number("small_reads", static_cast<double>(small_reads));
  }
  const uint64_t copies = deviceCopies(p);
  std::string text = formatCount(copies);
  if (p.steps.steps > 0) text += ", " + formatCount(copies / p.steps.steps) + " per step";
  f.evidence("copies on the device", text);
  f.number("device_copies", static_cast<double>(copies));
  std::string fix = syncAdviceInOrder(copies_by_time);
  if (!reads) fix += " Gather many small tensors into one buffer and copy it once.";
  if (!fix.empty()) fix = siteToStartAt(f, copies_by_time, p.steps.steps) + fix;
  f.fix(fix.empty() ? "Copy from pinned memory: DataLoader(pin_memory=True) and tensor.to(device, non_blocking=True)."
                    : fix);
  return f.take();
}

Finding launchOverhead(const ProcessAnalysis& p, const IdleExplanation& x, const AnalysisOptions& o,
                       const DiagnosisThresholds& t) {
  const LaunchStats& l = p.launches;
  FindingBuilder f(kFindingLaunchOverhead, "in kernel launch overhead (tiny kernels)", x.launch_overhead_ns, x);
  f.evidence("launch overhead idle", shareOfIdle(x.launch_overhead_ns, x) + ", in gaps shorter than " +
                                         formatDuration(o.launch_threshold_ns) + " or inside launch calls");
  f.number("launch_overhead_idle_ns", static_cast<double>(x.launch_overhead_ns));
  // The rule that makes it a finding: many short gaps, never one slow call.
  f.evidence("from many short gaps", formatCount(x.launch_short_gaps) + " gaps under " + formatDuration(kLongGapNs) +
                                         " carry it (a finding needs " + formatCount(t.launch_min_gaps) +
                                         "; launch calls in longer gaps are one-time stalls)");
  f.number("launch_overhead_gaps", static_cast<double>(x.launch_short_gaps));
  f.number("launch_min_gaps", static_cast<double>(t.launch_min_gaps));
  if (x.long_call_ns > 0) {
    f.evidence("left to one-time stalls", formatDuration(x.long_call_ns) + " in launch calls of gaps of " +
                                              formatDuration(kLongGapNs) + " or more (see warmup)");
    f.number("long_call_ns", static_cast<double>(x.long_call_ns));
  }
  // The kernels a reader would fuse or capture: the short ones that run most often.
  if (!p.kernels.short_by_count.empty()) {
    std::string names;
    const std::size_t shown = std::min<std::size_t>(3, p.kernels.short_by_count.size());
    for (std::size_t i = 0; i < shown; ++i) {
      const KernelStats& k = p.kernels.short_by_count[i];
      names += (i ? "; " : "") + shortKernelName(k.name, 60) + " x" + formatCount(k.count) + ", median " +
               formatDuration(k.median_ns);
    }
    f.evidence("short kernels, most frequent", names);
    f.number("short_kernel_names", static_cast<double>(p.kernels.short_by_count.size()));
  }
  // The buckets that start below the launch threshold hold the gaps it calls launch overhead.
  std::size_t end = 0;
  while (end < GapHistogram::kBucketCount && GapHistogram::lowerNs(end) < o.launch_threshold_ns) ++end;
  const GapHistogram::Bucket short_gaps = gapsInBuckets(p, 0, end);
  if (end > 0) {
    f.evidence("gaps under " + formatDuration(GapHistogram::upperNs(end - 1)),
               formatCount(short_gaps.count) + ", " + formatDuration(short_gaps.total_ns) + " in all");
    f.number("short_gaps", static_cast<double>(short_gaps.count));
    f.number("short_gaps_ns", static_cast<double>(short_gaps.total_ns));
  }
  const uint64_t kernels = deviceKernels(p);
  f.evidence("kernels under 20 us", formatCount(l.kernels_under_20us) + " of " + formatCount(kernels) + " (" +
                                        formatPercent(ratio(static_cast<double>(l.kernels_under_20us),
                                                            static_cast<double>(kernels))) +
                                        ")");
  f.number("kernels_under_20us", static_cast<double>(l.kernels_under_20us));
  f.number("kernels", static_cast<double>(kernels));
  f.evidence("short kernels (HTA)", formatCount(l.short_kernels) + " ran shorter than their launch call");
  f.number("short_kernels", static_cast<double>(l.short_kernels));
  f.evidence("launch call", "p50 " + formatDuration(l.api_p50_ns) + ", " +
                                formatCount(static_cast<uint64_t>(std::llround(l.launches_per_second))) +
                                " launches per second");
  f.number("launch_api_p50_ns", static_cast<double>(l.api_p50_ns));
  f.number("launches_per_second", l.launches_per_second);
  if (l.host_launch_gaps.count() > 0) {
    const std::size_t median = medianBucket(l.host_launch_gaps, 0);
    f.evidence("host time between launches", "median " + bucketRangeText(median));
  }
  f.fix("Launch fewer, larger kernels: torch.compile(mode=\"reduce-overhead\") or CUDA Graphs replay a step "
        "with one launch; fuse small ops; a larger micro-batch makes each kernel outlast its launch.");
  return f.take();
}

Finding syncPoints(const ProcessAnalysis& p, const IdleExplanation& x) {
  // The types that drained the queue, by the idle that followed them: the title names the first,
  // and the fix is theirs, in that order.
  std::vector<const SyncTypeStats*> drainers;
  uint64_t sync_calls = 0;
  for (const SyncTypeStats& s : p.sync_points) {
    sync_calls += s.count;
    if (s.idle_after_ns > 0) drainers.push_back(&s);
  }
  std::stable_sort(drainers.begin(), drainers.end(),
                   [](const SyncTypeStats* a, const SyncTypeStats* b) { return a->idle_after_ns > b->idle_after_ns; });
  if (drainers.size() > 3) drainers.resize(3);
  std::string title = x.sync_storm ? "in a sync storm: syncs that drain the queue again and again"
                                   : "after sync points that drained the queue";
  if (!drainers.empty()) title += " (mostly " + syncTypeLabel(*drainers.front()) + ")";
  FindingBuilder f(kFindingSyncPoints, title, x.sync_points_ns, x);
  uint64_t after_sync_gaps = 0;
  for (const DeviceAnalysis& d : p.devices) after_sync_gaps += d.after_sync_gaps;
  std::string text = shareOfIdle(x.after_sync_ns, x) + ", in gaps that began when a sync returned";
  if (after_sync_gaps > 0) text += " (" + formatCount(after_sync_gaps) + " gaps)";
  f.evidence("idle after syncs", text);
  f.number("after_sync_idle_ns", static_cast<double>(x.after_sync_ns));
  f.number("after_sync_gaps", static_cast<double>(after_sync_gaps));
  if (x.sync_storm) {
    char rate[48];
    std::snprintf(rate, sizeof rate, "%.0f a second", static_cast<double>(x.syncs) * 1e9 / static_cast<double>(x.window_ns));
    const uint64_t after = x.sync_points_ns - std::min(x.sync_points_ns, x.storm_in_sync_calls_ns + x.storm_in_reads_ns);
    std::string held = "all " + formatDuration(after) + " of the host's time after them is what they expose" +
                       (x.after_sync_estimated ? " (estimated from the gap histogram)" : "");
    if (x.storm_in_sync_calls_ns > 0) held += ", with " + formatDuration(x.storm_in_sync_calls_ns) + " inside the sync calls";
    if (x.storm_in_reads_ns > 0) held += ", and " + formatDuration(x.storm_in_reads_ns) + " blocked in its reads of values";
    f.evidence("sync storm", formatCount(x.syncs) + " syncs, " + rate + ": " + held);
    f.number("sync_storm_syncs", static_cast<double>(x.syncs));
    f.number("sync_storm_in_sync_calls_ns", static_cast<double>(x.storm_in_sync_calls_ns));
    f.number("sync_storm_in_reads_ns", static_cast<double>(x.storm_in_reads_ns));
  } else {
    f.evidence("hideable", formatDuration(x.sync_points_ns) +
                               " of the host's time in those gaps: it had waited at least as long in the sync" +
                               (x.after_sync_estimated ? " (estimated from the gap histogram)" : ""));
  }
  f.number("hideable_ns", static_cast<double>(x.sync_points_ns));
  for (const SyncTypeStats* s : drainers) addSyncTypeEvidence(f, *s, true, p.steps.steps);
  // The type that blocked longest, when it is not a drainer: item() is a pageable copy that waits
  // for the queue, then a stream sync that finds it empty and is named the drainer.
  const SyncTypeStats* longest = nullptr;
  for (const SyncTypeStats& s : p.sync_points) {
    if (s.total_ns > 0 && (!longest || s.total_ns > longest->total_ns)) longest = &s;
  }
  std::vector<const SyncTypeStats*> advised = drainers;
  if (longest && std::find(drainers.begin(), drainers.end(), longest) == drainers.end()) {
    addSyncTypeEvidence(f, *longest, false, p.steps.steps);
    advised.push_back(longest);
  }
  f.number("sync_points", static_cast<double>(sync_calls));
  if (p.steps.steps > 0) {
    char per_step[32];
    std::snprintf(per_step, sizeof per_step, "%.1f", static_cast<double>(sync_calls) / static_cast<double>(p.steps.steps));
    f.evidence("sync points per step", per_step);
    f.number("sync_points_per_step", static_cast<double>(sync_calls) / static_cast<double>(p.steps.steps));
  }
  // Without a drainer (estimated split) there is no type to follow: the general advice.
  std::string fix = advised.empty() ? "Take sync points out of the step: read values every N steps, copy with "
                                      "non_blocking=True from pinned memory."
                                    : siteToStartAt(f, advised, p.steps.steps) + syncAdviceInOrder(advised);
  if (x.sync_storm) {
    // Data-dependent shapes: CUDA graphs cannot capture them and torch.compile breaks its graph at
    // each, so the fix is keeping the values on the GPU.
    fix = "Data-dependent shapes and reads (.item(), .tolist(), nonzero, boolean-mask indexing) sync the host "
          "each time, and CUDA graphs cannot capture them: keep the values on the GPU (torch.where instead of "
          "masking, fixed-size outputs such as torch.nonzero_static, running sums as tensors), read them once per "
          "step or batch, and move post-processing off the step. " + fix;
  }
  f.fix(fix);
  return f.take();
}

Finding nccl(const ProcessAnalysis& p, const IdleExplanation& x, bool exposure_only) {
  const NcclStats& n = p.nccl;
  FindingBuilder f(kFindingNccl,
                   exposure_only ? "in NCCL communication that does not overlap compute" : "in NCCL communication calls",
                   x.nccl_ns, x);
  f.evidence("idle in NCCL host calls", shareOfIdle(x.nccl_ns, x));
  f.number("nccl_host_idle_ns", static_cast<double>(x.nccl_ns));
  std::vector<const NcclTypeStats*> types;
  for (const NcclTypeStats& t : n.by_type) {
    if (t.calls > 0 || t.kernels > 0) types.push_back(&t);
  }
  std::sort(types.begin(), types.end(),
            [](const NcclTypeStats* a, const NcclTypeStats* b) { return a->host_ns > b->host_ns; });
  if (types.size() > 2) types.resize(2);
  for (const NcclTypeStats* t : types) {
    const std::string bytes = ncclBytesKnown(*t, p.source.kineto_trace) ? formatCount(t->bytes) + " bytes"
                                                                        : std::string("bytes not in trace");
    f.evidence(t->op, formatCount(t->calls) + " calls, " + bytes + ", host " +
                          formatDuration(t->host_ns) + ", device " + formatDuration(t->device_ns));
    f.number(t->op + "_calls", static_cast<double>(t->calls));
    f.number(t->op + "_host_ns", static_cast<double>(t->host_ns));
  }
  f.evidence("communication share of busy", formatPercent(n.comm_share_of_busy));
  f.number("comm_share_of_busy_fraction", n.comm_share_of_busy);
  f.evidence("compute-communication overlap", formatPercent(n.compute_comm_overlap));
  f.number("compute_comm_overlap_fraction", n.compute_comm_overlap);
  f.fix("Fewer, larger collectives that overlap compute: a larger per-GPU batch, DDP gradient bucketing "
        "(bucket_cap_mb), model.no_sync() during gradient accumulation.");
  return f.take();
}

Finding warmup(const IdleExplanation& x) {
  // Only the stalls with warm-up evidence are this finding's (a stall is a shape, not a cause:
  // the rest of each went to its own cause's finding).
  const std::vector<IdleGap>& shown = x.warmup_gaps;
  const bool stalls = !shown.empty();
  const IdleGap* lead = stalls ? &shown.front() : nullptr;
  // The thread sat in a call (a launch, a module load), not in Python: a one-time stall.
  const bool in_call = lead && lead->call.known && lead->call.in_gap_ns > 0 &&
                       (mainCause(*lead) == kLaunch || mainCause(*lead) == kCudaApi);
  std::string title;
  if (stalls && !lead->warmup_evidence.empty()) {
    title = std::string(shown.size() == 1 ? "in a compile / warm-up stall: " : "in compile / warm-up stalls, the longest: ") +
            shortKernelName(lead->warmup_evidence, 80);
  } else if (stalls) {
    title = "in compile / warm-up stalls";
  } else {
    title = "in a long start-up before the first GPU work (compile, warm-up)";
  }
  FindingBuilder f(kFindingWarmup, title, x.warmup_ns, x);
  uint64_t stall_ns = 0, warm_ns = 0;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    const IdleGap& gap = shown[i];
    stall_ns += gapLength(gap);
    warm_ns += std::min(gap.warmup_ns, gapLength(gap));
    if (i >= 3) continue;
    const std::string place = gapPlace(gap);
    f.evidence(i == 0 ? "longest" : "then",
               formatDuration(gapLength(gap)) + (place.empty() ? "" : ": " + place) + "; warm-up evidence: " +
                   (gap.warmup_evidence.empty() ? std::string("a compile range") : gap.warmup_evidence));
  }
  if (x.long_call_ns > 0 && x.long_call_ns * 10 >= x.warmup_ns) {
    f.evidence("in slow first launches", formatDuration(x.long_call_ns) +
                                             " of launch calls at a kernel's first launch (lazy module loading)");
    f.number("long_call_ns", static_cast<double>(x.long_call_ns));
    f.number("one_time_stalls", static_cast<double>(x.one_time_stalls.size()));
  }
  if (stalls) {
    f.evidence("gaps with warm-up evidence",
               formatCount(shown.size()) + (shown.size() == 1 ? " long gap (" : " long gaps (") +
                   formatDuration(stall_ns) + "), of which " + formatDuration(warm_ns) +
                   " warm-up: inside the warm-up work, or host time no range names in a stall that loaded code; "
                   "the rest of each gap is its own cause's (docs/analysis.md, \"Stalls and warm-up\")");
    f.number("warmup_gap_ns", static_cast<double>(warm_ns));
    f.number("stalls", static_cast<double>(x.stalls.size()));
    f.number("warmup_gaps", static_cast<double>(shown.size()));
    f.number("stall_ns", static_cast<double>(stall_ns));
    f.evidence("typical long gap", "up to " + formatDuration(x.typical_long_gap_ns) + "; a stall is " +
                                       formatDuration(x.stall_limit_ns) + " or longer");
    f.number("typical_long_gap_ns", static_cast<double>(x.typical_long_gap_ns));
    f.number("stall_limit_ns", static_cast<double>(x.stall_limit_ns));
  }
  if (x.leading_ns > 0) {
    f.evidence("start-up", formatDuration(x.leading_ns) + " from process start to the first GPU work (" +
                               formatPercent(ratio(static_cast<double>(x.leading_ns),
                                                   static_cast<double>(x.leading_ns + x.window_ns))) +
                               " of the run; not counted as idle)");
  }
  f.number("leading_ns", static_cast<double>(x.leading_ns));
  std::string fix;
  if (in_call || (!stalls && x.long_call_ns > 0) || (lead && lead->warmup_first_launch)) {
    fix = "One-time set-up inside the call: lazy module loading (a kernel's module loads on its first launch), "
          "a JIT compile of PTX for this GPU, a library's first call (cuBLAS / cuDNN handles, autotuning). Warm up "
          "before timing (or CUDA_MODULE_LOADING=EAGER); if it recurs, look for recompiles or new shapes. ";
  }
  fix += "Warm up before timing and keep shapes fixed: compile before the timed loop; pad or bucket sequence "
         "lengths so torch.compile does not recompile on new shapes (or mark the dimension dynamic).";
  f.fix(fix);
  return f.take();
}

Finding cudaApi(const ProcessAnalysis& p, const IdleExplanation& x) {
  // malloc and free are the CUDA calls that most often sit in a step; when the run made any, the
  // finding is theirs and so is the fix. Otherwise the calls are the rest of the API.
  const SyncTypeStats* alloc = syncStats(p, SyncPointKind::kAllocFree);
  const bool allocations = alloc && alloc->count > 0;
  FindingBuilder f(kFindingCudaApi,
                   allocations ? "in CUDA API calls (cudaMalloc / cudaFree)" : "in CUDA API calls (not launches or copies)",
                   x.cuda_api_ns, x);
  f.evidence("idle in other CUDA calls", shareOfIdle(x.cuda_api_ns, x) +
                                             ", the launching thread in a call that is not a launch or copy");
  f.number("cuda_api_idle_ns", static_cast<double>(x.cuda_api_ns));
  if (allocations) addSyncTypeEvidence(f, *alloc, true, p.steps.steps);
  f.fix(allocations ? syncAdvice(*alloc)
                    : "Keep CUDA calls that are neither launches nor copies out of the step: create streams, events "
                      "and graphs once, and load modules (compile kernels) before the loop.");
  return f.take();
}

Finding dependency(const ProcessAnalysis& p, const IdleExplanation& x) {
  FindingBuilder f(kFindingDependency, "waiting on another stream, event or rank", x.dependency_ns, x);
  uint64_t copy_wait = 0, copy_waits = 0;
  const DeviceAnalysis* longest = nullptr;
  for (const DeviceAnalysis& d : p.devices) {
    copy_wait += d.copy_wait_ns;
    copy_waits += d.copy_waits;
    if (d.longest_copy_wait.wait_ns > 0 && (!longest || d.longest_copy_wait.wait_ns > longest->longest_copy_wait.wait_ns)) {
      longest = &d;
    }
  }
  f.evidence("idle waiting on a dependency",
             shareOfIdle(x.dependency_ns, x) +
                 (copy_wait * 2 >= x.dependency_ns && copy_waits > 0
                      ? ": mostly blocking copies queued behind a stream wait (below)"
                      : ": the next work was queued before the gap began"));
  f.number("dependency_idle_ns", static_cast<double>(x.dependency_ns));
  uint64_t other = 0;
  for (const DeviceAnalysis& d : p.devices) {
    for (const StreamIdle& s : d.streams) other += s.other_ns;
  }
  f.evidence("HTA \"other\" idle, summed over streams", formatDuration(other));
  if (copy_waits > 0) {
    f.evidence("copies behind a stream wait",
               formatDuration(copy_wait) + " in " + formatCount(copy_waits) + " blocking copy call" +
                   (copy_waits == 1 ? "" : "s") +
                   " queued right after a stream wait on their stream, whose own transfer was short: they waited "
                   "for the event, not for the copy");
    f.number("copy_wait_ns", static_cast<double>(copy_wait));
    f.number("copy_waits", static_cast<double>(copy_waits));
  }
  if (longest) {
    // What the trace shows of what it waited for: the wait call, and the event record it may be on.
    const CopyWait& w = longest->longest_copy_wait;
    const auto at = [&](uint64_t t) { return "+" + formatDuration(t - std::min(t, longest->window_start_ns)); };
    const auto named = [](const std::string& name, const char* otherwise) { return name.empty() ? std::string(otherwise) : name; };
    std::string copy = "a " + named(w.copy_api_name, "copy call") + (w.bytes > 0 ? " of " + formatCount(w.bytes) + " B" : "") +
                       " at " + at(w.copy_enter_ns) + " (thread " + std::to_string(w.thread_id) + "), " +
                       formatDuration(w.wait_ns) + " of it waiting, queued right after " +
                       named(w.wait_api_name, "a stream wait") + " at " + at(w.stream_wait_ns);
    f.evidence("longest", copy);
    std::string event;
    const std::string record = named(w.event_record_api_name, "an event record") + " at " + at(w.event_record_ns) +
                               " on thread " + std::to_string(w.event_record_thread);
    const std::string stream = w.event_record_stream != 0 ? ", on stream " + std::to_string(w.event_record_stream) : "";
    if (w.event_named && w.event_record_seen) {
      event = "recorded by " + record + stream + " (correlation " + std::to_string(w.event_record_correlation_id) +
              ", as the trace's stream-wait record names it): the copy waited for the work queued before it" +
              (stream.empty() ? std::string() : " on that stream");
    } else if (w.event_named) {
      event = "recorded before the window: the trace's stream-wait record names its record (correlation " +
              std::to_string(w.event_record_correlation_id) + stream +
              "), which is not among the trace's calls, so the work the copy waited for was queued before the "
              "profiler started";
    } else if (w.event_record_seen) {
      event = "not named by the trace (its calls do not say which event a wait is on; a PyTorch profiler trace "
              "written with enable_cuda_sync_events does); the latest event record before the wait was " + record +
              ": the work queued before it, on its stream, is what the copy most likely waited for";
    } else {
      event = "recorded before the window: no event record call in the trace comes before the wait, so the work "
              "the copy waited for was queued before the profiler started (or by another process)";
    }
    f.evidence("the event it waited for", event);
    f.number("copy_wait_longest_ns", static_cast<double>(w.wait_ns));
    f.number("copy_wait_event_record_in_window", w.event_record_seen ? 1.0 : 0.0);
    f.number("copy_wait_event_named", w.event_named ? 1.0 : 0.0);
  }
  f.number("hta_other_ns", static_cast<double>(other));
  if (copy_wait * 2 >= x.dependency_ns && copy_waits > 0) {
    f.fix(std::string("The copy waited for an event, not for its transfer: pinned memory or non_blocking=True would "
                      "not shorten it. Find the work the event stands for (a side stream's prefetch or compute, ") +
          (longest && !longest->longest_copy_wait.event_record_seen
               ? "here queued before the profiler's window: start the window earlier to see it"
               : "the work queued before the event record named above") +
          ") and start it earlier, or move the copy (and the wait) out of the step.");
  } else {
    f.fix("Start what the step waits for earlier: prefetch the next batch on a side stream, record its event "
          "as soon as it is queued; avoid cross-stream waits and host round trips inside the step.");
  }
  return f.take();
}

namespace {

// The model already runs compiled: Inductor's kernels take a real share of kernel time, or the
// host's time falls inside a compiled region's annotation (Torch-Compiled Region, CompiledFunction).
std::string compiledEvidence(const ProcessAnalysis& p) {
  if (p.kernels.total_ns > 0 && p.kernels.inductor_ns * 4 >= p.kernels.total_ns) {
    return formatPercent(ratio(static_cast<double>(p.kernels.inductor_ns), static_cast<double>(p.kernels.total_ns))) +
           " of kernel time in Inductor's Triton kernels (triton_*)";
  }
  for (const DeviceAnalysis& d : p.devices) {
    for (const std::vector<HostLabel>& labels : d.host_part_labels) {
      for (const HostLabel& l : labels) {
        if (l.name.find("Torch-Compiled Region") != std::string::npos ||
            l.name.find("CompiledFunction") != std::string::npos) {
          return formatDuration(l.ns) + " of idle host time inside " + l.name;
        }
      }
    }
  }
  return "";
}

}  // namespace

Finding hostBound(const ProcessAnalysis& p, const IdleExplanation& x, const AnalysisOptions& o,
                  const DiagnosisThresholds& t, uint64_t launch_ns) {
  constexpr std::size_t kFramework = static_cast<std::size_t>(HostPart::kFramework);
  constexpr std::size_t kOther = static_cast<std::size_t>(HostPart::kOther);
  constexpr std::size_t kUnknown = static_cast<std::size_t>(HostPart::kUnknown);
  const uint64_t framework = x.host_part_ns[kFramework], other = x.host_part_ns[kOther];
  const uint64_t unknown = x.host_part_ns[kUnknown];
  const uint64_t total = framework + other + unknown + launch_ns;
  // The largest member titles the finding and keeps its id (scripts match on them) and evidence.
  IdleExplanation whole = x;
  Finding f;
  if (launch_ns >= framework && launch_ns >= other && launch_ns >= unknown) {
    whole.launch_overhead_ns = total;
    f = launchOverhead(p, whole, o, t);
  } else {
    HostPart lead = HostPart::kFramework;
    if (other > framework && other >= unknown) lead = HostPart::kOther;
    if (unknown > framework && unknown > other) lead = HostPart::kUnknown;
    whole.host_part_ns[static_cast<std::size_t>(lead)] = total;
    f = hostPart(p, whole, o, lead);
  }
  // One cause, one finding: the split of what it holds, as one line.
  std::vector<std::pair<uint64_t, std::string>> members = {{framework, "framework ops"},
                                                           {other, "Python outside ops"},
                                                           {unknown, "host work of unknown kind"},
                                                           {launch_ns, "launch calls and short gaps"}};
  std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string split;
  for (const auto& [ns, name] : members) {
    if (ns == 0) continue;
    split += (split.empty() ? "" : ", ") + name + " " + formatDuration(ns);
  }
  f.evidence.insert(f.evidence.begin() + (f.evidence.empty() ? 0 : 1),
                    {"the host between kernels", split + ": one cause (the host runs the model slower than the GPU), "
                                                         "one fix"});
  f.numbers.emplace_back("host_bound_framework_ns", static_cast<double>(framework));
  f.numbers.emplace_back("host_bound_other_ns", static_cast<double>(other));
  f.numbers.emplace_back("host_bound_unknown_ns", static_cast<double>(unknown));
  f.numbers.emplace_back("host_bound_launch_ns", static_cast<double>(launch_ns));
  // The fix by the evidence: code already compiled gets what comes after compiling; unknown time
  // keeps its own (how to tell what it is); Python between ops its lines; eager ops compiling.
  const std::string compiled = compiledEvidence(p);
  if (!compiled.empty() && f.id != kFindingHostUnknown) {
    f.evidence.emplace_back("already compiled", compiled);
    f.fix = "The model already runs compiled, so torch.compile alone will not help: the host time left is the "
            "compiled wrapper's and its launches'. torch.compile(mode=\"reduce-overhead\") replays the step as "
            "CUDA graphs (static shapes); torch._inductor.config.cpp_wrapper = True moves the wrapper from Python "
            "to C++; for inference, freezing (torch._inductor.config.freezing = True). A larger batch gives each "
            "launch more work.";
  }
  return f;
}

Finding profilerCost(const ProcessAnalysis& p, const IdleExplanation& x, const DiagnosisThresholds& t) {
  const RecordingSource& s = p.source;
  const double span_ms = static_cast<double>(s.trace_host_span_ns) / 1e6;
  const double cost = static_cast<double>((s.trace_python_events + s.trace_cpu_ops) * t.profiler_event_ns);
  const double share = ratio(cost, static_cast<double>(s.trace_host_span_ns));
  FindingBuilder f(kFindingProfilerCost, "in the profiler's own host events, which inflate the host time measured", 0, x);
  char rate[96];
  std::snprintf(rate, sizeof rate, "%.0f Python function events and %.0f ops per ms",
                static_cast<double>(s.trace_python_events) / span_ms, static_cast<double>(s.trace_cpu_ops) / span_ms);
  f.evidence("host events", formatCount(s.trace_python_events) + " Python function events (with_stack=True) and " +
                                formatCount(s.trace_cpu_ops) + " ops in " + formatDuration(s.trace_host_span_ns) +
                                " of host time: " + rate);
  f.evidence("about", "at about " + formatDuration(t.profiler_event_ns) +
                          " of host time per event (the order of the profiler's own cost per recorded event), " +
                          formatPercent(std::min(1.0, share)) +
                          " of that host time is the profiler's: host-side findings are that much larger than the "
                          "job's own");
  f.number("trace_python_events", static_cast<double>(s.trace_python_events));
  f.number("trace_cpu_ops", static_cast<double>(s.trace_cpu_ops));
  f.number("trace_host_span_ns", static_cast<double>(s.trace_host_span_ns));
  f.number("profiler_cost_fraction", std::min(1.0, share));
  f.fix(std::string(s.trace_python_events > s.trace_cpu_ops
                        ? "Measure host time with with_stack=False (and record_shapes=False): "
                        : "Measure host time with record_shapes=False and fewer annotations: ") +
        "keep a with_stack trace for naming lines, and time a step with and without the profiler to see its cost.");
  return f.take();
}

Finding slowLaunchCalls(const ProcessAnalysis& p, const IdleExplanation& x) {
  FindingBuilder f(kFindingSlowLaunchCalls, "in slow launch calls (a millisecond or more each)", x.slow_launch_ns, x);
  f.evidence("idle in slow launch calls",
             shareOfIdle(x.slow_launch_ns, x) + ": launch, copy or event calls that held gaps of " +
                 formatDuration(kLongGapNs) + " or more, not a kernel's first launch");
  f.number("slow_launch_ns", static_cast<double>(x.slow_launch_ns));
  const LaunchStats& l = p.launches;
  f.evidence("launch call", "p50 " + formatDuration(l.api_p50_ns) + ", p99 " + formatDuration(l.api_p99_ns));
  for (const DeviceAnalysis& d : p.devices) {
    for (const IdleGap& gap : d.longest_gaps) {
      if (mainCause(gap) != kLaunch) continue;
      f.evidence("longest", formatDuration(gapLength(gap)) + ": " + gapPlace(gap));
      break;
    }
  }
  f.fix("A launch that takes milliseconds without loading code: the thread was preempted (a loaded host: fewer "
        "DataLoader workers or threads than cores, pin the training thread), the launch queue was full, or the "
        "call waited on a lock another thread held (a second thread launching, a profiler's callbacks).");
  return f.take();
}

namespace {

KernelClass classOfKey(const std::string& key) {
  for (std::size_t c = 0; c < kKernelClassCount; ++c) {
    if (key == kernelClassKey(static_cast<KernelClass>(c))) return static_cast<KernelClass>(c);
  }
  return KernelClass::kOther;
}

}  // namespace

Finding gpuBound(const ProcessAnalysis& p, const IdleExplanation& x) {
  const KernelTable& k = p.kernels;
  // The class with most kernel time leads; softmax beside GEMMs is unfused attention, the class to
  // act on even when the GEMMs take more time.
  KernelClass lead = KernelClass::kOther;
  uint64_t lead_ns = 0;
  if (!k.by_class.empty()) {
    lead = classOfKey(k.by_class.front().first);
    lead_ns = k.by_class.front().second;
  }
  const auto share = [&](uint64_t ns) { return ratio(static_cast<double>(ns), static_cast<double>(k.total_ns)); };
  std::string title = "the GPU is the bottleneck";
  if (lead != KernelClass::kOther && share(lead_ns) >= 0.25) {
    title += ": busy time mostly " + std::string(kernelClassText(lead)) + " (" + formatWholePercent(share(lead_ns)) +
             " of kernel time)";
  }
  FindingBuilder f(kFindingGpuBound, title, 0, x);
  f.evidence("steady-state idle", formatDuration(x.idle_ns) + " = " +
                                      formatPercent(ratio(static_cast<double>(x.idle_ns), static_cast<double>(x.window_ns))) +
                                      " of " + formatDuration(x.window_ns) + ": the GPU rarely waits for the host");
  f.number("steady_idle_fraction", ratio(static_cast<double>(x.idle_ns), static_cast<double>(x.window_ns)));
  std::string classes;
  for (std::size_t i = 0; i < k.by_class.size() && i < 4; ++i) {
    classes += (i ? ", " : "") + std::string(kernelClassText(classOfKey(k.by_class[i].first))) + " " +
               formatWholePercent(share(k.by_class[i].second));
    f.number("kernel_class_" + k.by_class[i].first + "_ns", static_cast<double>(k.by_class[i].second));
  }
  if (!classes.empty()) f.evidence("kernel time by kind", classes + " (from kernel names; whole window)");
  if (!k.top_by_time.empty()) {
    const KernelStats& top = k.top_by_time.front();
    f.evidence("top kernel", shortKernelName(top.name, 70) + ": " + formatPercent(top.busy_share) + " of busy time, " +
                                 formatCount(top.count) + " runs");
  }
  const uint64_t softmax = [&] {
    for (const auto& [key, ns] : k.by_class) {
      if (key == kernelClassKey(KernelClass::kSoftmax)) return ns;
    }
    return uint64_t{0};
  }();
  const bool unfused_attention = softmax > 0 && share(softmax) >= 0.05 && lead != KernelClass::kAttentionFused;
  std::string fix = kernelClassLever(lead, k.fp32_convolution_ns * 2 > lead_ns);
  if (unfused_attention && lead != KernelClass::kSoftmax) {
    fix += " " + kernelClassLever(KernelClass::kSoftmax, false);
  }
  fix += " Host-side changes will not speed this up.";
  f.fix(fix);
  return f.take();
}

Finding firstPass(const ProcessAnalysis& p, const FirstPassTotals& t, const IdleExplanation& x) {
  // What the one-time evidence was, by the cause that held it: launch calls at a kernel's first
  // launch (lazy module loading), other CUDA calls (a library's set-up: cuDNN's cudaFree in the
  // first convolution), host time in a compile.
  const uint64_t lazy = t.warmup_by_cause_ns[kLaunch];
  const uint64_t in_calls = t.idle_by_cause_ns[kCudaApi];
  const uint64_t compile = t.warmup_by_cause_ns[kHostCpu];
  std::vector<std::pair<uint64_t, std::string>> kinds;
  if (lazy > 0) kinds.emplace_back(lazy, "lazy kernel loading");
  if (in_calls > 0) kinds.emplace_back(in_calls, "library set-up in CUDA calls");
  if (compile > 0) kinds.emplace_back(compile, "compiling");
  std::stable_sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string title = "in the first pass: one-time set-up";
  if (!kinds.empty()) title += " (" + kinds.front().second + ")";
  IdleExplanation whole = x;
  whole.window_ns = t.window_ns + t.steady_window_ns;
  whole.steady_state = false;
  FindingBuilder f(kFindingFirstPass, title, t.idle_ns, whole);
  const bool whole_window = t.steady_window_ns == 0;
  f.evidence("first pass", (whole_window ? "the whole window, " : "the first ") + formatDuration(t.longest_ns) +
                               (whole_window ? ", " : " of the window, ") + formatDuration(t.idle_ns) + " idle (" +
                               formatPercent(ratio(static_cast<double>(t.idle_ns), static_cast<double>(t.window_ns))) +
                               (whole_window ? "): it does not settle into a steady state within the window"
                                             : "); it ends with the last gap of one-time evidence before the run settles"));
  f.number("first_pass_ns", static_cast<double>(t.longest_ns));
  f.number("first_pass_idle_ns", static_cast<double>(t.idle_ns));
  if (!whole_window) f.evidence("steady state after it", formatDuration(t.steady_window_ns) + ", " +
                                          formatPercent(ratio(static_cast<double>(t.steady_idle_ns),
                                                              static_cast<double>(t.steady_window_ns))) +
                                          " idle (the other findings are its own)");
  f.number("steady_idle_fraction", ratio(static_cast<double>(t.steady_idle_ns), static_cast<double>(t.steady_window_ns)));
  std::string what;
  for (const auto& [ns, name] : kinds) what += (what.empty() ? "" : ", ") + name + " " + formatDuration(ns);
  if (!what.empty()) f.evidence("one-time evidence", what);
  f.number("one_time_ns", static_cast<double>(t.one_time_ns));
  for (std::size_t i = 0; i < t.gaps.size() && i < 3; ++i) {
    const IdleGap& gap = t.gaps[i];
    const std::string place = gapPlace(gap);
    f.evidence(i == 0 ? "longest gap" : "then", formatDuration(gapLength(gap)) + (place.empty() ? "" : ": " + place));
  }
  std::string fix;
  if (lazy > 0) {
    fix += "Kernels load their modules at first launch (lazy loading): CUDA_MODULE_LOADING=EAGER loads them at "
           "start-up instead. ";
  }
  if (in_calls > 0) {
    fix += "Libraries set themselves up in an op's first call (cuDNN / cuBLAS handles and workspaces; "
           "cudnn.benchmark autotunes each new shape once): expected once per process and shape. ";
  }
  if (compile > 0) {
    fix += "torch.compile compiles on the first call: keep its cache across runs (TORCHINDUCTOR_FX_GRAPH_CACHE=1, "
           "the default in recent releases) and keep shapes fixed. ";
  }
  fix += "It does not recur: time and profile after a warm-up step (torch.profiler's schedule(wait=1, warmup=1, ...)).";
  f.fix(fix);
  (void)p;
  return f.take();
}

}  // namespace gapwatch::analysis::findings
