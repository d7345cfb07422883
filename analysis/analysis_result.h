// analysis/analysis_result.h: everything the analysis engine finds in a recording.
//
// The one data model between the engine (which fills it), the diagnosis (which reads it and adds
// findings) and the outputs (terminal report, JSON: docs/report-json.md). Times are nanoseconds on
// the recording's clock (CLOCK_MONOTONIC); "fraction" fields are 0..1. Definitions of every
// number: ARCHITECTURE.md sections 1 and 6, made exact in docs/analysis.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/gap_histogram.h"
#include "reader/events.h"
#include "reader/python_stack_text.h"
#include "analysis/sync_points.h"

namespace gapwatch::analysis {

// The knobs a user can turn (gapwatch report --launch-threshold, --min-gap, --top).
// Which HTA release's rules `report --hta` follows. They differ only for a trace with fewer than
// two ProfilerSteps: 0.6.1 (the current source, and the stored references) still keeps only work
// with its CPU call, up to the one step's end; 0.5.0 (the latest on PyPI) filters nothing then.
enum class HtaRelease : uint8_t { k0_6_1, k0_5_0 };
const char* htaReleaseName(HtaRelease release);  // "0.6.1", "0.5.0"

struct AnalysisOptions {
  uint64_t launch_threshold_ns = 30000;       // a shorter gap outside any CUDA call is launch overhead
  uint64_t min_gap_ns = 0;                    // gaps shorter than this are still idle, but not listed
  uint32_t top_n = 5;                         // call sites, kernels, gaps listed
  // A host_cpu gap this long or longer is a long host gap: the report names where the host came
  // back (the recorder's GAPWATCH_PY_GAP_MS, 10 ms by default, takes the stacks it needs).
  uint64_t long_host_gap_ns = 10'000'000;
  uint64_t reorder_window_ns = 2000000000;    // how late an event may arrive and still be placed
  uint64_t hta_consecutive_kernel_delay_ns = 30000;  // HTA's kernel_wait threshold
  uint64_t hta_runtime_cutoff_ns = 50000;             // HTA's short-kernel / runtime-outlier cutoff
  uint64_t hta_launch_delay_cutoff_ns = 100000;       // HTA's launch-delay outlier cutoff
  bool hta_view = false;  // also compute HTA's own numbers with HTA's conventions (report --hta)
  HtaRelease hta_release = HtaRelease::k0_6_1;
  // A sampled Python frame whose file contains one of these is data loading, besides PyTorch's own
  // torch/utils/data/ (report --input-pipeline-frames; analysis/python_frame_rules.h): Hugging
  // Face datasets, WebDataset, DALI and Ray Data by default.
  std::vector<std::string> input_pipeline_frames = defaultInputPipelineFrames();

