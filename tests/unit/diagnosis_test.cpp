// tests/unit/diagnosis_test.cpp: the diagnosis on hand-built analyses: each finding appears above
// its threshold and not below, a healthy run has none, findings are ranked by the idle they
// explain, that idle adds up to the device's idle, and no finding comes without numbers and a fix.
#include "analysis/diagnosis.h"
#include "analysis/sync_advice.h"

#include "analysis/cross_rank.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

using namespace gapwatch;
using namespace gapwatch::analysis;

namespace {

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kWindow = 100 * kMs;

std::size_t at(IdleCause cause) { return static_cast<std::size_t>(cause); }

// A process with one device whose 100 ms window has the given idle time, split by cause, and
// `gaps` gaps of equal length making up that idle time.
ProcessAnalysis processWith(std::array<uint64_t, kIdleCauseCount> by_cause, uint64_t gaps = 10) {
  ProcessAnalysis p;
  p.pid = 42;
  p.rank = 0;
  p.probes = {"cupti_activity"};
  DeviceAnalysis d;
  d.window_start_ns = 1'000 * kMs;
  d.window_end_ns = d.window_start_ns + kWindow;
  d.leading_ns = 5 * kMs;
  d.idle_by_cause_ns = by_cause;
  // No host events: all host time is unknown (tests that need another split set it themselves).
  d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kUnknown)] = by_cause[at(IdleCause::kHostCpu)];
  for (uint64_t ns : by_cause) d.idle_ns += ns;
  d.busy_ns = kWindow - d.idle_ns;
  d.idle_fraction = static_cast<double>(d.idle_ns) / kWindow;
  d.kernels = 1000;
  for (uint64_t i = 0; i < gaps && d.idle_ns > 0; ++i) d.gaps.add(d.idle_ns / gaps);
  // As the engine splits launch overhead: gaps of 1.024 ms or more hold a slow call's, shorter
  // ones count as gaps that carry some.
  const uint64_t launch = by_cause[at(IdleCause::kLaunchOverhead)];
  if (launch > 0 && gaps > 0 && d.idle_ns / gaps >= kLongGapNs) {
    d.launch_overhead_long_gaps_ns = launch;
  } else if (launch > 0) {
    d.launch_overhead_short_gaps = gaps;
  }
  p.devices.push_back(d);
  for (std::size_t k = 0; k < kSyncPointKindCount; ++k) {
    SyncTypeStats s;
    s.kind = static_cast<SyncPointKind>(k);
    p.sync_points.push_back(s);
  }
  return p;
}

std::array<uint64_t, kIdleCauseCount> only(IdleCause cause, uint64_t ns) {
  std::array<uint64_t, kIdleCauseCount> by_cause{};
  by_cause[at(cause)] = ns;
  return by_cause;
}

std::vector<std::string> ids(const ProcessAnalysis& p) {
  std::vector<std::string> out;
  for (const Finding& f : p.findings) out.push_back(f.id);
  return out;
}

bool hasFinding(const ProcessAnalysis& p, const std::string& id) {
  const auto all = ids(p);
  return std::find(all.begin(), all.end(), id) != all.end();
}

const Finding& finding(const ProcessAnalysis& p, const std::string& id) {
  for (const Finding& f : p.findings) {
    if (f.id == id) return f;
  }
  FAIL("no finding " << id);
  static Finding none;
  return none;
}

bool hasNumber(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.numbers) {
    if (k == key) return true;
  }
  return false;
}

double number(const Finding& f, const std::string& key) {
  for (const auto& [k, v] : f.numbers) {
    if (k == key) return v;
  }
  FAIL("finding " << f.id << " has no number " << key);
  return 0;
}

ProcessAnalysis diagnosed(ProcessAnalysis p) {
  diagnose(p, AnalysisOptions{});
  return p;
}

// Makes `ns` of the device's idle follow a sync, with the given hideable part, drained by `kind`.
void afterSync(ProcessAnalysis& p, IdleCause cause, uint64_t ns, uint64_t hideable_ns, uint64_t gaps,
               SyncPointKind kind = SyncPointKind::kStreamSync) {
  DeviceAnalysis& d = p.devices.front();
  d.after_sync_ns += ns;
  d.after_sync_gaps += gaps;
  d.after_sync_by_cause_ns[at(cause)] += ns;
  d.after_sync_hideable_ns += hideable_ns;
  SyncTypeStats& s = p.sync_points[static_cast<std::size_t>(kind)];
  s.count += gaps;
  s.total_ns += hideable_ns;
  s.p50_ns = gaps ? hideable_ns / gaps : 0;
  s.idle_after_ns += ns;
}

}  // namespace

TEST_CASE("a healthy run has no finding and says so") {
  // The shipped healthy scenario: 0.2 % idle, mostly host_cpu.
  std::array<uint64_t, kIdleCauseCount> causes{};
  causes[at(IdleCause::kHostCpu)] = 160 * kUs;
  causes[at(IdleCause::kLaunchOverhead)] = 30 * kUs;
  causes[at(IdleCause::kSyncCopy)] = 10 * kUs;
  ProcessAnalysis p = diagnosed(processWith(causes, 6));
  CHECK(p.findings.empty());
  CHECK(verdict(p) == "GPU idle 0.2% of the time; no cause of idle time passes its threshold");
}

TEST_CASE("each cause becomes a finding above the threshold and not below") {
  // 5 % of the 100 ms window is the threshold: 6 ms passes, 4 ms does not.
  const struct {
    IdleCause cause;
    const char* finding;
  } cases[] = {{IdleCause::kHostCpu, kFindingHostUnknown},     {IdleCause::kSyncCopy, kFindingPageableCopies},
               {IdleCause::kLaunchOverhead, kFindingLaunchOverhead}, {IdleCause::kNcclHost, kFindingNccl},
               {IdleCause::kCudaApi, kFindingCudaApi},           {IdleCause::kDependency, kFindingDependency}};
  for (const auto& c : cases) {
    INFO(c.finding);
    // 100 gaps: launch overhead is a finding only from many short gaps.
    const ProcessAnalysis above = diagnosed(processWith(only(c.cause, 6 * kMs), 100));
    REQUIRE(ids(above) == std::vector<std::string>{c.finding});
    CHECK(above.findings[0].idle_ns == 6 * kMs);
    CHECK(above.findings[0].idle_share == Approx(1.0));
    CHECK(causeOfFinding(c.finding) == idleCauseName(c.cause));
    CHECK(diagnosed(processWith(only(c.cause, 4 * kMs))).findings.empty());
  }
}

TEST_CASE("the threshold is a share of the window, at exactly 5 %") {
  CHECK(hasFinding(diagnosed(processWith(only(IdleCause::kHostCpu, 5 * kMs))), kFindingHostUnknown));
  CHECK_FALSE(hasFinding(diagnosed(processWith(only(IdleCause::kHostCpu, 5 * kMs - 1))), kFindingHostUnknown));
  DiagnosisThresholds strict;
  strict.min_window_share = 0.10;
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 6 * kMs));
  diagnose(p, AnalysisOptions{}, strict);
  CHECK(p.findings.empty());
}

