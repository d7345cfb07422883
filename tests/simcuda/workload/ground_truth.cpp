#include "ground_truth.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace gapwatch_sim {

namespace {

// How a thread's API call explains idle time while it runs. The lowest value wins where calls
// nest (an NCCL host call around its driver launch is nccl_host).
enum CallCategory : int { kCatSyncCopy = 0, kCatNccl, kCatLaunch, kCatCudaApi, kCatCount };

CallCategory categorize(const SimApiCall& c) {
  bool copy_or_memset = c.kind == SIM_CALL_MEMCPY || c.kind == SIM_CALL_MEMCPY_ASYNC || c.kind == SIM_CALL_MEMSET ||
                        c.kind == SIM_CALL_MEMSET_ASYNC;
  if (copy_or_memset && c.blocked) return kCatSyncCopy;
  if (c.kind == SIM_CALL_NCCL) return kCatNccl;
  if (copy_or_memset || c.kind == SIM_CALL_LAUNCH || c.kind == SIM_CALL_GRAPH_LAUNCH ||
      c.kind == SIM_CALL_EVENT_RECORD || c.kind == SIM_CALL_STREAM_WAIT_EVENT)
    return kCatLaunch;
  return kCatCudaApi;
}

constexpr IdleCause kCauseOfCategory[kCatCount] = {kSyncCopy, kNcclHost, kLaunchOverhead, kCudaApi};

bool is_activity(const SimDeviceOp& op) {
  return (op.kind == SIM_OP_KERNEL || op.kind == SIM_OP_MEMCPY || op.kind == SIM_OP_MEMSET) && op.end_ns > op.start_ns;
}

// One thread's calls sorted by entry, with the running maximum of exits, so the calls that overlap
// an interval are found without scanning the whole log.
struct ThreadCalls {
  std::vector<const SimApiCall*> calls;
  std::vector<uint64_t> max_exit;
};

struct ThreadSpans {
  std::vector<const HostSpan*> spans;  // sorted by start; host work on one thread does not overlap
};

constexpr size_t kBucketCount = 22;

size_t bucket_of(uint64_t ns) {
  if (ns < 1000) return 0;
  if (ns >= 1000000000ull) return kBucketCount - 1;
  size_t k = 1;
  uint64_t lo = 1000;
  while (k < kBucketCount - 2 && lo * 2 <= ns) {
    lo *= 2;
    ++k;
  }
  return k;
}

std::vector<HistogramBucket> empty_histogram() {
  std::vector<HistogramBucket> h(kBucketCount);
  h[0].lo_ns = 0;
  h[0].hi_ns = 1000;
  for (size_t k = 1; k < kBucketCount - 1; ++k) {
    h[k].lo_ns = 1000ull << (k - 1);
    h[k].hi_ns = k == kBucketCount - 2 ? 1000000000ull : 1000ull << k;
  }
  h[kBucketCount - 1].lo_ns = 1000000000ull;
  h[kBucketCount - 1].hi_ns = 0;
  return h;
}

uint64_t nearest_rank(const std::vector<uint64_t>& sorted, uint64_t percent) {
  if (sorted.empty()) return 0;
  uint64_t rank = (percent * sorted.size() + 99) / 100;  // ceil(p/100 * n)
  return sorted[size_t(std::max<uint64_t>(rank, 1) - 1)];
}

class Attributor {
 public:
  explicit Attributor(const TruthInputs& in) : in_(in) {
    const Timeline& t = *in.timeline;
    for (const SimApiCall& c : t.calls) {
      by_tid_[c.tid].calls.push_back(&c);
      if (c.op_index >= 0) queued_by_[uint64_t(c.op_index)].push_back(&c);
      // Only a call that was still waiting when the device went idle drained the queue there.
      if (c.blocked && c.waited_until_ns > c.enter_ns) sync_ends_.insert(c.waited_until_ns);
      if (c.kind == SIM_CALL_LAUNCH && c.correlation_id) launches_by_corr_[c.correlation_id].push_back(&c);
    }
    for (auto& [tid, tc] : by_tid_) {
      std::stable_sort(tc.calls.begin(), tc.calls.end(),
                       [](const SimApiCall* a, const SimApiCall* b) { return a->enter_ns < b->enter_ns; });
      uint64_t m = 0;
      for (const SimApiCall* c : tc.calls) tc.max_exit.push_back(m = std::max(m, c->exit_ns));
    }
    for (const HostSpan& s : *in.host_spans) spans_by_tid_[s.tid].spans.push_back(&s);
    for (auto& [tid, ts] : spans_by_tid_)
      std::sort(ts.spans.begin(), ts.spans.end(),
                [](const HostSpan* a, const HostSpan* b) { return a->start_ns < b->start_ns; });
  }

