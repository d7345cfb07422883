// analysis/kernel_stats.cpp: see kernel_stats.h.
#include "analysis/kernel_stats.h"

#include "analysis/kernel_class.h"

#include <cxxabi.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstdlib>

namespace gapwatch::analysis {
namespace {

constexpr uint64_t kQueueAgeNs = 10'000'000'000ull;
constexpr uint32_t kSubBits = 5;  // 32 buckets per power of two
constexpr uint32_t kSub = 1u << kSubBits;
// Expiring the correlation index walks its oldest entries: now and then is enough.
constexpr uint64_t kExpireEvery = 1024;

bool isDeviceWork(v1::ActivityKind kind) {
  return kind == v1::ACTIVITY_KIND_KERNEL || kind == v1::ACTIVITY_KIND_MEMCPY || kind == v1::ACTIVITY_KIND_MEMSET;
}

}  // namespace

// ---- CompactDurations ---------------------------------------------------------------------------

uint32_t CompactDurations::bucketOf(uint64_t ns) {
  if (ns < kSub) return static_cast<uint32_t>(ns);  // one bucket per value below 32 ns
  const uint32_t exp = static_cast<uint32_t>(std::bit_width(ns)) - 1;  // >= kSubBits
  const uint32_t sub = static_cast<uint32_t>(ns >> (exp - kSubBits)) & (kSub - 1);
  return kSub + (exp - kSubBits) * kSub + sub;
}

uint64_t CompactDurations::lowerOf(uint32_t bucket) {
  if (bucket < kSub) return bucket;
  const uint32_t exp = (bucket - kSub) / kSub + kSubBits;
  const uint64_t sub = (bucket - kSub) % kSub;
  return (uint64_t{1} << exp) + (sub << (exp - kSubBits));
}

uint64_t CompactDurations::upperOf(uint32_t bucket) {
  if (bucket < kSub) return bucket + 1;
  const uint32_t exp = (bucket - kSub) / kSub + kSubBits;
  return lowerOf(bucket) + (uint64_t{1} << (exp - kSubBits));
}

void CompactDurations::add(uint64_t ns) {
  min_ = count_ == 0 ? ns : std::min(min_, ns);
  max_ = count_ == 0 ? ns : std::max(max_, ns);
  ++count_;
  const uint32_t b = bucketOf(ns);
  auto it = std::lower_bound(buckets_.begin(), buckets_.end(), b,
                             [](const std::pair<uint32_t, uint64_t>& e, uint32_t key) { return e.first < key; });
  if (it != buckets_.end() && it->first == b) {
    ++it->second;
  } else {
    buckets_.insert(it, {b, 1});
  }
}

uint64_t CompactDurations::median() const {
  if (count_ == 0) return 0;
  const uint64_t rank = (count_ + 1) / 2;  // nearest rank of the 50th percentile
  uint64_t seen = 0;
  for (const auto& [bucket, n] : buckets_) {
    seen += n;
    if (seen < rank) continue;
    const uint64_t mid = lowerOf(bucket) + (upperOf(bucket) - lowerOf(bucket)) / 2;
    return std::clamp(mid, min_, max_);
  }
  return max_;
}

// ---- names --------------------------------------------------------------------------------------

std::string shortKernelName(const std::string& name, std::size_t max_chars) {
  std::string text = name;
  // A mangled name (CUPTI hands some over as they are): its readable form, when it has one.
  if (text.rfind("_Z", 0) == 0) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status);
    if (status == 0 && demangled) text = demangled;
    std::free(demangled);
  }
  if (text.rfind("void ", 0) == 0) text.erase(0, 5);
  // Drop the argument list: the last top-level "(...)" that closes the name.
  if (!text.empty() && text.back() == ')') {
    int depth = 0;
    for (std::size_t i = text.size(); i-- > 0;) {
      if (text[i] == ')') ++depth;
      if (text[i] == '(' && --depth == 0) {
        // "(anonymous namespace)" is part of a name, not an argument list.
        if (i > 0) text.erase(i);
        break;
      }
    }
  }
  // Template arguments tell the instances of one kernel apart (vectorized_elementwise_kernel runs
  // every elementwise op): the first level is kept, deeper levels and argument lists inside them
  // become "<...>" and "(...)".
  std::string out;
  int angle = 0, paren = 0;
  for (char c : text) {
    if (paren > 0) {  // inside an argument list within template arguments
      if (c == '(') ++paren;
      if (c == ')') --paren;
      continue;
    }
    if (c == '(' && angle > 0) {
      out += "(...)";
      paren = 1;
      continue;
    }
    if (c == '<') {
      if (++angle == 2) out += "<...>";
      if (angle < 2) out += c;
      continue;
    }
    if (c == '>' && angle > 0) {
      if (angle-- < 2) out += c;
      continue;
    }
    if (angle < 2) out += c;
  }
  // Namespaces say little on one line: "at::native::" and "(anonymous namespace)::" go.
  std::string bare;
  for (std::size_t i = 0; i < out.size();) {
    if (out.compare(i, 23, "(anonymous namespace)::") == 0) {
      i += 23;
      continue;
    }
    std::size_t j = i;
    while (j < out.size() && (std::isalnum(static_cast<unsigned char>(out[j])) || out[j] == '_')) ++j;
    if (j > i && out.compare(j, 2, "::") == 0) {
      i = j + 2;  // a qualifier
      continue;
    }
    if (j > i) {
      bare.append(out, i, j - i);
      i = j;
    } else {
      bare += out[i++];
    }
  }
  out = bare;
  if (out.empty()) out = name;
  if (out.size() > max_chars) out = out.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return out;
}