TEST_CASE("findings are ranked by the idle time each explains, and the verdict names the first") {
  std::array<uint64_t, kIdleCauseCount> causes{};
  causes[at(IdleCause::kLaunchOverhead)] = 10 * kMs;
  causes[at(IdleCause::kHostCpu)] = 50 * kMs;
  causes[at(IdleCause::kSyncCopy)] = 20 * kMs;
  // 200 gaps of 400 us: the launch overhead comes from many short gaps.
  ProcessAnalysis p = diagnosed(processWith(causes, 200));
  // The host between kernels is one cause: its unknown host time and its launch overhead are one
  // finding, titled by the larger.
  CHECK(ids(p) == std::vector<std::string>{kFindingHostUnknown, kFindingPageableCopies});
  CHECK(p.findings[0].idle_share == Approx(60.0 / 80.0));
  CHECK(number(p.findings[0], "host_bound_launch_ns") == 10 * kMs);
  CHECK(verdict(p) == "GPU idle 80.0% of the time; 75% of it in host work outside CUDA calls, of unknown kind (no host "
                      "events); up to 5.00x faster if the GPU never waited");
}

TEST_CASE("what the analysis left out is in the verdict line itself, not only in a note below") {
  std::array<uint64_t, kIdleCauseCount> causes{};
  causes[at(IdleCause::kHostCpu)] = 50 * kMs;
  ProcessAnalysis p = diagnosed(processWith(causes, 200));
  const std::string whole = verdict(p);
  CHECK(whole.find("left out") == std::string::npos);
  // A live recording whose events came too late to place (the window is a live stream's), and
  // events the recorder dropped.
  p.window_events = 70000;
  p.late_events = 15522;
  CHECK(verdict(p) == whole + "; 15,522 of 70,000 events (22.2%) left out: they came after the reordering window "
                              "had passed their time");
  p.cupti_records_dropped = 12;
  CHECK(verdict(p).find("; 12 events dropped by the recorder are not in these numbers") != std::string::npos);
}

TEST_CASE("the findings' idle adds up to the device's idle, each nanosecond explained once") {
  std::array<uint64_t, kIdleCauseCount> causes{};
  causes[at(IdleCause::kHostCpu)] = 31 * kMs;
  causes[at(IdleCause::kLaunchOverhead)] = 7 * kMs;
  causes[at(IdleCause::kSyncCopy)] = 3 * kMs;
  causes[at(IdleCause::kCudaApi)] = 1 * kMs;
  causes[at(IdleCause::kNcclHost)] = 2 * kMs;
  causes[at(IdleCause::kDependency)] = 1 * kMs;
  ProcessAnalysis p = processWith(causes, 100);  // short gaps: their launch overhead is the sync's to take
  afterSync(p, IdleCause::kHostCpu, 20 * kMs, 12 * kMs, 40);
  afterSync(p, IdleCause::kLaunchOverhead, 4 * kMs, 4 * kMs, 40);
  const IdleExplanation x = explainIdle(p);
  const uint64_t sum = x.host_part_ns[0] + x.host_part_ns[1] + x.host_part_ns[2] + x.host_part_ns[3] + x.pageable_copies_ns + x.launch_overhead_ns + x.sync_points_ns +
                       x.nccl_ns + x.warmup_ns + x.cuda_api_ns + x.dependency_ns;
  CHECK(x.idle_ns == 45 * kMs);
  CHECK(sum <= x.idle_ns);
  CHECK(sum + 2 >= x.idle_ns);  // rounding of the proportional split, at most a nanosecond per cause
  CHECK(x.sync_points_ns == 16 * kMs);
}

TEST_CASE("syncs explain the idle the host could have hidden, not the whole after-sync idle") {
  SECTION("short host work after each sync (sync-bound): the sync is the cause") {
    // 240 item() calls, each followed by ~90 us of Python with more than that queued before it.
    std::array<uint64_t, kIdleCauseCount> causes{};
    causes[at(IdleCause::kHostCpu)] = 22 * kMs;
    causes[at(IdleCause::kLaunchOverhead)] = 5 * kMs;
    ProcessAnalysis p = processWith(causes, 250);
    afterSync(p, IdleCause::kHostCpu, 19 * kMs, 19 * kMs, 200, SyncPointKind::kPageableAsyncCopy);
    afterSync(p, IdleCause::kLaunchOverhead, 4 * kMs, 4 * kMs, 40, SyncPointKind::kPageableAsyncCopy);
    diagnose(p, AnalysisOptions{});
    REQUIRE_FALSE(p.findings.empty());
    CHECK(p.findings[0].id == kFindingSyncPoints);
    CHECK(p.findings[0].idle_ns == 23 * kMs);
    CHECK(number(p.findings[0], "after_sync_gaps") == 240);
    CHECK_FALSE(hasFinding(p, kFindingHostUnknown));  // 3 ms of host_cpu left: under 5 %
    CHECK(causeOfFinding(kFindingSyncPoints) == "after_sync");
  }
  SECTION("long host work after a short sync (data-bound): the host work is the cause") {
    ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 80 * kMs), 11);
    afterSync(p, IdleCause::kHostCpu, 80 * kMs, 15 * kMs, 11, SyncPointKind::kPageableAsyncCopy);
    diagnose(p, AnalysisOptions{});
    CHECK(ids(p) == std::vector<std::string>{kFindingHostUnknown, kFindingSyncPoints});
    CHECK(finding(p, kFindingHostUnknown).idle_ns == 65 * kMs);
    CHECK(finding(p, kFindingSyncPoints).idle_ns == 15 * kMs);
  }
  SECTION("a blocking copy after a sync stays the copies' finding") {
    ProcessAnalysis p = processWith(only(IdleCause::kSyncCopy, 40 * kMs), 2000);
    afterSync(p, IdleCause::kSyncCopy, 40 * kMs, 30 * kMs, 2000, SyncPointKind::kPageableAsyncCopy);
    diagnose(p, AnalysisOptions{});
    CHECK(ids(p) == std::vector<std::string>{kFindingPageableCopies});
  }
  SECTION("hideable idle under the threshold makes no sync finding") {
    ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 30 * kMs), 11);
    afterSync(p, IdleCause::kHostCpu, 30 * kMs, 4 * kMs, 11);
    diagnose(p, AnalysisOptions{});
    CHECK(ids(p) == std::vector<std::string>{kFindingHostUnknown});
  }
  SECTION("without the engine's per-gap numbers the split is estimated from the histogram, and says so") {
    ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 24 * kMs), 240);  // 100 us gaps
    DeviceAnalysis& d = p.devices.front();
    d.after_sync_ns = 24 * kMs;  // flagged, but no per-gap details
    SyncTypeStats& s = p.sync_points[static_cast<std::size_t>(SyncPointKind::kStreamSync)];
    s.count = 240;
    s.p50_ns = 260 * kUs;  // each sync waited longer than the gap after it
    s.idle_after_ns = 24 * kMs;
    const IdleExplanation x = explainIdle(p);
    CHECK(x.after_sync_estimated);
    CHECK(x.sync_points_ns == 24 * kMs);
    diagnose(p, AnalysisOptions{});
    REQUIRE(ids(p) == std::vector<std::string>{kFindingSyncPoints});
    bool says_estimated = false;
    for (const auto& [name, value] : p.findings[0].evidence) {
      says_estimated = says_estimated || value.find("estimated") != std::string::npos;
    }
    CHECK(says_estimated);
  }
}

