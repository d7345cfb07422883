// reader/kineto_event_sorter.h: a trace's used events put in time order, whatever order the file
// has, in bounded memory. For the Kineto reader (kineto_trace.cpp) only.
//
// A trace file is not a live stream: Kineto writes its CPU block first and its device block after,
// some writers list events by kind (every op, then every runtime call, then every kernel: 16 s of
// trace time apart), merged files interleave ranks, and tools reorder. The reader's later steps
// (Python call sites, merged polls, nested ops, c10d's NCCL ranges, the engine's reordering window)
// want time order, and the engine's window would otherwise leave out what comes too late (a
// real trace lost 43 % of its kernels that way). So every used event is read first into a compact
// PendingEvent (numbers parsed and checked, text interned by the reader), and handed back in one
// total order that does not depend on the file's order: by start, longer first (a range before
// what it holds), then by the event's own fields, and only for events equal in all of them, by
// their place in the file.
//
// `less` must be a strict total order (the reader's ends with the file position), so an in-place
// sort gives the one order whatever the runs. Memory: up to `max_in_memory` events (104 bytes
// each: 54 MB by default) are held; beyond that, each full batch is sorted in place and written to
// an unnamed temporary file (tmpfile(3): $TMPDIR, removed when closed) as a sorted run, and the
// runs are merged at the end, a buffer of 4096 events (425 KB) per run. A 10 GB trace's 30 million
// used events are 3 GB on disk.
#pragma once

#include "reader/kineto_event_filter.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace gapwatch::kineto {

// One used traceEvents element (ph X), as read and checked: every field the mapping needs, with
// text as ids of the reader's text table (0: none).
struct PendingEvent {
  uint64_t ts_ns = 0, end_ns = 0;
  uint64_t index = 0;  // the element's index in traceEvents: errors and the last tie-break
  int64_t correlation = 0, stream = 0, bytes = 0, cbid = 0, device = 0, pid = 0, tid = 0;
  int64_t wait_on_correlation = -1, wait_on_stream = -1;  // a cuda_sync record's event; -1 not given
  uint32_t name = 0, tid_text = 0, sync_kind = 0;
  uint32_t comms = 0;  // 1 + index of record_param_comms' args in the reader's side table; 0 none
  Category category = Category::kSkip;
  uint8_t flags = 0;  // kHas* below
  static constexpr uint8_t kHasCorrelation = 1, kHasStream = 2, kHasBytes = 4, kHasCbid = 8, kHasDevice = 16,
                           kHasPid = 32, kHasTid = 64, kTidIsText = 128;
  bool has(uint8_t flag) const { return (flags & flag) != 0; }
};
static_assert(std::is_trivially_copyable_v<PendingEvent>, "runs are written as raw bytes");

class KinetoEventSorter {
 public:
  using Less = std::function<bool(const PendingEvent&, const PendingEvent&)>;
  static constexpr std::size_t kDefaultMaxInMemory = std::size_t{1} << 19;

  KinetoEventSorter(Less less, std::size_t max_in_memory = kDefaultMaxInMemory);
  ~KinetoEventSorter();
  KinetoEventSorter(const KinetoEventSorter&) = delete;
  KinetoEventSorter& operator=(const KinetoEventSorter&) = delete;

  // Holds one event; a full batch goes to disk as a sorted run. An error says why it could not.
  std::optional<std::string> add(const PendingEvent& event);
  // Hands every event to `out` in order, then forgets them; stops at `out`'s first error.
  std::optional<std::string> drain(const std::function<std::optional<std::string>(const PendingEvent&)>& out);

  uint64_t events() const { return events_; }
  uint64_t runsSpilled() const { return runs_spilled_; }
  std::size_t maxHeld() const { return max_held_; }

 private:
  struct Run {
    uint64_t first = 0, count = 0;  // in events, in the file
  };
  std::optional<std::string> spill();

  Less less_;
  std::size_t max_in_memory_;
  std::vector<PendingEvent> held_;
  std::vector<Run> runs_;
  std::FILE* file_ = nullptr;
  uint64_t written_ = 0;  // events in the file
  uint64_t events_ = 0, runs_spilled_ = 0;
  std::size_t max_held_ = 0;
};

}  // namespace gapwatch::kineto