  bool after_sync(uint64_t gap_start) const { return sync_ends_.count(gap_start) != 0; }

  void attribute(Gap& gap, const SimDeviceOp& next, std::map<std::string, uint64_t>& host_labels) const {
    const SimApiCall* queued = queuing_call(next);
    if (queued && queued->exit_ns <= gap.start_ns) {
      gap.cause_ns[kDependency] = gap.end_ns - gap.start_ns;
      return;
    }
    // Sweep the thread's calls that overlap the gap; where none runs, the thread was on its own.
    struct Edge {
      uint64_t t;
      int category;
      int delta;
    };
    std::vector<Edge> edges;
    if (auto it = by_tid_.find(next.tid); it != by_tid_.end()) {
      const ThreadCalls& tc = it->second;
      auto first = std::upper_bound(tc.max_exit.begin(), tc.max_exit.end(), gap.start_ns) - tc.max_exit.begin();
      for (size_t i = size_t(first); i < tc.calls.size() && tc.calls[i]->enter_ns < gap.end_ns; ++i) {
        const SimApiCall* c = tc.calls[i];
        uint64_t a = std::max(c->enter_ns, gap.start_ns), b = std::min(c->exit_ns, gap.end_ns);
        if (a >= b) continue;
        int cat = categorize(*c);
        edges.push_back({a, cat, +1});
        edges.push_back({b, cat, -1});
      }
    }
    std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.t < y.t; });
    IdleCause outside = gap.end_ns - gap.start_ns < in_.launch_threshold_ns ? kLaunchOverhead : kHostCpu;
    int active[kCatCount] = {0, 0, 0, 0};
    uint64_t cursor = gap.start_ns;
    size_t e = 0;
    while (cursor < gap.end_ns) {
      while (e < edges.size() && edges[e].t <= cursor) {
        active[edges[e].category] += edges[e].delta;
        ++e;
      }
      uint64_t next_edge = e < edges.size() ? edges[e].t : gap.end_ns;
      int cat = 0;
      while (cat < kCatCount && active[cat] == 0) ++cat;
      if (cat < kCatCount) {
        gap.cause_ns[kCauseOfCategory[cat]] += next_edge - cursor;
      } else {
        gap.cause_ns[outside] += next_edge - cursor;
        if (outside == kHostCpu) label_host_time(next.tid, cursor, next_edge, host_labels);
      }
      cursor = next_edge;
    }
  }

 private:
  // The outermost call that queued `op`: the latest-exiting call naming it, or for a kernel queued
  // outside any runtime call (NCCL's), the launch with its correlation id.
  const SimApiCall* queuing_call(const SimDeviceOp& op) const {
    const std::vector<const SimApiCall*>* candidates = nullptr;
    if (auto it = queued_by_.find(op.index); it != queued_by_.end()) candidates = &it->second;
    else if (auto jt = launches_by_corr_.find(op.correlation_id); op.correlation_id && jt != launches_by_corr_.end())
      candidates = &jt->second;
    if (!candidates) return nullptr;
    const SimApiCall* best = nullptr;
    for (const SimApiCall* c : *candidates)
      if (!best || c->exit_ns > best->exit_ns) best = c;
    return best;
  }

  void label_host_time(int32_t tid, uint64_t a, uint64_t b, std::map<std::string, uint64_t>& labels) const {
    uint64_t covered = 0;
    if (auto it = spans_by_tid_.find(tid); it != spans_by_tid_.end()) {
      for (const HostSpan* s : it->second.spans) {
        if (s->start_ns >= b) break;
        uint64_t lo = std::max(a, s->start_ns), hi = std::min(b, s->end_ns);
        if (lo < hi) {
          labels[s->label] += hi - lo;
          covered += hi - lo;
        }
      }
    }
    if (b - a > covered) labels["unlabeled"] += b - a - covered;
  }

  const TruthInputs& in_;
  std::unordered_map<int32_t, ThreadCalls> by_tid_;
  std::unordered_map<int32_t, ThreadSpans> spans_by_tid_;
  std::unordered_map<uint64_t, std::vector<const SimApiCall*>> queued_by_;
  std::unordered_map<uint64_t, std::vector<const SimApiCall*>> launches_by_corr_;
  std::unordered_set<uint64_t> sync_ends_;
};