// warmup-recompile: 17 data gaps of ~1.5 ms and two recompiles of 71 and 91 ms, all host time
// that no range names; `loads_code`: the recompiles' gaps hold a module load (Triton's
// cuModuleLoadData), the evidence of a compile.
static ProcessAnalysis recompileLike(bool loads_code) {
  std::array<uint64_t, kIdleCauseCount> causes{};
  causes[at(IdleCause::kHostCpu)] = 17 * 1500 * kUs + 162 * kMs;
  ProcessAnalysis p = processWith(causes, 0);
  DeviceAnalysis& d = p.devices.front();
  d.host_cpu_by_part_ns = {};
  d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kUnknown)] = causes[at(IdleCause::kHostCpu)];
  d.window_end_ns = d.window_start_ns + 360 * kMs;
  d.busy_ns = 360 * kMs - d.idle_ns;
  for (int i = 0; i < 17; ++i) d.gaps.add(1500 * kUs);
  d.gaps.add(71 * kMs);
  d.gaps.add(91 * kMs);
  for (uint64_t length : {91 * kMs, 71 * kMs, 1600 * kUs, 1550 * kUs, 1500 * kUs}) {
    IdleGap gap;
    gap.start_ns = d.window_start_ns + 10 * kMs;
    gap.end_ns = gap.start_ns + length;
    gap.by_cause_ns[at(IdleCause::kHostCpu)] = length;
    gap.host_by_part_ns[static_cast<std::size_t>(HostPart::kUnknown)] = length;
    if (loads_code && length > 10 * kMs) gap.warmup_api_name_id = 7;
    d.longest_gaps.push_back(gap);
  }
  return p;
}

TEST_CASE("a stall is a shape, not a cause: without warm-up evidence its host time is the host's") {
  ProcessAnalysis p = recompileLike(false);
  diagnose(p, AnalysisOptions{});
  REQUIRE_FALSE(p.findings.empty());
  CHECK(p.findings[0].id == kFindingHostUnknown);
  for (const Finding& f : p.findings) CHECK(f.id != kFindingWarmup);
}

TEST_CASE("mid-run stalls that loaded code are compile / warm-up") {
  ProcessAnalysis p = recompileLike(true);
  diagnose(p, AnalysisOptions{});
  REQUIRE_FALSE(p.findings.empty());
  const Finding& f = p.findings[0];
  CHECK(f.id == kFindingWarmup);
  CHECK(f.idle_ns == 162 * kMs);
  CHECK(number(f, "stalls") == 2);
  CHECK(number(f, "warmup_gaps") == 2);
  CHECK(number(f, "typical_long_gap_ns") == 2'048'000);  // the bucket [1.024, 2.048) ms
  CHECK(causeOfFinding(f.id) == "host_cpu");

  SECTION("gaps that are all alike are not stalls, however long") {
    ProcessAnalysis same = processWith(only(IdleCause::kHostCpu, 66 * kMs), 0);
    DeviceAnalysis& s = same.devices.front();
    for (int i = 0; i < 11; ++i) s.gaps.add(6 * kMs);
    for (int i = 0; i < 5; ++i) {
      IdleGap gap;
      gap.end_ns = 6 * kMs;
      gap.by_cause_ns[at(IdleCause::kHostCpu)] = 6 * kMs;
      s.longest_gaps.push_back(gap);
    }
    diagnose(same, AnalysisOptions{});
    CHECK(ids(same) == std::vector<std::string>{kFindingHostUnknown});
  }
}

std::vector<std::string> noteIds(const ProcessAnalysis& p) {
  std::vector<std::string> out;
  for (const Finding& f : p.notes) out.push_back(f.id);
  return out;
}

TEST_CASE("a long start-up explains no idle time: a note, never a finding") {
  constexpr uint64_t kS = 1'000'000'000;
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 1 * kMs));
  p.devices.front().leading_ns = 12 * kS;  // 12 s of start-up before a 100 ms window
  diagnose(p, AnalysisOptions{});
  CHECK(p.findings.empty());
  REQUIRE(noteIds(p) == std::vector<std::string>{kFindingWarmup});
  CHECK(p.notes[0].idle_ns == 0);
  CHECK(number(p.notes[0], "leading_ns") == 12 * kS);
  CHECK(verdict(p) == "GPU idle 1.0% of the time; no cause of idle time passes its threshold, but see the notes");

  p.devices.front().leading_ns = 9 * kS;  // imports and CUDA start-up take seconds: ordinary
  diagnose(p, AnalysisOptions{});
  CHECK(p.findings.empty());
  CHECK(p.notes.empty());

  DeviceAnalysis& d = p.devices.front();  // 20 s before a 100 s window: 17 %
  d.leading_ns = 20 * kS;
  d.window_end_ns = d.window_start_ns + 100 * kS;
  d.busy_ns = 100 * kS - d.idle_ns;
  diagnose(p, AnalysisOptions{});
  CHECK(p.notes.empty());
  d.leading_ns = 40 * kS;  // 29 %
  diagnose(p, AnalysisOptions{});
  CHECK(p.findings.empty());
  CHECK(noteIds(p) == std::vector<std::string>{kFindingWarmup});
}

TEST_CASE("NCCL with no idle in its host calls is a note, however exposed its kernels are") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 1 * kMs));
  p.nccl.comm_ns = 40 * kMs;
  p.nccl.comm_share_of_busy = 0.4;
  p.nccl.compute_comm_overlap = 0.1;
  diagnose(p, AnalysisOptions{});
  CHECK(p.findings.empty());  // 0 ns of nccl_host idle: nothing for a finding to explain
  REQUIRE(noteIds(p) == std::vector<std::string>{kFindingNccl});
  CHECK(p.notes[0].idle_ns == 0);
  CHECK(number(p.notes[0], "comm_share_of_busy_fraction") == Approx(0.4));

  p.nccl.compute_comm_overlap = 0.8;  // hidden behind compute: fine
  diagnose(p, AnalysisOptions{});
  CHECK(p.notes.empty());
  p.nccl.compute_comm_overlap = 0.1;
  p.nccl.comm_share_of_busy = 0.2;  // a small share: fine
  diagnose(p, AnalysisOptions{});
  CHECK(p.notes.empty());

  // With idle in NCCL host calls it is a finding, and not also a note.
  ProcessAnalysis q = processWith(only(IdleCause::kNcclHost, 20 * kMs));
  q.nccl = p.nccl;
  q.nccl.comm_share_of_busy = 0.4;
  diagnose(q, AnalysisOptions{});
  CHECK(ids(q) == std::vector<std::string>{kFindingNccl});
  CHECK(q.notes.empty());
}

TEST_CASE("no finding explains no idle time, or idle under the threshold") {
  // Every cause, each under the threshold and over it, with exposed NCCL and a long start-up
  // beside it: those two are notes, and only idle over the threshold makes a finding.
  for (uint64_t ns : {2 * kMs, 20 * kMs}) {
    for (std::size_t c = 0; c < kIdleCauseCount; ++c) {
      ProcessAnalysis p = processWith(only(static_cast<IdleCause>(c), ns));
      p.nccl.comm_ns = 40 * kMs;
      p.nccl.comm_share_of_busy = 0.5;
      p.nccl.compute_comm_overlap = 0.0;
      p.devices.front().leading_ns = 60'000 * kMs;
      diagnose(p, AnalysisOptions{});
      for (const Finding& f : p.findings) CHECK(f.idle_ns >= 5 * kMs);  // 5 % of the window
      for (const Finding& f : p.notes) CHECK(f.idle_ns < 5 * kMs);
    }
  }
}