  static std::vector<std::string> defaultInputPipelineFrames() {
    return {"/datasets/", "/webdataset/", "/nvidia/dali/", "/ray/data/"};
  }
};

// The causes of idle time (ARCHITECTURE.md section 6). Every idle nanosecond has exactly one.
enum class IdleCause : uint8_t { kHostCpu, kLaunchOverhead, kSyncCopy, kCudaApi, kNcclHost, kDependency };
inline constexpr std::size_t kIdleCauseCount = 6;
const char* idleCauseName(IdleCause cause);  // "host_cpu", "launch_overhead", ...

// What the host was doing in its host_cpu time (docs/analysis.md, "Host time"), by the evidence
// of the launching thread's host ranges (a trace's events.proto HostRange) or, in a live
// recording, of its sampled Python stacks (PythonSample): inside data loading (`input_pipeline`),
// inside a framework op or torch's Python (`framework`), outside any op (`other`: Python between
// ops, logging, metrics...), or `unknown` where no evidence covers the time.
enum class HostPart : uint8_t { kInputPipeline, kFramework, kOther, kUnknown };
inline constexpr std::size_t kHostPartCount = 4;
const char* hostPartName(HostPart part);  // "input_pipeline", "framework", "other", "unknown"

// Where a device's host split came from: a trace's host events (ops, annotations, data-loading
// ranges), the recorder's sampled Python stacks, or nothing (all of host_cpu is unknown).
enum class HostEvidence : uint8_t { kNone, kTraceHostEvents, kPythonSamples };
const char* hostEvidenceName(HostEvidence evidence);  // "none", "trace_host_events", "python_samples"

// A name under which host time fell (an op, an annotation, a data-loading range), with its time.
struct HostLabel {
  std::string name;  // "" for the other part outside any annotation
  uint64_t ns = 0;
};

// HTA's per-stream idle breakdown (get_idle_time_breakdown), for users who compare with it.
struct StreamIdle {
  uint64_t stream = 0;
  uint64_t host_wait_ns = 0;
  uint64_t kernel_wait_ns = 0;
  uint64_t other_ns = 0;
};

// A gap this long or longer is "long": the floor of the log2 bucket [1.024 ms, 2.048 ms). Shorter
// gaps are launch and sync noise; a long one is host work, a wait, or one slow call.
inline constexpr uint64_t kLongGapNs = 1'024'000;

// A piece of device work at an edge of a gap: the one that ended where the gap began, or the one
// that started where it ended. Enough to find the place in the code.
struct GapActivity {
  v1::ActivityKind kind = v1::ACTIVITY_KIND_UNSPECIFIED;  // UNSPECIFIED: none known
  uint32_t name_id = 0;     // the recording's string id (kernel name; 0 for copies and memsets)
  std::string name;         // the kernel's name, or "memcpy DtoH 4 B", "memset 1.0 KiB"; filled at the end
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t stream = 0;
  uint64_t correlation_id = 0;
  uint64_t bytes = 0;
  v1::CopyKind copy_kind = v1::COPY_KIND_UNSPECIFIED;
};

// The recorded call of the gap's launching thread (the thread that queued the work after the gap)
// that overlapped the gap longest; when none did, the call that queued that work (it returned
// before the gap began).
struct GapCall {
  bool known = false;
  uint32_t api_name_id = 0;
  std::string api_name;     // "cudaLaunchKernel"; filled at the end
  uint32_t thread_id = 0;
  uint64_t enter_ns = 0, exit_ns = 0;
  uint64_t in_gap_ns = 0;   // how much of the gap the thread spent inside it
  // Where in Python the call was made (the recorder's stack at a launch that ends a long stretch
  // of host time, or at a call that waits): STRING_KIND_PYTHON_STACK id, and the site a report
  // names (python_stack_text.h), filled at the end; 0 and "" when not recorded.
  uint32_t python_stack_id = 0;
  std::string python_site;
};

// Where the host came back from a long stretch of host time (a host_cpu gap of at least
// AnalysisOptions::long_host_gap_ns): the Python site of the launch that ended it.
struct HostReturnSite {
  std::string name;  // as CallSite::name
  uint64_t gaps = 0, host_cpu_ns = 0;
  uint32_t python_stack_id = 0;
  std::vector<PythonFrame> python_stack;  // one of its gaps' whole stack, innermost first
};

struct IdleGap {  // one of the longest gaps, for the report
  uint64_t start_ns = 0, end_ns = 0;
  std::array<uint64_t, kIdleCauseCount> by_cause_ns{};
  std::array<uint64_t, kHostPartCount> host_by_part_ns{};  // its host_cpu time by part
  bool after_sync = false;
  GapActivity before;  // ended at start_ns
  GapActivity after;   // started at end_ns
  GapCall call;
  // The call that queued `after` (its launch), when recorded: often `call` itself; when not, the
  // launching thread went on from `call` to it (a 6 s cudaFree, then a 3 s cudaLaunchKernel).
  GapCall queued_by;
  // The part of by_cause_ns (and of host_by_part_ns) with evidence of compilation or first-time
  // work (reader/warmup_names.h): the launching thread inside a module load, a library's
  // set-up or graph capture, inside a torch.compile range, or in the first launch of a kernel.
  // A stall's warm-up is this, never the whole stall (docs/analysis.md, "Stalls and warm-up").
  std::array<uint64_t, kIdleCauseCount> warmup_by_cause_ns{};
  // Of the gap's cuda_api time, what the thread spent inside sync calls (stream, device and event
  // synchronizes; not cudaMalloc / cudaFree): a sync storm's own cost.
  uint64_t cuda_api_in_syncs_ns = 0;
  std::array<uint64_t, kHostPartCount> warmup_host_by_part_ns{};
  // What the evidence was, by name ("cuModuleLoadData", "Torch-Compiled Region", "first launch of
  // <kernel>"); filled at the end for the gaps kept; "" when the gap has none.
  std::string warmup_evidence;
  uint32_t warmup_api_name_id = 0;   // the call's STRING_KIND_API_NAME id, when the evidence was a call
  uint32_t warmup_range_name_id = 0;  // the range's STRING_KIND_HOST_RANGE_NAME id, when a range
  // The engine's own label id of a sampled stack's compiler frame, when the evidence was a Python
  // sample (device_idle.h); 0 when not.
  uint32_t warmup_sample_label_id = 0;
  bool warmup_first_launch = false;   // the evidence was the first launch of `after`'s kernel
  // Set by the diagnosis: the gap lies in the process's own first step, all of it warm-up; and how
  // much of the gap the diagnosis counted as warm-up (docs/analysis.md, "Stalls and warm-up").
  bool warmup_first_step = false;
  uint64_t warmup_ns = 0;
};

// The longest blocking copy that waited behind a stream wait (DeviceAnalysis::copy_wait_ns), with
// what the recording shows of what it waited for. Where the source names the wait's event (a
// trace's cuda_sync record: event_named), the event record is that one; else it is the latest
// event record call in the window before the wait. No record call in the window means the event
// was recorded before the window (or by a process the trace does not hold).
struct CopyWait {
  uint64_t wait_ns = 0;  // the copy call's time in the gap, moved from sync_copy to dependency
  uint64_t copy_enter_ns = 0;
  uint64_t bytes = 0;    // the copy's own size (0: not given)
  uint32_t thread_id = 0;
  uint32_t copy_api_name_id = 0;
  std::string copy_api_name;  // filled at the end, as GapCall's
  uint64_t stream_wait_ns = 0;  // when the stream-wait call that queued before it was made
  uint32_t wait_api_name_id = 0;
  std::string wait_api_name;
  bool event_named = false;  // the source named the wait's event: its record's correlation id and stream
  uint64_t event_record_correlation_id = 0;
  uint64_t event_record_stream = 0;  // 0: not known
  bool event_record_seen = false;  // the record call (named, or the latest before the wait) is in the window
  uint64_t event_record_ns = 0;
  uint32_t event_record_thread = 0;
  uint32_t event_record_api_name_id = 0;
  std::string event_record_api_name;
};

struct DeviceAnalysis {
  uint32_t device = 0;
  uint64_t window_start_ns = 0, window_end_ns = 0;  // first activity start, last activity end
  uint64_t leading_ns = 0;                          // process (or recording) start to window start
  uint64_t busy_ns = 0;                             // union of kernel, memcpy and memset intervals
  uint64_t idle_ns = 0;                             // window - busy
  double idle_fraction = 0;
  uint64_t kernels = 0, memcpys = 0, memsets = 0;
  GapHistogram gaps;
  std::array<uint64_t, kIdleCauseCount> idle_by_cause_ns{};  // sums to idle_ns
  // host_cpu time by what the host was doing: sums to idle_by_cause_ns[host_cpu].
  std::array<uint64_t, kHostPartCount> host_cpu_by_part_ns{};
  // Each part's time by name (top_n, most time first): the input range, the outermost op, the
  // innermost annotation; from samples, the Python line (python_frame_rules.h). None for unknown.
  std::array<std::vector<HostLabel>, kHostPartCount> host_part_labels;
  // What split host_cpu into parts, and how many Python samples covered some of this device's
  // host_cpu time (each counted once, however many gaps it covered).
  HostEvidence host_evidence = HostEvidence::kNone;
  uint64_t python_samples = 0;
  // Unknown host time in gaps of kLongGapNs or more (the rest is in shorter gaps): the shape the
  // diagnosis reports beside it, as a hint of what it may be, never as its cause.
  uint64_t unknown_host_in_long_gaps_ns = 0;
  // host_cpu gaps of AnalysisOptions::long_host_gap_ns or more whose ending launch carries a
  // Python stack, by the site a report names (most host time first, top_n), and how many such
  // gaps there were in all (with a stack or without).
  std::vector<HostReturnSite> long_host_gap_sites;
  uint64_t long_host_gaps = 0;
  uint64_t after_sync_ns = 0;  // idle in gaps that began when a host sync returned
  // Added for the diagnosis (docs/analysis.md, "Diagnosis"). A diagnosis that finds them all 0
  // while after_sync_ns > 0 estimates them instead (an engine that does not fill them yet).
  uint64_t after_sync_gaps = 0;                                    // gaps flagged after_sync
  std::array<uint64_t, kIdleCauseCount> after_sync_by_cause_ns{};  // their idle by cause
  std::array<uint64_t, kHostPartCount> after_sync_host_by_part_ns{};  // their host_cpu time by part
  // Idle with evidence of compilation or first-time work (IdleGap::warmup_by_cause_ns summed over
  // every gap): the diagnosis's warm-up, whatever the gaps' lengths. Parts of idle_by_cause_ns
  // and host_cpu_by_part_ns; the after_sync_ ones, of the after-sync gaps' own.
  std::array<uint64_t, kIdleCauseCount> warmup_by_cause_ns{};
  std::array<uint64_t, kHostPartCount> warmup_host_by_part_ns{};
  std::array<uint64_t, kIdleCauseCount> after_sync_warmup_by_cause_ns{};
  std::array<uint64_t, kHostPartCount> after_sync_warmup_host_by_part_ns{};
  // Sum over after_sync gaps [g0, g1) of min(g1 - g0, B), B the longest blocked time (exit - enter)
  // of a blocked call that returned in [g0, g1) on the gap's thread T (the one that queued the
  // activity ending the gap; any thread when T is unknown): the idle the host could have hidden
  // had it not waited, since it would have done the gap's host work during the wait while the
  // device still ran what was queued. Longest, not the drainer's: item() is a pageable copy that
  // waits for the queue (260 us in sync-bound), then a stream sync that finds it empty (1 us); the
  // copy's wait is what could be hidden, whichever of the two the after_sync rule names.
  uint64_t after_sync_hideable_ns = 0;
  // Kernels, copies and memsets whose queuing call is not in the recording (a trace without
  // cuda_driver events misses driver-only launches: NCCL's, Triton's); their gaps take the
  // in-no-call rule (docs/analysis.md).
  uint64_t work_without_call = 0;
  // Launch overhead split by gap length (ARCHITECTURE.md's launch-bound loop is many short gaps):
  // the launch_overhead time of gaps of kLongGapNs or more (the thread sat in one slow launch,
  // copy or event call: a one-time stall, not overhead per kernel), and how many shorter gaps had
  // any launch_overhead time.
  uint64_t launch_overhead_long_gaps_ns = 0;
  uint64_t launch_overhead_short_gaps = 0;
  // Idle with one-time evidence (docs/analysis.md, "First pass and steady state"): per gap of
  // kLongGapNs or more, its warm-up time (warmup_by_cause_ns), or, where the gap ends at a
  // kernel's first run on the device and the thread sat mostly in CUDA calls, those calls' time
  // (a library's set-up inside an op's first call: cuDNN's cudaFree).
  uint64_t one_time_ns = 0;
  uint64_t cuda_api_in_syncs_ns = 0;  // IdleGap::cuda_api_in_syncs_ns summed
  uint64_t first_runs = 0;  // kernels that were the first run of their name on the device
  // Blocking copies and memsets that waited for an event, not for their transfer: in a gap of
  // kLongGapNs or more, the call that queued the work ending the gap held the gap's sync_copy time,
  // ten times or more what its own transfer took, and its thread's previous call that queued in
  // stream order was a stream-wait-event call on the copy's stream. That time is `dependency`,
  // not `sync_copy`.
  uint64_t copy_wait_ns = 0;
  uint64_t copy_waits = 0;
  CopyWait longest_copy_wait;  // whole window, like longest_gaps (wait_ns 0: none)
  // The first pass: the window's start up to the end of the last gap with one-time evidence that
  // settles it (DeviceIdleStage picks it; the rule is in docs/analysis.md). Its counters are this
  // struct's as they stood then (window_end_ns = where the first pass ends; no lists: streams,
  // labels, gaps and sites are the whole window's). Null: the window has no first pass, all of it
  // is steady state. Shared, as reports copy devices whole and never change it.
  std::shared_ptr<const DeviceAnalysis> first_pass;
  std::vector<StreamIdle> streams;
  std::vector<IdleGap> longest_gaps;  // top_n by length
};

struct CallSite {
  // The user's Python line ("train.py:142 in train_step", with the library frame it went through)
  // when the calls carry Python stacks, else the symbolised native caller, or "(not recorded)".
  std::string name;
  uint64_t count = 0, total_ns = 0;  // calls, and their blocked time
  uint64_t idle_after_ns = 0;        // device idle in the after_sync gaps these calls drained
  uint32_t python_stack_id = 0;      // one of its calls' whole stack (the costliest), 0 = none
  std::vector<PythonFrame> python_stack;  // that stack, innermost first
};


// A device-to-host copy this small is a read of a value (a loss, a metric, a flag), not data: 64
// KiB is a few thousand floats, and a pageable copy of it takes a few microseconds, far less than
// the wait for the queue that comes with it.
inline constexpr uint64_t kSmallReadBytes = 64 * 1024;

struct SyncTypeStats {
  SyncPointKind kind = SyncPointKind::kOther;
  uint64_t count = 0;
  uint64_t total_ns = 0;           // blocked time: waiting for device work (docs/analysis.md)
  uint64_t p50_ns = 0, p99_ns = 0;
  uint64_t idle_after_ns = 0;      // device idle in the gaps these calls drained (after_sync by type)
  // Copies to the host of at most kSmallReadBytes: what .item(), .cpu() or .tolist() of a loss
  // or a metric do. Their cost is the wait for the queue, not the copy, so their fix is to read
  // less often, not to pin memory.
  uint64_t small_reads = 0;
  // Query polling only (else 0): the polls of all its loops, and the loops' time, from each loop's
  // first poll's entry to the exit of the poll that saw the work done.
  uint64_t polls = 0;
  uint64_t polling_ns = 0;
  std::vector<CallSite> top_call_sites;
};

struct LaunchStats {  // HTA's get_cuda_kernel_launch_stats definitions, plus gapwatch's own
  uint64_t launches = 0;                 // launch calls joined to a device activity (graph launches included)
  uint64_t graph_launches = 0;           // of them, graph launches (joined to the graph's first kernel)
  uint64_t graph_kernels = 0;            // kernels run by graph launches
  uint64_t captured_calls = 0;           // launches, async copies... made inside a stream capture
  uint64_t api_total_ns = 0, api_p50_ns = 0, api_p99_ns = 0;
  uint64_t launch_delay_mean_ns = 0, launch_delay_p50_ns = 0, launch_delay_p99_ns = 0;  // clipped at 0
  uint64_t short_kernels = 0;            // api <= runtime cutoff and device time < api time
  uint64_t runtime_outliers = 0;         // api > runtime cutoff
  uint64_t launch_delay_outliers = 0;    // delay > launch-delay cutoff
  uint64_t kernels_under_20us = 0;
  double launches_per_second = 0;        // over the device window
  uint64_t queue_depth_max = 0, queue_depth_p99 = 0;  // launched, not yet finished (time-weighted p99)
  GapHistogram host_launch_gaps;         // per thread: a launch call's return to the next launch call
};

// One kernel name's device time (analysis/kernel_stats.h).
struct KernelStats {
  std::string name;                  // as recorded (demangled by CUPTI or Kineto)
  uint64_t count = 0;
  uint64_t total_ns = 0;             // summed durations (overlapping kernels both count)
  uint64_t median_ns = 0;            // within 2 % (a log-linear histogram; exact when all are equal)
  uint64_t min_ns = 0, max_ns = 0;
  double busy_share = 0;             // total_ns / the process's busy time (summed over devices)
  uint64_t under_20us = 0;           // runs shorter than 20 us
  uint64_t shorter_than_launch = 0;  // runs shorter than the launch call that queued them
  bool short_kernel = false;         // most runs under 20 us, or shorter than their launch call

