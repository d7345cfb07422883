// analysis/correlation_index.cpp: see correlation_index.h.
#include "analysis/correlation_index.h"

#include <algorithm>

namespace gapwatch::analysis {
namespace {

// Entries kept young (in the cache) before the live ones move on: about a millisecond of launches.
constexpr std::size_t kYoungEntries = 1024;

}  // namespace

bool CorrelationIndex::queuesDeviceWork(v1::ApiKind kind) {
  switch (kind) {
    case v1::API_KIND_LAUNCH:
    case v1::API_KIND_GRAPH_LAUNCH:
    case v1::API_KIND_MEMCPY:
    case v1::API_KIND_MEMCPY_ASYNC:
    case v1::API_KIND_MEMSET:
    case v1::API_KIND_MEMSET_ASYNC:
      return true;
    default:
      return false;
  }
}

void CorrelationIndex::add(const ApiCallEvent& call) {
  if (call.correlation_id == 0 || !queuesDeviceWork(call.kind)) return;
  QueuingCall entry{call.kind, call.thread_id, call.start_ns, call.end_ns, call.stream};
  entry.api_name_id = call.api_name_id;
  entry.python_stack_id = call.python_stack_id;
  auto [held, inserted] = calls_.tryEmplace(call.correlation_id, entry);
  if (!inserted) {
    if (entry.exit_ns < held->exit_ns) return;
    *held = entry;
  }
  young_.push_back({call.start_ns, call.correlation_id});
  if (young_.size() >= kYoungEntries) promoteYoung();
}

void CorrelationIndex::promoteYoung() {
  for (std::size_t i = 0; i < young_.size(); ++i) {
    const auto [enter_ns, id] = young_[i];
    const QueuingCall* call = calls_.find(id);
    if (call && call->enter_ns == enter_ns) old_.push_back(young_[i]);
  }
  young_.clear();
}

void CorrelationIndex::expire(uint64_t now_ns) {
  for (;;) {
    // old_ holds the earlier entries: it goes first.
    RingQueue<std::pair<uint64_t, uint64_t>>& entries = old_.empty() ? young_ : old_;
    if (entries.empty() || entries.front().first + max_age_ns_ >= now_ns) break;
    // Plain variables, not a structured binding: clang before 16 cannot capture one (the fuzz tree).
    const uint64_t enter_ns = entries.front().first;
    const uint64_t id = entries.front().second;
    entries.pop_front();
    // The id may have been matched already, or replaced by a later call of the same id.
    if (!calls_.eraseIf(id, [enter_ns](const QueuingCall& call) { return call.enter_ns == enter_ns; })) continue;
    max_expired_id_ = std::max(max_expired_id_, id);
  }
}

}  // namespace gapwatch::analysis