// The after-sync finding's fix is that of the types that drained the queue, the first first.
TEST_CASE("the after-sync finding gives the fix of the sync types that drained the queue") {
  struct Case {
    SyncPointKind kind;
    const char* named;      // in the title
    const char* advice;     // a phrase of the fix
    const char* not_said;   // a phrase of another type's fix that must not appear
  };
  const Case cases[] = {
      {SyncPointKind::kDeviceSync, "device synchronize", "torch.cuda.synchronize() out of the step", "pin"},
      {SyncPointKind::kStreamSync, "stream synchronize", "read every N steps", "caching allocator"},
      {SyncPointKind::kEventSync, "event synchronize", "cudaStreamWaitEvent", "caching allocator"},
      {SyncPointKind::kSyncCopy, "synchronous copy", "pinned memory", "caching allocator"},
      {SyncPointKind::kPageableAsyncCopy, "pageable", "pin the host buffers", "caching allocator"},
      {SyncPointKind::kMemset, "memset", "cudaMemsetAsync", "caching allocator"},
      {SyncPointKind::kAllocFree, "malloc", "caching allocator", ".item()"},
      {SyncPointKind::kOther, "other", "call sites", "caching allocator"},
  };
  for (const Case& c : cases) {
    INFO("drained by " << syncPointKey(c.kind));
    ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 30 * kMs), 100);
    afterSync(p, IdleCause::kHostCpu, 30 * kMs, 30 * kMs, 100, c.kind);
    diagnose(p, AnalysisOptions{});
    REQUIRE_FALSE(p.findings.empty());
    const Finding& f = p.findings[0];
    REQUIRE(f.id == kFindingSyncPoints);
    std::string title = f.title;
    std::transform(title.begin(), title.end(), title.begin(), [](unsigned char ch) { return std::tolower(ch); });
    CHECK(title.find(c.named) != std::string::npos);
    CHECK(f.fix.find(c.advice) != std::string::npos);
    CHECK(f.fix.find(c.not_said) == std::string::npos);
  }
}

TEST_CASE("drainers' fixes come in the order of the idle after them") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 40 * kMs), 100);
  afterSync(p, IdleCause::kHostCpu, 10 * kMs, 10 * kMs, 20, SyncPointKind::kDeviceSync);
  afterSync(p, IdleCause::kHostCpu, 30 * kMs, 30 * kMs, 80, SyncPointKind::kAllocFree);
  diagnose(p, AnalysisOptions{});
  const Finding& f = finding(p, kFindingSyncPoints);
  CHECK(f.title == "after sync points that drained the queue (mostly malloc / free)");
  const auto allocator = f.fix.find("caching allocator");
  const auto device_sync = f.fix.find("torch.cuda.synchronize()");
  REQUIRE(allocator != std::string::npos);
  REQUIRE(device_sync != std::string::npos);
  CHECK(allocator < device_sync);
}

TEST_CASE("small reads to the host get the advice of reads, larger copies that of pinned memory") {
  for (const bool reads : {true, false}) {
    INFO((reads ? "4-byte item() reads" : "64 MiB batches"));
    ProcessAnalysis p = processWith(only(IdleCause::kSyncCopy, 30 * kMs), 100);
    SyncTypeStats& s = p.sync_points[static_cast<std::size_t>(SyncPointKind::kPageableAsyncCopy)];
    s.count = 100;
    s.total_ns = 40 * kMs;
    s.small_reads = reads ? 100 : 0;
    diagnose(p, AnalysisOptions{});
    REQUIRE(ids(p) == std::vector<std::string>{kFindingPageableCopies});
    const Finding& f = p.findings[0];
    CHECK((f.fix.find(".item()") != std::string::npos) == reads);
    CHECK((f.fix.find("pin the host buffers") != std::string::npos) == !reads);
    CHECK((f.title.find(".item()") != std::string::npos) == reads);
  }
}

TEST_CASE("idle in cudaMalloc / cudaFree after the syncs they made is the allocator's finding") {
  // The caching allocator turned off: each free drains the queue, and the host then spends the
  // gap inside the next frees and mallocs (cuda_api), with a little Python between them.
  std::array<uint64_t, kIdleCauseCount> causes{};
  causes[at(IdleCause::kCudaApi)] = 55 * kMs;
  causes[at(IdleCause::kHostCpu)] = 200 * kUs;
  ProcessAnalysis p = processWith(causes, 20);
  afterSync(p, IdleCause::kCudaApi, 55 * kMs, 55 * kMs, 20, SyncPointKind::kAllocFree);
  afterSync(p, IdleCause::kHostCpu, 200 * kUs, 200 * kUs, 0, SyncPointKind::kAllocFree);
  diagnose(p, AnalysisOptions{});
  REQUIRE(ids(p) == std::vector<std::string>{kFindingCudaApi});
  CHECK(p.findings[0].title == "in CUDA API calls (cudaMalloc / cudaFree)");
  CHECK(p.findings[0].fix.find("caching allocator") != std::string::npos);
  CHECK(p.findings[0].fix.find(".item()") == std::string::npos);
  CHECK(verdict(p).find("cudaMalloc") != std::string::npos);
}

TEST_CASE("every finding carries numbers beside it and a fix") {
  std::array<uint64_t, kIdleCauseCount> causes{};
  for (std::size_t c = 0; c < kIdleCauseCount; ++c) causes[c] = 10 * kMs;
  causes[at(IdleCause::kHostCpu)] = 20 * kMs;
  // 100 gaps of 700 us: launch overhead from many short gaps is a finding of its own.
  ProcessAnalysis p = processWith(causes, 100);
  afterSync(p, IdleCause::kHostCpu, 8 * kMs, 6 * kMs, 8);
  p.steps.steps = 10;
  p.steps.median_ns = 10 * kMs;
  diagnose(p, AnalysisOptions{});
  CHECK(p.findings.size() == 6);  // the host's parts and launch overhead are one finding
  for (const Finding& f : p.findings) {
    INFO(f.id);
    CHECK_FALSE(f.title.empty());
    CHECK_FALSE(f.fix.empty());
    CHECK(f.evidence.size() >= 2);
    CHECK(f.numbers.size() >= 2);
    for (const auto& [name, value] : f.evidence) {
      CHECK(std::any_of(value.begin(), value.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }));
    }
    for (const auto& [key, value] : f.numbers) {
      const bool named_unit = key.ends_with("_ns") || key.ends_with("_fraction") || key.ends_with("_per_second") ||
                              key.ends_with("_per_step") || key.ends_with("_factor");
      const bool count = value == static_cast<double>(static_cast<uint64_t>(value));
      CHECK((named_unit || count));
    }
  }
}

TEST_CASE("without device times there is no verdict about idle time") {
  ProcessAnalysis p;
  p.device_timeline = false;
  diagnose(p, AnalysisOptions{});
  CHECK(p.findings.empty());
  CHECK(verdict(p).find("not measured") != std::string::npos);

  ProcessAnalysis empty;
  diagnose(empty, AnalysisOptions{});
  CHECK(empty.findings.empty());
  CHECK(verdict(empty).find("No kernel, copy or memset") == 0);
}