// ---- KernelStatsStage ---------------------------------------------------------------------------

KernelStatsStage::KernelStatsStage(const AnalysisOptions& options)
    : options_(options), queued_by_(std::max(options.reorder_window_ns, kQueueAgeNs)) {}

void KernelStatsStage::onApiCall(const ApiCallEvent& call) {
  if (!facts_.device_timeline || call.kind != v1::API_KIND_LAUNCH) return;
  queued_by_.add(call);
  if (++calls_since_expire_ >= kExpireEvery) {
    calls_since_expire_ = 0;
    queued_by_.expire(call.start_ns);
  }
}

void KernelStatsStage::onActivity(const DeviceActivityEvent& activity) {
  if (!facts_.device_timeline || !isDeviceWork(activity.kind) || activity.end_ns <= activity.start_ns) return;
  // Busy time, the union per device: activities come in start order.
  Busy& busy = busy_[activity.device];
  if (!busy.any) {
    busy.any = true;
    busy.covered_until_ns = activity.start_ns;
  }
  if (activity.end_ns > busy.covered_until_ns) {
    busy.busy_ns += activity.end_ns - std::max(activity.start_ns, busy.covered_until_ns);
    busy.covered_until_ns = activity.end_ns;
  }
  if (activity.kind != v1::ACTIVITY_KIND_KERNEL) return;
  const uint64_t ns = activity.end_ns - activity.start_ns;
  if (!last_ || last_name_id_ != activity.name_id) {
    last_ = &by_name_[activity.name_id];
    last_name_id_ = activity.name_id;
  }
  Entry& e = *last_;
  ++kernels_;
  total_ns_ += ns;
  e.total_ns += ns;
  e.durations.add(ns);
  if (ns < kShortKernelNs) ++e.under_20us;
  if (const QueuingCall* call = queued_by_.find(activity.correlation_id)) {
    if (call->kind == v1::API_KIND_LAUNCH && call->exit_ns > call->enter_ns && ns < call->exit_ns - call->enter_ns) {
      ++e.shorter_than_launch;
    }
    queued_by_.matched(activity.correlation_id);
  }
}