  uint64_t meanNs() const { return count ? total_ns / count : 0; }
};

struct KernelTable {
  uint64_t kernels = 0;              // kernel runs of positive length
  uint64_t distinct = 0;             // distinct names
  uint64_t total_ns = 0;             // summed kernel durations
  uint64_t busy_ns = 0;              // union of kernels, copies and memsets, summed over devices
  std::vector<KernelStats> top_by_time;    // top_n by total_ns
  std::vector<KernelStats> short_by_count; // top_n short kernels by count
  // Kernel time by what the names show (kernel_class.h), most first; classes without time left out.
  std::vector<std::pair<std::string, uint64_t>> by_class;  // kernelClassKey -> summed durations
  uint64_t fp32_convolution_ns = 0;  // of the convolutions', names that say FP32 (scudnn, sgemm)
  uint64_t inductor_ns = 0;          // kernels Inductor generated (names "triton_..."): compiled code
};

struct NcclTypeStats {
  std::string op;  // "all_reduce", ...
  uint64_t calls = 0, bytes = 0, host_ns = 0;
  uint64_t kernels = 0, device_ns = 0;
};

// Whether a type's bytes are known: a trace's c10d annotations (nccl:*) and older
// record_param_comms ranges carry no size, so their 0 is "not in the trace", never a count.
inline bool ncclBytesKnown(const NcclTypeStats& t, bool kineto_trace) { return !(kineto_trace && t.bytes == 0 && t.calls > 0); }

struct NcclStats {
  std::vector<NcclTypeStats> by_type;
  uint64_t comm_ns = 0;                  // union of NCCL kernel intervals
  double comm_share_of_busy = 0;
  double compute_comm_overlap = 0;       // HTA: compute time during communication / communication time
};

// Step time over the run, for a plot: consecutive steps in order, each point the mean of
// `steps` consecutive steps (1 until the run has more steps than kMaxPoints, then 2, 4, ...).
struct StepPoint {
  uint64_t start_ns = 0;  // the first of its steps' start
  uint32_t steps = 0;
  uint64_t mean_ns = 0;
  double idle_fraction = 0;  // of the points' steps together
};

// Fewer steps than this make per-step figures (median, percentiles, per-step idle) rough, and the
// report says so beside them: a profiler's usual schedule records 3.
inline constexpr uint64_t kFewSteps = 5;

struct StepStats {
  std::string method;        // "markers", "recurring kernel sequence", "recurring sync point", "none"
  std::string how;           // one sentence: what marks a step
  uint64_t steps = 0;
  uint64_t median_ns = 0, p10_ns = 0, p90_ns = 0;
  double median_idle_fraction = 0;
  std::vector<StepPoint> timeline;  // at most StepTimeline::kMaxPoints points
  // The complete steps' times as a sample, for comparing two runs (analysis/run_diff.h): how many
  // were timed, their mean and their sample standard deviation (n - 1; 0 with fewer than two).
  uint64_t timed_steps = 0;
  double mean_ns = 0, stddev_ns = 0;
  // The first complete step: where a process's own first step (its warm-up) lies, and its number
  // where markers carry one (ProfilerStep#N, STEP_BEGIN's step; 0 when not known). A profiler
  // window that starts at ProfilerStep#5 skipped the job's warm-up steps.
  uint64_t first_step_start_ns = 0, first_step_end_ns = 0;
  uint64_t first_step_number = 0;
};

struct Finding {              // one cause the diagnosis found, with its evidence and fix
  std::string id;             // "data_pipeline", "launch_overhead", "sync_points", "pageable_copies", "nccl", "warmup"
  std::string title;
  uint64_t idle_ns = 0;       // idle time it explains (ranking key)
  double idle_share = 0;      // of the process's total idle
  std::vector<std::pair<std::string, std::string>> evidence;  // name -> value, as printed
  std::string fix;
  // The user's Python line the finding points at (the line its fix starts at, or where the host
  // came back after long host gaps), "" when the calls carry no Python stacks.
  std::string python_site;
  // Added for `gapwatch report --json`: the evidence as numbers, key -> value. Keys say their
  // unit: *_ns nanoseconds, *_fraction 0..1, *_per_second, *_per_step, else a count
  // (docs/report-json.md).
  std::vector<std::pair<std::string, double>> numbers;
};

// A process that died while it waited (analysis/hang.h): what the recorder's last heartbeat
// showed still in progress, less what later batches show finished.
struct HangCall {
  uint32_t thread_id = 0;
  uint64_t start_ns = 0;
  uint64_t correlation_id = 0;
  std::string api_name;
};
struct UnfinishedKernel {
  uint64_t correlation_id = 0;
  uint64_t launch_ns = 0;
  std::string kernel_name;  // "" = not known
  uint32_t thread_id = 0;
};
struct Hang {
  uint64_t end_ns = 0;  // where the recording ends: its last heartbeat or event
  std::vector<HangCall> calls;
  std::vector<UnfinishedKernel> kernels;  // the oldest first
};

// HTA's view of one process (`report --hta`): HTA's temporal breakdown, idle time per stream and
// launch statistics, computed with HTA's conventions where they change numbers (the last-step
// cut, whole-microsecond rounding, kernel classes by name; docs/hta-parity.md). Times are whole
// microseconds, HTA's unit, because HTA rounds every start up and every end down to one.
struct HtaStreamIdle {
  int64_t stream = 0;
  // HTA lists host_wait and kernel_wait only when they occur, and other always.
  bool has_host_wait = false, has_kernel_wait = false;
  // Sums of gaps to the previous record's end, which HTA takes as they are: negative where
  // records on a stream overlap.
  int64_t host_wait_us = 0, kernel_wait_us = 0, other_us = 0;
};

struct HtaView {
  HtaRelease release = HtaRelease::k0_6_1;  // whose rules
  uint32_t profiler_steps = 0;  // distinct ProfilerStep markers (STEP_BEGIN) seen
  // Which GPU work HTA keeps, by the time its CPU call began: "before_last_step_start" (two or
  // more steps), "all" (fewer: released HTA filters nothing).
  std::string cut;
  uint64_t gpu_events = 0;          // kept (kernels, copies, memsets, sync records)
  uint64_t gpu_events_dropped = 0;  // left out by the cut, or (with a step) without a CPU call
  uint64_t kernel_time_us = 0, idle_time_us = 0, non_compute_time_us = 0;
  // Signed as HTA's is: a few compute kernels under a microsecond, each rounded to a length of -1
  // (docs/hta-parity.md, rule 4), make it negative (HTA prints -21 us on the corpus's graph_decode).
  int64_t compute_time_us = 0;
  double idle_time_pctg = 0, compute_time_pctg = 0, non_compute_time_pctg = 0;  // HTA's 2 decimals
  // HTA's non-compute time (kernel time - compute - idle) came out negative: HTA's own
  // get_temporal_breakdown raises an AssertionError on this trace (it asserts it is >= 0). It
  // happens when records under a microsecond round to a length of -1 (docs/hta-parity.md, rule 4)
  // and fall differently into the merged intervals of all work and of computation. The figures
  // above are then what HTA computed before the assertion, non-compute shown as 0.
  bool hta_asserts_non_compute = false;
  std::vector<HtaStreamIdle> idle_breakdown;  // by stream number
  uint64_t launches = 0, short_kernels = 0, runtime_outliers = 0, launch_delay_outliers = 0;
  double mean_launch_delay_us = 0;
  std::optional<double> comm_comp_overlap_pctg;  // null without communication kernels
};

// What produced a process's stream (Hello.source) and, for a PyTorch profiler trace, what the
// trace cannot tell. The words for each are tools/'s (docs/usage.md, "A report of a trace says
// what the trace does not hold").
struct RecordingSource {
  bool kineto_trace = false;  // Hello.source == STREAM_SOURCE_KINETO_TRACE
  uint32_t trace_schema_version = 0;  // the trace's schemaVersion
  // The profiler's own host events (a trace only): python_function and cpu_op events, and the
  // host time they span.
  uint64_t trace_python_events = 0, trace_cpu_ops = 0, trace_host_span_ns = 0;
  uint64_t sync_records = 0;  // cuda_sync activity records (without them a stream sync is an upper bound)
  // A trace only: what it does not hold, as keys (kNotInTrace*), in a fixed order.
  std::vector<std::string> not_in_trace;
};
inline constexpr const char* kNotInTraceProcessStart = "process_start";  // leading (start-up) time
inline constexpr const char* kNotInTraceProcessEnd = "process_end";      // how it ended, exit status
inline constexpr const char* kNotInTraceDrops = "drops";                 // Kineto counts no lost records
inline constexpr const char* kNotInTraceCallSites = "call_sites";
inline constexpr const char* kNotInTraceBlockedFlags = "blocked_flags";  // copies: from names, not measured
inline constexpr const char* kNotInTraceSyncRecords = "sync_records";    // sync waits are upper bounds
inline constexpr const char* kNotInTraceNcclHostCalls = "nccl_host_calls";  // NCCL's own calls (c10d ranges at most)
inline constexpr const char* kNotInTraceHeartbeats = "heartbeats";        // no hang detection

struct ProcessAnalysis {
  uint32_t pid = 0;
  std::string host;
  std::optional<int32_t> rank;
  std::vector<std::string> probes;
  std::string cupti_unavailable;
  uint32_t cupti_version = 0;    // what the libcupti reported (Hello), 0 when none was loaded
  bool device_timeline = true;   // false in symbol-only mode: host-side numbers only
  bool truncated = false;
  uint64_t late_events = 0;      // arrived after the reordering window had closed past them
  uint64_t window_events = 0;    // every event the engine was given, late ones included
  uint64_t events_dropped = 0, cupti_records_dropped = 0;
  uint64_t cupti_records_incomplete = 0;  // handed back unfinished by a forced flush, not recorded
  // Calls recorded with their thread's Python stack, and the calls that were to carry one but
  // did not (DROP_SOURCE_PYTHON_STACK), in all and by reason (pythonStackMissReason).
  uint64_t python_stacks = 0, python_stack_misses = 0;
  std::vector<std::pair<std::string, uint64_t>> python_stack_misses_by_reason;
  // The Python sampler (Hello.probes: python_sampler) ran; the samples the recording holds
  // (unreadable ones, stack id 0, included), and those the recorder could not read or keep
  // (DROP_SOURCE_PYTHON_SAMPLE: the unreadable ones again, and those it dropped).
  bool python_sampler = false;
  uint64_t python_samples = 0, python_sample_misses = 0;
  // Spans in which another client used CUPTI's activity API: shared (gapwatch's records are
  // complete) or blind (device records missing). An open span ends where the recording does.
  std::vector<ActivityApiSpan> activity_api_spans;
  std::vector<DeviceAnalysis> devices;
  std::vector<SyncTypeStats> sync_points;
  LaunchStats launches;
  KernelTable kernels;
  NcclStats nccl;
  StepStats steps;
  std::vector<Finding> findings;  // ranked by idle_ns
  // Observations with a fix whose idle time does not pass the finding threshold (often none at
  // all): communication that does not overlap compute, a long start-up. Never ranked among the
  // findings, never in the verdict.
  std::vector<Finding> notes;
  // Where the steady state is GPU-bound (diagnose(): its idle under gpu_bound_max_idle of its
  // window): what its busy time goes to and the usual lever. Not a finding: it explains no idle
  // time, and `findings` stay the causes of idle.
  std::optional<Finding> bottleneck;
  std::optional<Hang> hang;  // the process died inside a call or with work unfinished
  std::optional<HtaView> hta;  // only with AnalysisOptions::hta_view
  RecordingSource source;
};

struct RankWait {        // across ranks: whom the others waited for in collectives
  int32_t rank = -1;
  uint64_t waited_for_ns = 0;  // time other ranks' NCCL kernels ran before this rank's started
  uint64_t collectives_last = 0;  // collectives in which this rank arrived last
  uint64_t waited_ns = 0;  // this rank's own wait: the last rank's start - its start, summed
  // The arrival data the straggler test reads (docs/analysis.md, "Across ranks"), kept as a few
  // numbers per rank rather than per collective:
  uint64_t collectives = 0;   // collectives it took part in in which some rank waited
  double expected_last = 0;   // over those, the sum of 1/(ranks in the collective): its share by chance
  // Its lateness in each collective it took part in: its kernel's start - the median of the other
  // ranks' starts (negative: it arrived early).
  uint64_t lateness_collectives = 0;  // how many (the collectives it took part in)
  double lateness_mean_ns = 0;
  // The test's view of the mean: the collectives in kStragglerBatches runs of consecutive ones,
  // or in pairs below 2 x kStragglerBatches of them (batch means, so that collectives of one step,
  // whose lateness goes together, are not taken for independent evidence); the standard error of
  // the mean from the batches' spread, and the batch count (0 under kStragglerMinCollectives
  // collectives: too few to test).
  double lateness_se_ns = 0;
  uint32_t lateness_batches = 0;
  int64_t lateness_median_ns = 0;  // and, to read beside the mean: the median,
  uint64_t lateness_mad_ns = 0;    // and the median absolute deviation from it
};

// The straggler test (diagnoseAcrossRanks) with its numbers, whether or not it named one. The rank
// the others waited for most is the candidate; it is a straggler when its mean lateness is above 0
// by a one-sided t-test on batch means, Bonferroni-corrected for the choice among the ranks, and
// the others waited for it at least DiagnosisThresholds::straggler_min_window_share of their windows.
struct StragglerTest {
  int32_t rank = -1;              // the candidate
  uint64_t collectives_last = 0;  // collectives it arrived last in...
  uint64_t collectives = 0;       // ... of those it took part in in which some rank waited,
  double expected_last = 0;       // and how many chance alone would give
  uint64_t lateness_collectives = 0;
  uint32_t batches = 0;           // 0: too few collectives to test
  double lateness_mean_ns = 0;
  double lateness_se_ns = 0;
  double t = 0;                   // mean / standard error, batches - 1 degrees of freedom
  double p_value = 1;             // one-sided, times the ranks (Bonferroni), at most 1
  double level = 0;               // the test's level
  int64_t lateness_median_ns = 0;
  uint64_t lateness_mad_ns = 0;
  double others_window_fraction = 0;  // the others' wait for it / their windows
  bool late = false;         // p_value < level: late on average beyond the spread of the collectives
  bool enough_wait = false;  // others_window_fraction >= straggler_min_window_share
  bool named = false;        // both: a straggler finding was made
};

// One job of several ranks, compared (job_groups.h): whom its ranks waited for in collectives,
// and what that says. A report of several jobs has one of these per job of two processes or more,
// never one across jobs: their clocks, ranks and windows are not one run's.
struct RankComparison {
  std::vector<std::size_t> processes;  // the job's processes, indices into AnalysisReport::processes
  std::vector<RankWait> rank_waits;    // empty when they shared no collective
  std::vector<Finding> findings;       // across these ranks (diagnoseAcrossRanks), ranked by idle_ns
  std::optional<StragglerTest> straggler_test;  // diagnoseAcrossRanks; none without waits