namespace {

// Ranks whose k-th collective starts at 10 ms + 100 ms * k plus `offset_us(rank, k)` microseconds;
// kernels end together. The arrival data the straggler test reads, through attributeRankWaits as
// a real run gives it.
template <typename Offset>
std::vector<RankWait> arrivals(int32_t nranks, std::size_t collectives, Offset offset_us) {
  std::vector<RankCollectives> ranks(static_cast<std::size_t>(nranks));
  for (int32_t r = 0; r < nranks; ++r) {
    RankCollectives& rank = ranks[static_cast<std::size_t>(r)];
    rank.rank = r;
    rank.host = "node0";
    CommunicatorKernels& c = rank.communicators.emplace_back();
    c.nranks = nranks;
    for (std::size_t k = 0; k < collectives; ++k) {
      c.starts_ns.push_back(static_cast<uint64_t>(static_cast<int64_t>(10 * kMs + k * 100 * kMs) +
                                                  int64_t{offset_us(r, k)} * 1'000));
      c.ends_ns.push_back(10 * kMs + k * 100 * kMs + 90 * kMs);
    }
  }
  return attributeRankWaits(ranks);
}

// A reproducible jitter in [-range, range] microseconds.
int64_t jitterUs(std::size_t k, int64_t range) {
  uint64_t x = (k + 1) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<int64_t>(x % static_cast<uint64_t>(2 * range + 1)) - range;
}

// The ranks of `waits`, one job, each with a 100 ms window and an NCCL finding of its own.
AnalysisReport reportOf(std::vector<RankWait> waits) {
  AnalysisReport report;
  for (const RankWait& w : waits) {
    ProcessAnalysis p = processWith(only(IdleCause::kNcclHost, 20 * kMs));
    p.rank = w.rank;
    report.processes.push_back(p);
  }
  RankComparison job;
  for (std::size_t i = 0; i < report.processes.size(); ++i) job.processes.push_back(i);
  job.rank_waits = std::move(waits);
  report.rank_comparisons.push_back(std::move(job));
  return report;
}

bool saysNoRankStandsOut(const Finding& nccl) {
  for (const auto& [name, value] : nccl.evidence) {
    if (name == "the ranks wait for" && value.rfind("no rank stands out", 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the t-test's tail is Student's for odd and even degrees of freedom") {
  CHECK(studentUpperTail(0, 19) == Approx(0.5));
  CHECK(studentUpperTail(1, 1) == Approx(0.25));                                 // Cauchy
  CHECK(studentUpperTail(2, 2) == Approx(0.5 - 2 / (2 * std::sqrt(6.0))));       // closed form for 2
  CHECK(studentUpperTail(3, 3) == Approx(0.02883).margin(1e-5));                 // tables
  CHECK(studentUpperTail(2.539, 19) == Approx(0.01).margin(1e-4));               // t(0.99, 19)
  CHECK(studentUpperTail(-2.539, 19) == Approx(0.99).margin(1e-4));
  CHECK(studentUpperTail(std::numeric_limits<double>::infinity(), 19) == 0.0);
}

TEST_CASE("across ranks, a rank late in every collective beyond the jitter is a straggler") {
  // Rank 1 starts 300 us (+-100 us) after rank 0 in each of 100 collectives: 30 ms of the other's
  // 100 ms window.
  AnalysisReport report =
      reportOf(arrivals(2, 100, [](int32_t r, std::size_t k) { return r == 1 ? 300 + jitterUs(k, 100) : 0; }));
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  const StragglerTest& test = *report.rank_comparisons[0].straggler_test;
  CHECK(test.rank == 1);
  CHECK(test.collectives_last == 100);
  CHECK(test.collectives == 100);
  CHECK(test.expected_last == Approx(50));
  CHECK(test.batches == 20);
  CHECK(test.lateness_mean_ns == Approx(299'590));
  CHECK(test.t > 50);
  CHECK(test.p_value < 1e-10);
  CHECK(test.named);
  REQUIRE(report.rank_comparisons[0].findings.size() == 1);
  const Finding& f = report.rank_comparisons[0].findings[0];
  CHECK(f.id == kFindingStraggler);
  CHECK(f.title == "waiting for rank 1 in collectives");
  CHECK(f.idle_share == Approx(0.3).margin(0.01));
  CHECK(number(f, "p_value") < 1e-10);
  CHECK(number(f, "collectives_last") == 100);
  CHECK(number(f, "lateness_mean_ns") > 10 * number(f, "lateness_se_ns"));
  // Each rank's own NCCL finding names the rank its collectives waited for.
  for (const ProcessAnalysis& p : report.processes) {
    CHECK(number(finding(p, kFindingNccl), "waited_for_rank") == 1);
  }
}

TEST_CASE("across ranks, waits that go either way are no straggler however long they are") {
  // Either rank starts up to 600 us after the other at random: each waits for the other about
  // 15 % of its window, and rank 1 a little more (16.0 ms against 15.2). Before the test, that
  // was enough to name it.
  AnalysisReport report = reportOf(arrivals(2, 100, [](int32_t r, std::size_t k) { return r == 1 ? jitterUs(k, 600) : 0; }));
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  const StragglerTest& test = *report.rank_comparisons[0].straggler_test;
  CHECK(test.rank == 1);
  CHECK(test.enough_wait);
  CHECK(test.t == Approx(0.24).margin(0.01));
  CHECK(test.p_value > 0.5);
  CHECK_FALSE(test.late);
  CHECK_FALSE(test.named);
  CHECK(report.rank_comparisons[0].findings.empty());
  for (const ProcessAnalysis& p : report.processes) {
    const Finding& nccl = finding(p, kFindingNccl);
    CHECK_FALSE(hasNumber(nccl, "waited_for_rank"));
    CHECK(saysNoRankStandsOut(nccl));
  }
}

TEST_CASE("across ranks, a rank late only in the first collective of each step is a straggler") {
  // Four ranks in lockstep (+-20 us) but for every fifth collective, which rank 3 reaches 5 ms
  // late: the step's first, after the data loading where it is slow. Its median lateness is
  // within the jitter (a median would see nothing); its mean is 1 ms, far beyond the spread.
  AnalysisReport report = reportOf(arrivals(4, 200, [](int32_t r, std::size_t k) {
    return jitterUs(k * 4 + static_cast<std::size_t>(r), 20) + (r == 3 && k % 5 == 0 ? 5'000 : 0);
  }));
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  const StragglerTest& test = *report.rank_comparisons[0].straggler_test;
  CHECK(test.rank == 3);
  CHECK(std::abs(test.lateness_median_ns) < 20'000);
  CHECK(test.lateness_mean_ns == Approx(1'000'000).epsilon(0.01));
  CHECK(test.named);
  REQUIRE(report.rank_comparisons[0].findings.size() == 1);
  CHECK(report.rank_comparisons[0].findings[0].title == "waiting for rank 3 in collectives");
}

TEST_CASE("across ranks, one long wait among even ones is no straggler") {
  // Rank 1 once 60 ms late (a checkpoint of its own, say), otherwise +-300 us either way: the
  // others waited for it 68 % of their window, but one collective is not a pattern (t = 1.05).
  AnalysisReport report = reportOf(arrivals(2, 100, [](int32_t r, std::size_t k) {
    return r == 1 ? jitterUs(k, 300) + (k == 50 ? 60'000 : 0) : 0;
  }));
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  CHECK(report.rank_comparisons[0].straggler_test->rank == 1);
  CHECK(report.rank_comparisons[0].straggler_test->enough_wait);
  CHECK(report.rank_comparisons[0].straggler_test->p_value > 0.1);
  CHECK(report.rank_comparisons[0].findings.empty());
}

TEST_CASE("a short profile's 24 collectives are enough to name a rank late by hundreds of microseconds each time") {
  // 12 steps of 2 collectives, rank 1 late to each by 300 us: 12 batches of two, 11 degrees of
  // freedom (until 2026-12-07 anything under 40 collectives was "too few to test").
  AnalysisReport report =
      reportOf(arrivals(2, 24, [](int32_t r, std::size_t k) { return r == 1 ? 300 + jitterUs(k, 100) : 0; }));
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  CHECK(report.rank_comparisons[0].straggler_test->batches == 12);
  CHECK(report.rank_comparisons[0].straggler_test->named);
  REQUIRE(report.rank_comparisons[0].findings.size() == 1);
  CHECK(report.rank_comparisons[0].findings[0].id == kFindingStraggler);
}

TEST_CASE("across ranks, a late rank whose wait is under the bar, or too few collectives, is no straggler") {
  // Always last, by 40 us: 4 ms of the other's 100 ms window, under straggler_min_window_share.
  AnalysisReport report =
      reportOf(arrivals(2, 100, [](int32_t r, std::size_t k) { return r == 1 ? 40 + jitterUs(k, 5) : 0; }));
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  CHECK(report.rank_comparisons[0].straggler_test->late);
  CHECK_FALSE(report.rank_comparisons[0].straggler_test->enough_wait);
  CHECK(report.rank_comparisons[0].findings.empty());

  // 1 ms late every time (7 % of the other's window), but in 7 collectives: under
  // kStragglerMinCollectives, no test, and the line says so rather than "no rank stands out".
  report = reportOf(arrivals(2, 7, [](int32_t r, std::size_t k) { return r == 1 ? 1000 + jitterUs(k, 100) : 0; }));
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  CHECK(report.rank_comparisons[0].straggler_test->batches == 0);
  CHECK(report.rank_comparisons[0].straggler_test->enough_wait);
  CHECK_FALSE(report.rank_comparisons[0].straggler_test->named);
  CHECK(report.rank_comparisons[0].findings.empty());
  CHECK(unnamedStragglerText(*report.rank_comparisons[0].straggler_test, 2).rfind("not tested: too few collectives", 0) == 0);

  report.rank_comparisons[0].rank_waits.clear();  // one rank, or no shared collective
  diagnoseReport(report);
  CHECK(report.rank_comparisons[0].findings.empty());
  CHECK_FALSE(report.rank_comparisons[0].straggler_test);
}

// The value of a finding's evidence line, "" when it has none by that name.
std::string evidenceOf(const Finding& f, const std::string& name) {
  for (const auto& [n, value] : f.evidence) {
    if (n == name) return value;
  }
  return "";
}

TEST_CASE("waiting for data is a finding of its own; the rest of the host between kernels is one, with its split") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 80 * kMs), 20);
  DeviceAnalysis& d = p.devices.front();
  d.host_cpu_by_part_ns = {50 * kMs, 20 * kMs, 3 * kMs, 7 * kMs};
  d.host_part_labels[0] = {{"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 50 * kMs}};
  d.host_part_labels[1] = {{"aten::copy_", 20 * kMs}};
  diagnose(p, AnalysisOptions{});
  // The input pipeline is a cause (and fix) of its own; framework, other and unknown time are the
  // host running the model slower than the GPU: one finding, titled by its largest part.
  CHECK(ids(p) == std::vector<std::string>{kFindingInputPipeline, kFindingFrameworkOverhead});
  CHECK(finding(p, kFindingInputPipeline).idle_ns == 50 * kMs);
  CHECK(finding(p, kFindingFrameworkOverhead).idle_ns == 30 * kMs);
  CHECK(evidenceOf(finding(p, kFindingFrameworkOverhead), "the host between kernels") ==
        "framework ops 20.0 ms, host work of unknown kind 7.00 ms, Python outside ops 3.00 ms: one cause (the host "
        "runs the model slower than the GPU), one fix");
  CHECK(finding(p, kFindingFrameworkOverhead).fix.find("torch.compile") != std::string::npos);
  CHECK(hostPartOfFinding(kFindingInputPipeline) == "input_pipeline");
  CHECK(causeOfFinding(kFindingFrameworkOverhead) == "host_cpu");
  // The evidence names the ranges the host was in.
  bool named = false;
  for (const auto& [name, value] : finding(p, kFindingInputPipeline).evidence) {
    if (value.find("enumerate(DataLoader)") != std::string::npos) named = true;
  }
  CHECK(named);
  CHECK(verdict(p).find("input pipeline") != std::string::npos);
}

TEST_CASE("host time without evidence is unknown: never the input pipeline's, with its shape as a hint") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 60 * kMs), 6);
  p.devices.front().unknown_host_in_long_gaps_ns = 60 * kMs;
  diagnose(p, AnalysisOptions{});
  CHECK(ids(p) == std::vector<std::string>{kFindingHostUnknown});
  CHECK_FALSE(hasFinding(p, kFindingInputPipeline));
  CHECK(number(p.findings[0], "unknown_in_long_gaps_ns") == 60 * kMs);
  CHECK(p.findings[0].fix.find("with_stack=True") != std::string::npos);
}

TEST_CASE("from sampled stacks, host-part findings name the Python lines with their idle and share") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 80 * kMs), 20);
  p.python_sampler = true;
  p.python_samples = 130;
  DeviceAnalysis& d = p.devices.front();
  d.host_evidence = HostEvidence::kPythonSamples;
  d.python_samples = 120;
  d.host_cpu_by_part_ns = {50 * kMs, 20 * kMs, 3 * kMs, 7 * kMs};
  d.host_part_labels[0] = {{"proj/train.py:42 in train", 40 * kMs}, {"proj/data.py:9 in load", 10 * kMs}};
  d.host_part_labels[1] = {{"proj/model.py:30 in forward", 20 * kMs}};
  diagnose(p, AnalysisOptions{});
  REQUIRE(ids(p) == std::vector<std::string>{kFindingInputPipeline, kFindingFrameworkOverhead});
  const Finding& input = finding(p, kFindingInputPipeline);
  CHECK(evidenceOf(input, "loader called at") ==
        "proj/train.py:42 in train: 40.0 ms of idle, 80%; proj/data.py:9 in load: 10.0 ms of idle, 20%");
  CHECK(evidenceOf(input, "data loading").empty());  // a trace's range names: none here
  CHECK(evidenceOf(input, "what the host was doing") ==
        "input_pipeline 50.0 ms, framework 20.0 ms, other 3.00 ms, unknown 7.00 ms (from 120 sampled Python stacks)");
  CHECK(number(input, "python_samples") == 120);
  CHECK(input.python_site == "proj/train.py:42 in train");
  CHECK(evidenceOf(finding(p, kFindingFrameworkOverhead), "torch called at") ==
        "proj/model.py:30 in forward: 20.0 ms of idle, 100%");
  // The rest no sample covered is part of the host between kernels, said in its split.
  CHECK(evidenceOf(finding(p, kFindingFrameworkOverhead), "the host between kernels").find("host work of unknown kind 7.00 ms") !=
        std::string::npos);
}

TEST_CASE("with the sampler on, unknown host time is what no sample covered, not a reason to start over") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 60 * kMs), 6);
  p.python_sampler = true;
  p.python_samples = 50;
  p.python_sample_misses = 4;

  SECTION("in long gaps: a thread the sampler does not read, unreadable stacks, short stretches") {
    p.devices.front().unknown_host_in_long_gaps_ns = 60 * kMs;
    diagnose(p, AnalysisOptions{});
    REQUIRE(ids(p) == std::vector<std::string>{kFindingHostUnknown});
    const Finding& f = p.findings[0];
    CHECK(f.title == "in host work outside CUDA calls, of unknown kind (no Python sample covers it)");
    CHECK(evidenceOf(f, "why unknown").rfind("60.0 ms that no readable Python sample covers: ", 0) == 0);
    CHECK(evidenceOf(f, "why unknown").find("(4 samples could not be read or kept)") != std::string::npos);
    CHECK(f.fix.rfind("Most of it lies in gaps of 1 ms or more that no sample covered", 0) == 0);
    CHECK(f.fix.find("To tell what it is") == std::string::npos);
  }
  SECTION("in short gaps: shorter than the sampler's threshold") {
    diagnose(p, AnalysisOptions{});
    REQUIRE(ids(p) == std::vector<std::string>{kFindingHostUnknown});
    CHECK(p.findings[0].fix.rfind("Most of it lies in short gaps", 0) == 0);
    CHECK(p.findings[0].fix.find("GAPWATCH_PY_SAMPLE_AFTER_MS=0") != std::string::npos);
  }
}

TEST_CASE("with the sampler off, unknown host time says it was off and how to record with it") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 60 * kMs), 6);
  diagnose(p, AnalysisOptions{});
  REQUIRE(ids(p) == std::vector<std::string>{kFindingHostUnknown});
  const Finding& f = p.findings[0];
  CHECK(f.title == "in host work outside CUDA calls, of unknown kind (no host events)");
  CHECK(evidenceOf(f, "why unknown").find("no Python samples: the sampler was off") != std::string::npos);
  CHECK(f.fix.rfind("The Python sampler was off (GAPWATCH_PY_SAMPLING=0", 0) == 0);
}

