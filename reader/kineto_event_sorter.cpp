// reader/kineto_event_sorter.cpp: see kineto_event_sorter.h.
#include "reader/kineto_event_sorter.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>
#include <utility>

namespace gapwatch::kineto {
namespace {

// Events read back from a run at a time, per run, while merging.
constexpr std::size_t kRunBuffer = 4096;

std::string errnoText(int error) { return std::strerror(error); }

}  // namespace

KinetoEventSorter::KinetoEventSorter(Less less, std::size_t max_in_memory)
    : less_(std::move(less)), max_in_memory_(std::max<std::size_t>(max_in_memory, 1)) {}

KinetoEventSorter::~KinetoEventSorter() {
  if (file_) std::fclose(file_);
}

std::optional<std::string> KinetoEventSorter::add(const PendingEvent& event) {
  if (held_.size() >= max_in_memory_) {
    if (auto error = spill()) return error;
  }
  held_.push_back(event);
  ++events_;
  max_held_ = std::max(max_held_, held_.size());
  return std::nullopt;
}

std::optional<std::string> KinetoEventSorter::spill() {
  if (!file_) {
    file_ = std::tmpfile();
    if (!file_) {
      return "cannot put the trace's events in time order: no temporary file for them (" + errnoText(errno) +
             "; set TMPDIR to a directory with room)";
    }
  }
  std::sort(held_.begin(), held_.end(), less_);
  if (std::fwrite(held_.data(), sizeof(PendingEvent), held_.size(), file_) != held_.size()) {
    return "cannot put the trace's events in time order: writing them to a temporary file failed (" +
           errnoText(errno) + "; set TMPDIR to a directory with room)";
  }
  runs_.push_back({written_, held_.size()});
  ++runs_spilled_;
  written_ += held_.size();
  held_.clear();
  return std::nullopt;
}

std::optional<std::string> KinetoEventSorter::drain(
    const std::function<std::optional<std::string>(const PendingEvent&)>& out) {
  std::sort(held_.begin(), held_.end(), less_);
  if (runs_.empty()) {
    for (const PendingEvent& e : held_) {
      if (auto error = out(e)) return error;
    }
    held_.clear();
    return std::nullopt;
  }
  if (std::fflush(file_) != 0) {
    return "cannot put the trace's events in time order: the temporary file failed (" + errnoText(errno) + ")";
  }
  // The runs on disk and the events still held (one more run) merged by `less_`; on a tie the
  // earlier run first, which keeps file order among events equal in every field.
  struct Cursor {
    std::vector<PendingEvent> buffer;
    std::size_t at = 0;
    uint64_t next = 0, left = 0;  // the next event to read from the file, and how many remain
    const PendingEvent& head() const { return buffer[at]; }
  };
  std::vector<Cursor> cursors(runs_.size() + 1);
  const auto refill = [&](Cursor& c) -> std::optional<std::string> {
    c.buffer.resize(static_cast<std::size_t>(std::min<uint64_t>(c.left, kRunBuffer)));
    c.at = 0;
    if (c.buffer.empty()) return std::nullopt;
    if (std::fseek(file_, static_cast<long>(c.next * sizeof(PendingEvent)), SEEK_SET) != 0 ||
        std::fread(c.buffer.data(), sizeof(PendingEvent), c.buffer.size(), file_) != c.buffer.size()) {
      return "cannot put the trace's events in time order: reading the temporary file failed";
    }
    c.next += c.buffer.size();
    c.left -= c.buffer.size();
    return std::nullopt;
  };
  for (std::size_t r = 0; r < runs_.size(); ++r) {
    cursors[r].next = runs_[r].first;
    cursors[r].left = runs_[r].count;
    if (auto error = refill(cursors[r])) return error;
  }
  cursors.back().buffer = std::move(held_);
  held_.clear();
  const auto later = [&](std::size_t a, std::size_t b) {  // heap order: the earliest on top
    if (less_(cursors[b].head(), cursors[a].head())) return true;
    if (less_(cursors[a].head(), cursors[b].head())) return false;
    return a > b;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heap(later);
  for (std::size_t r = 0; r < cursors.size(); ++r) {
    if (!cursors[r].buffer.empty()) heap.push(r);
  }
  while (!heap.empty()) {
    const std::size_t r = heap.top();
    heap.pop();
    Cursor& c = cursors[r];
    if (auto error = out(c.head())) return error;
    if (++c.at == c.buffer.size()) {
      if (r + 1 == cursors.size() || c.left == 0) {
        c.buffer.clear();
        continue;
      }
      if (auto error = refill(c)) return error;
    }
    heap.push(r);
  }
  runs_.clear();
  written_ = 0;
  std::fclose(file_);
  file_ = nullptr;
  return std::nullopt;
}

}  // namespace gapwatch::kineto