  bool has(std::size_t process) const {
    return std::find(processes.begin(), processes.end(), process) != processes.end();
  }
};

struct AnalysisReport {
  static constexpr int kJsonVersion = 1;
  AnalysisOptions options;
  std::vector<ProcessAnalysis> processes;
  // The processes given together as jobs (job_groups.h): process indices, and what split them
  // ("" for one job). A report built by hand, or by a caller that does not group, has no `jobs`.
  std::vector<std::vector<std::size_t>> jobs;
  std::string jobs_why;
  // One per job of two processes or more, in the order of `jobs`.
  std::vector<RankComparison> rank_comparisons;

  // The ranks of a report of one job: its comparison's processes, or every process of a report
  // not grouped into jobs (built by hand: all are one job's).
  std::vector<std::size_t> ranksOfOneJob() const {
    if (!rank_comparisons.empty()) return rank_comparisons.front().processes;
    std::vector<std::size_t> all(processes.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }

  // The comparison process `process` is a rank of; null when its job is itself alone.
  const RankComparison* comparisonOf(std::size_t process) const {
    for (const RankComparison& c : rank_comparisons) {
      if (c.has(process)) return &c;
    }
    return nullptr;
  }
};

// The collectives' waits of process `index` of `report`, when it is a rank of a compared job.
inline const RankWait* rankWaitOf(const AnalysisReport& report, std::size_t index) {
  const RankComparison* comparison = report.comparisonOf(index);
  if (!comparison || !report.processes[index].rank) return nullptr;
  for (const RankWait& w : comparison->rank_waits) {
    if (w.rank == *report.processes[index].rank) return &w;
  }
  return nullptr;
}

}  // namespace gapwatch::analysis