TEST_CASE("a stall of data loading is the input pipeline's, not warm-up") {
  // Ten 2 ms framework gaps (typical long gaps up to 2.05 ms: a stall is 16.4 ms or longer), and
  // one 40 ms gap of data loading: a stall by its length, the input pipeline by its evidence.
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 60 * kMs), 0);
  DeviceAnalysis& d = p.devices.front();
  for (int i = 0; i < 10; ++i) d.gaps.add(2 * kMs);
  d.gaps.add(40 * kMs);
  d.host_cpu_by_part_ns = {40 * kMs, 20 * kMs, 0, 0};
  IdleGap stall;
  stall.start_ns = d.window_start_ns + 10 * kMs;
  stall.end_ns = stall.start_ns + 40 * kMs;
  stall.by_cause_ns[at(IdleCause::kHostCpu)] = 40 * kMs;
  stall.host_by_part_ns = {40 * kMs, 0, 0, 0};
  d.longest_gaps = {stall};
  const IdleExplanation x = explainIdle(p);
  CHECK(x.stalls.size() == 1);
  CHECK(x.warmup_ns == 0);
  CHECK(x.host_part_ns == std::array<uint64_t, kHostPartCount>{40 * kMs, 20 * kMs, 0, 0});

  SECTION("its time inside a compile range is warm-up, the rest stays the loader's") {
    d.longest_gaps[0].warmup_by_cause_ns[at(IdleCause::kHostCpu)] = 10 * kMs;
    d.longest_gaps[0].warmup_host_by_part_ns = {10 * kMs, 0, 0, 0};
    d.warmup_by_cause_ns[at(IdleCause::kHostCpu)] = 10 * kMs;
    d.warmup_host_by_part_ns = {10 * kMs, 0, 0, 0};
    const IdleExplanation y = explainIdle(p);
    CHECK(y.warmup_ns == 10 * kMs);
    CHECK(y.host_part_ns == std::array<uint64_t, kHostPartCount>{30 * kMs, 20 * kMs, 0, 0});
  }
}