DeviceTruth device_truth(uint32_t device, const TruthInputs& in, const Attributor& attributor) {
  const Timeline& t = *in.timeline;
  DeviceTruth d;
  d.device = device;
  d.histogram = empty_histogram();
  for (const char* kind : {"kernel", "memcpy", "memset", "marker"}) d.op_counts[kind] = 0;
  std::vector<const SimDeviceOp*> work;
  for (const SimDeviceOp& op : t.ops) {
    if (op.device != device) continue;
    ++d.op_counts[op_kind_name(op.kind)];
    if (op.kind == SIM_OP_KERNEL && op.name && std::strstr(op.name, "ncclDevKernel_")) d.nccl_kernel_ns += op.end_ns - op.start_ns;
    if (is_activity(op)) work.push_back(&op);
  }
  if (work.empty()) return d;
  std::sort(work.begin(), work.end(), [](const SimDeviceOp* a, const SimDeviceOp* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->index < b->index;
  });
  d.window_start_ns = work.front()->start_ns;
  d.leading_ns = int64_t(d.window_start_ns) - int64_t(in.main_start_ns);
  uint64_t covered_until = work.front()->start_ns;
  for (const SimDeviceOp* op : work) {
    if (op->start_ns > covered_until) {
      Gap gap;
      gap.start_ns = covered_until;
      gap.end_ns = op->start_ns;
      gap.next_op = op->index;
      gap.after_sync = attributor.after_sync(gap.start_ns);
      attributor.attribute(gap, *op, d.host_cpu_by_label);
      d.gaps.push_back(gap);
    }
    if (op->end_ns > covered_until) {
      d.busy_ns += op->end_ns - std::max(op->start_ns, covered_until);
      covered_until = op->end_ns;
    }
  }
  d.window_end_ns = covered_until;
  uint64_t window = d.window_end_ns - d.window_start_ns;
  d.idle_ns = window - d.busy_ns;
  d.idle_fraction = window ? double(d.idle_ns) / double(window) : 0.0;
  for (const Gap& g : d.gaps) {
    uint64_t len = g.end_ns - g.start_ns;
    for (int c = 0; c < kCauseCount; ++c) d.idle_by_cause[size_t(c)] += g.cause_ns[size_t(c)];
    HistogramBucket& b = d.histogram[bucket_of(len)];
    ++b.count;
    b.total_ns += len;
    if (g.after_sync) {
      d.after_sync_ns += len;
      ++d.after_sync_gaps;
    }
  }
  return d;
}

// The time a blocked call waited for device work: from its entry to the end of the work it
// waited for, clipped to the call. The rest of the call (a cudaFreeHost unmapping 64 MB on an idle
// device) is host time in a CUDA call, not waiting.
uint64_t blocked_ns(const SimApiCall& c) {
  if (c.waited_until_ns <= c.enter_ns) return 0;
  return std::min(c.waited_until_ns, c.exit_ns) - c.enter_ns;
}