KernelStats KernelStatsStage::statsOf(uint32_t name_id, const Entry& e, uint64_t busy_ns) const {
  KernelStats k;
  if (name_id == 0) {
    k.name = "(unnamed)";
  } else {
    k.name = strings_ ? strings_->display(v1::STRING_KIND_KERNEL_NAME, name_id) : "#" + std::to_string(name_id);
  }
  k.count = e.durations.count();
  k.total_ns = e.total_ns;
  k.median_ns = e.durations.median();
  k.min_ns = e.durations.min();
  k.max_ns = e.durations.max();
  k.busy_share = busy_ns ? static_cast<double>(e.total_ns) / static_cast<double>(busy_ns) : 0.0;
  k.under_20us = e.under_20us;
  k.shorter_than_launch = e.shorter_than_launch;
  k.short_kernel = e.under_20us * 2 > k.count || e.shorter_than_launch * 2 > k.count;
  return k;
}

void KernelStatsStage::write(ProcessAnalysis& result) const {
  KernelTable t;
  if (!facts_.device_timeline) {
    result.kernels = std::move(t);
    return;
  }
  for (const auto& [device, busy] : busy_) t.busy_ns += busy.busy_ns;
  t.kernels = kernels_;
  t.total_ns = total_ns_;
  t.distinct = by_name_.size();
  // Ids, not names, are ranked: the names of the few that make a table are looked up once.
  // Ties by the id, so that the order does not depend on the hash map's.
  using Ranked = std::pair<uint32_t, const Entry*>;
  std::vector<Ranked> by_time, short_ones;
  by_time.reserve(by_name_.size());
  for (const auto& [id, entry] : by_name_) {
    by_time.emplace_back(id, &entry);
    const uint64_t n = entry.durations.count();
    if (entry.under_20us * 2 > n || entry.shorter_than_launch * 2 > n) short_ones.emplace_back(id, &entry);
  }
  const std::size_t n = options_.top_n;
  const auto take = [&](std::vector<Ranked>& ranked, auto better, std::vector<KernelStats>& out) {
    const std::size_t keep = std::min(n, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(), better);
    for (std::size_t i = 0; i < keep; ++i) out.push_back(statsOf(ranked[i].first, *ranked[i].second, t.busy_ns));
  };
  take(by_time,
       [](const Ranked& a, const Ranked& b) {
         if (a.second->total_ns != b.second->total_ns) return a.second->total_ns > b.second->total_ns;
         return a.first < b.first;
       },
       t.top_by_time);
  take(short_ones,
       [](const Ranked& a, const Ranked& b) {
         if (a.second->durations.count() != b.second->durations.count()) {
           return a.second->durations.count() > b.second->durations.count();
         }
         return a.first < b.first;
       },
       t.short_by_count);
  // Time by class over every name (each name's text looked up once).
  std::array<uint64_t, kKernelClassCount> by_class{};
  for (const auto& [id, entry] : by_name_) {
    if (id == 0 || !strings_) {
      by_class[static_cast<std::size_t>(KernelClass::kOther)] += entry.total_ns;
      continue;
    }
    const std::string name = strings_->display(v1::STRING_KIND_KERNEL_NAME, id);
    const KernelClass c = classifyKernel(name);
    if (name.rfind("triton_", 0) == 0) t.inductor_ns += entry.total_ns;
    by_class[static_cast<std::size_t>(c)] += entry.total_ns;
    if (c == KernelClass::kConvolution) {
      std::string lower = name;
      for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (lower.find("scudnn") != std::string::npos || lower.find("sgemm") != std::string::npos) {
        t.fp32_convolution_ns += entry.total_ns;
      }
    }
  }
  for (std::size_t c = 0; c < kKernelClassCount; ++c) {
    if (by_class[c] > 0) t.by_class.emplace_back(kernelClassKey(static_cast<KernelClass>(c)), by_class[c]);
  }
  std::stable_sort(t.by_class.begin(), t.by_class.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  result.kernels = std::move(t);
}

}  // namespace gapwatch::analysis