TEST_CASE("launch overhead is a finding only from many short gaps") {
  SECTION("100 short gaps carry it: a finding that states the rule") {
    const ProcessAnalysis p = diagnosed(processWith(only(IdleCause::kLaunchOverhead, 6 * kMs), 100));
    REQUIRE(ids(p) == std::vector<std::string>{kFindingLaunchOverhead});
    CHECK(number(p.findings[0], "launch_overhead_gaps") == 100);
    CHECK(number(p.findings[0], "launch_min_gaps") == 20);
  }
  SECTION("the same idle in 10 short gaps is too few to call overhead") {
    CHECK(diagnosed(processWith(only(IdleCause::kLaunchOverhead, 6 * kMs), 10)).findings.empty());
  }
  SECTION("the same idle in two long gaps of a few ms is not called overhead, nor a stall") {
    // 3 ms is no stall (10 ms at least); on a loaded host the scheduler makes gaps like these
    // inside launch calls many times a second, so they are not taken for one-time stalls either:
    // they are slow launch calls, whose fix names preemption.
    ProcessAnalysis p = processWith(only(IdleCause::kLaunchOverhead, 6 * kMs), 2);
    diagnose(p, AnalysisOptions{});
    REQUIRE(ids(p) == std::vector<std::string>{kFindingSlowLaunchCalls});
    CHECK(p.findings[0].fix.find("preempted") != std::string::npos);
  }
  SECTION("two stalls spent inside the first launch of a kernel are a one-time stall") {
    // Thirty 1.5 ms host gaps make the typical long gap (a stall is then 16.4 ms or longer), and
    // two 20 ms gaps in a launch call of a kernel's first launch (lazy loading) are stalls.
    std::array<uint64_t, kIdleCauseCount> causes{};
    causes[at(IdleCause::kLaunchOverhead)] = 40 * kMs;
    causes[at(IdleCause::kHostCpu)] = 45 * kMs;
    ProcessAnalysis p = processWith(causes, 0);
    DeviceAnalysis& d = p.devices[0];
    for (int i = 0; i < 30; ++i) d.gaps.add(1500 * kUs);
    IdleGap gap;
    gap.start_ns = d.window_start_ns + 10 * kMs;
    gap.end_ns = gap.start_ns + 20 * kMs;
    gap.by_cause_ns[at(IdleCause::kLaunchOverhead)] = 20 * kMs;
    gap.call.known = true;
    gap.call.api_name = "cudaLaunchKernel";
    gap.call.thread_id = 7;
    gap.call.enter_ns = gap.start_ns;
    gap.call.exit_ns = gap.end_ns;
    gap.call.in_gap_ns = 20 * kMs;
    gap.after.kind = v1::ACTIVITY_KIND_KERNEL;
    gap.after.name = "void conv_kernel<float>(float*)";
    d.gaps.add(20 * kMs);
    d.gaps.add(20 * kMs);
    SECTION("the kernel's first launch: lazy loading") {
      gap.warmup_first_launch = true;
      gap.warmup_evidence = "first launch of void conv_kernel<float>(float*)";
      gap.warmup_by_cause_ns[at(IdleCause::kLaunchOverhead)] = 20 * kMs;
      d.warmup_by_cause_ns[at(IdleCause::kLaunchOverhead)] = 40 * kMs;
      d.longest_gaps = {gap, gap};
      diagnose(p, AnalysisOptions{});
      REQUIRE(hasFinding(p, kFindingWarmup));
      CHECK_FALSE(hasFinding(p, kFindingLaunchOverhead));
      const Finding& f = finding(p, kFindingWarmup);
      CHECK(f.idle_ns == 40 * kMs);
      CHECK(f.title == "in compile / warm-up stalls, the longest: first launch of void conv_kernel<float>");
      CHECK(number(f, "long_call_ns") == 40 * kMs);
      CHECK(f.fix.find("lazy module loading") != std::string::npos);
    }
    SECTION("a kernel launched before: a slow call with no evidence of first-time work is no warm-up") {
      d.longest_gaps = {gap, gap};
      diagnose(p, AnalysisOptions{});
      CHECK_FALSE(hasFinding(p, kFindingWarmup));
    }
  }
}