const std::string& sync_type_of(const SimApiCall& c) {
  const auto& types = sync_point_types();
  switch (c.kind) {
    case SIM_CALL_DEVICE_SYNC: return types[0];
    case SIM_CALL_STREAM_SYNC: return types[1];
    case SIM_CALL_EVENT_SYNC: return types[2];
    case SIM_CALL_MEMCPY: return types[3];
    case SIM_CALL_MEMCPY_ASYNC: return types[4];
    case SIM_CALL_MEMSET:
    case SIM_CALL_MEMSET_ASYNC: return types[5];
    case SIM_CALL_MALLOC:
    case SIM_CALL_FREE:
    case SIM_CALL_HOST_ALLOC:
    case SIM_CALL_HOST_FREE: return types[6];
    default: return types[7];
  }
}

}  // namespace

Timeline snapshot_timeline() {
  Timeline t;
  const SimDeviceOp* ops = nullptr;
  size_t n_ops = simcuda_device_ops(&ops);
  t.ops.assign(ops, ops + n_ops);
  const SimApiCall* calls = nullptr;
  size_t n_calls = simcuda_api_calls(&calls);
  t.calls.assign(calls, calls + n_calls);
  return t;
}

const char* op_kind_name(uint32_t kind) {
  switch (kind) {
    case SIM_OP_KERNEL: return "kernel";
    case SIM_OP_MEMCPY: return "memcpy";
    case SIM_OP_MEMSET: return "memset";
    case SIM_OP_MARKER: return "marker";
    case SIM_OP_HOST_FUNC: return "host_func";
    default: return "unknown";
  }
}

const char* call_kind_name(uint32_t kind) {
  switch (kind) {
    case SIM_CALL_LAUNCH: return "launch";
    case SIM_CALL_GRAPH_LAUNCH: return "graph_launch";
    case SIM_CALL_MEMCPY: return "memcpy";
    case SIM_CALL_MEMCPY_ASYNC: return "memcpy_async";
    case SIM_CALL_MEMSET: return "memset";
    case SIM_CALL_MEMSET_ASYNC: return "memset_async";
    case SIM_CALL_DEVICE_SYNC: return "device_sync";
    case SIM_CALL_STREAM_SYNC: return "stream_sync";
    case SIM_CALL_EVENT_SYNC: return "event_sync";
    case SIM_CALL_EVENT_RECORD: return "event_record";
    case SIM_CALL_STREAM_WAIT_EVENT: return "stream_wait_event";
    case SIM_CALL_MALLOC: return "malloc";
    case SIM_CALL_FREE: return "free";
    case SIM_CALL_HOST_ALLOC: return "host_alloc";
    case SIM_CALL_HOST_FREE: return "host_free";
    case SIM_CALL_NCCL: return "nccl";
    case SIM_CALL_OTHER: return "other";
    case SIM_CALL_HOST_FUNC: return "host_func";
    default: return "unknown";
  }
}

const std::vector<std::string>& sync_point_types() {
  static const std::vector<std::string> types = {"device_sync", "stream_sync", "event_sync", "sync_copy",
                                                 "pageable_async_copy", "memset", "malloc_free", "other"};
  return types;
}

ProcessTruth compute_truth(const TruthInputs& in) {
  const Timeline& t = *in.timeline;
  ProcessTruth p;
  for (const SimApiCall& c : t.calls) ++p.api_call_counts[c.name ? c.name : "?"];

  std::map<std::string, std::vector<uint64_t>> blocked;
  for (const auto& type : sync_point_types()) blocked[type];
  for (const SimApiCall& c : t.calls)
    if (c.blocked) blocked[sync_type_of(c)].push_back(blocked_ns(c));
  for (const auto& type : sync_point_types()) {
    std::vector<uint64_t>& v = blocked[type];
    std::sort(v.begin(), v.end());
    SyncStats s;
    s.count = v.size();
    for (uint64_t x : v) s.total_ns += x;
    s.p50_ns = nearest_rank(v, 50);
    s.p99_ns = nearest_rank(v, 99);
    p.sync_points.emplace_back(type, s);
  }

  Attributor attributor(in);
  std::set<uint32_t> devices;
  for (const SimDeviceOp& op : t.ops) devices.insert(op.device);
  for (uint32_t dev : devices) p.devices.push_back(device_truth(dev, in, attributor));
  return p;
}

}  // namespace gapwatch_sim