TEST_CASE("small reads to the host are called reads of values wherever a sync type is named") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 30 * kMs), 100);
  afterSync(p, IdleCause::kHostCpu, 30 * kMs, 30 * kMs, 100, SyncPointKind::kPageableAsyncCopy);
  SyncTypeStats& s = p.sync_points[static_cast<std::size_t>(SyncPointKind::kPageableAsyncCopy)];
  s.small_reads = 100;
  CHECK(syncTypeLabel(s) == "reads of values");
  diagnose(p, AnalysisOptions{});
  const Finding& f = finding(p, kFindingSyncPoints);
  CHECK(f.title == "after sync points that drained the queue (mostly reads of values)");
  CHECK(f.fix.find("read every N steps") != std::string::npos);
  CHECK(f.fix.find("pin") == std::string::npos);
  bool named = false;
  for (const auto& [name, value] : f.evidence) named = named || name == "reads of values";
  CHECK(named);

  SECTION("a few reads among copies of data keep the pinning advice, and get their own") {
    s.small_reads = 10;
    CHECK(syncTypeLabel(s) == "async copy, pageable");
    const std::string advice = syncAdvice(s);
    CHECK(advice.find("pin the host buffers") != std::string::npos);
    CHECK(advice.find("The 10 reads of values among them") != std::string::npos);
  }
}

TEST_CASE("without the per-gap detail, the sync finding takes host time from each part but the loader by its share") {
  // 24 ms of host time in 240 gaps of 100 us, half in data loading and half outside any op; half
  // of the idle followed a sync (flagged, but no per-gap detail), whose wait hides each gap: by
  // each part's share, 6 ms of the after-sync host time is outside any op, and the sync finding
  // takes that; the 6 ms in the loader stays the input pipeline's (its workers set that wait).
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 24 * kMs), 240);
  DeviceAnalysis& d = p.devices.front();
  d.host_cpu_by_part_ns = {12 * kMs, 0, 12 * kMs, 0};
  d.after_sync_ns = 12 * kMs;
  SyncTypeStats& s = p.sync_points[static_cast<std::size_t>(SyncPointKind::kStreamSync)];
  s.count = 120;
  s.p50_ns = 260 * kUs;
  s.idle_after_ns = 12 * kMs;
  const IdleExplanation x = explainIdle(p);
  REQUIRE(x.after_sync_estimated);
  CHECK(x.sync_points_ns == 6 * kMs);
  CHECK(x.host_part_ns == std::array<uint64_t, kHostPartCount>{12 * kMs, 0, 6 * kMs, 0});
}

TEST_CASE("a trace whose own host events are dense says what they cost the host time it blames") {
  ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 60 * kMs), 6);
  p.source.kineto_trace = true;
  p.source.trace_host_span_ns = 1'200 * kMs;
  p.source.trace_python_events = 134'628;  // with_stack=True: 112 per ms
  p.source.trace_cpu_ops = 12'000;
  diagnose(p, AnalysisOptions{});
  const auto note = std::find_if(p.notes.begin(), p.notes.end(), [](const Finding& f) { return f.id == kFindingProfilerCost; });
  REQUIRE(note != p.notes.end());
  CHECK(note->idle_ns == 0);
  CHECK(number(*note, "profiler_cost_fraction") == Approx((134'628.0 + 12'000.0) * 1'000 / (1'200.0 * kMs)));
  CHECK(evidenceOf(*note, "host events").find("112 Python function events and 10 ops per ms") != std::string::npos);
  CHECK(note->fix.find("with_stack=False") != std::string::npos);
  // Sparse host events (61 ops per ms, as a real trace without with_stack): no note.
  p.source.trace_python_events = 0;
  p.source.trace_cpu_ops = 73'000;
  diagnose(p, AnalysisOptions{});
  CHECK(std::none_of(p.notes.begin(), p.notes.end(), [](const Finding& f) { return f.id == kFindingProfilerCost; }));
}

TEST_CASE("a sync storm takes all the host time after its syncs, with the fix for data-dependent shapes") {
  // 60 ms of host time, 50 ms of it after 2,000 stream syncs (a post-processing loop of nonzero and
  // .item()), of which only 5 ms hideable by the usual rule: the sync storm takes all 50 ms.
  SECTION("2,000 syncs in the window: a storm") {
    ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 60 * kMs), 2000);
    afterSync(p, IdleCause::kHostCpu, 50 * kMs, 5 * kMs, 2000);
    diagnose(p, AnalysisOptions{});
    REQUIRE(hasFinding(p, kFindingSyncPoints));
    const Finding& f = finding(p, kFindingSyncPoints);
    CHECK(f.idle_ns == 50 * kMs);
    CHECK(f.title.rfind("in a sync storm", 0) == 0);
    CHECK(f.fix.find("nonzero_static") != std::string::npos);
    CHECK(f.fix.find("CUDA graphs cannot capture them") != std::string::npos);
    CHECK(p.findings[0].id == kFindingSyncPoints);
  }
  SECTION("the same idle after 20 syncs: no storm, only the hideable part is the syncs'") {
    ProcessAnalysis p = processWith(only(IdleCause::kHostCpu, 60 * kMs), 20);
    afterSync(p, IdleCause::kHostCpu, 50 * kMs, 5 * kMs, 20);
    diagnose(p, AnalysisOptions{});
    REQUIRE(hasFinding(p, kFindingSyncPoints));
    CHECK(finding(p, kFindingSyncPoints).idle_ns == 5 * kMs);
    CHECK(finding(p, kFindingSyncPoints).title.rfind("after sync points", 0) == 0);
  }
}

TEST_CASE("a rank that waits for a named straggler is told so, not to tune its communication") {
  // As above: rank 1 is 300 us late in each of 100 collectives; rank 0's NCCL kernels ran 40 ms,
  // 30 ms of it waiting for rank 1.
  AnalysisReport report =
      reportOf(arrivals(2, 100, [](int32_t r, std::size_t k) { return r == 1 ? 300 + jitterUs(k, 100) : 0; }));
  for (ProcessAnalysis& p : report.processes) {
    NcclTypeStats all_to_all;
    all_to_all.op = "all_to_all";
    all_to_all.calls = 100;
    all_to_all.device_ns = 40 * kMs;
    p.nccl.by_type.push_back(all_to_all);
  }
  diagnoseReport(report);
  REQUIRE(report.rank_comparisons[0].straggler_test);
  REQUIRE(report.rank_comparisons[0].straggler_test->named);
  const Finding& waiting = finding(report.processes[0], kFindingNccl);
  CHECK(waiting.title.rfind("waiting for rank 1 in collectives", 0) == 0);
  CHECK(waiting.fix.find("Not communication cost") != std::string::npos);
  CHECK(waiting.fix.find("bucket_cap_mb") == std::string::npos);
  CHECK(number(waiting, "waiting_for_rank_ns") > 25 * kMs);
  // The straggler's own NCCL finding keeps its meaning.
  CHECK(finding(report.processes[1], kFindingNccl).title.rfind("waiting for rank", 0) != 0);
}
