// tests/unit/analysis_reorder_window_test.cpp: the reordering window puts one process's events
// back into time order: across event types, on clock ties, across batches that arrive out of
// order, and it counts (and does not deliver) events that come after the window passed them.

#include <catch2/catch.hpp>

#include "analysis_test_events.h"
#include "analysis/reorder_window.h"

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using namespace gapwatch;
using namespace gapwatch::analysis;
using namespace gapwatch::analysis::test;

// Writes one line per event it receives: "<type> <time> <id>".
class Log final : public TimeOrderedConsumer {
 public:
  void onApiCall(const ApiCallEvent& e) override {
    lines.push_back("call " + std::to_string(e.start_ns) + " " + std::to_string(e.correlation_id));
  }
  void onActivity(const DeviceActivityEvent& e) override {
    lines.push_back("activity " + std::to_string(e.start_ns) + " " + std::to_string(e.correlation_id));
  }
  void onNcclCall(const NcclCallEvent& e) override { lines.push_back("nccl " + std::to_string(e.start_ns)); }
  void onMarker(const MarkerEvent& e) override { lines.push_back("marker " + std::to_string(e.time_ns)); }
  std::vector<std::string> lines;
};

MarkerEvent markerAt(uint64_t t) {
  MarkerEvent m;
  m.kind = v1::MARKER_KIND_STEP_BEGIN;
  m.time_ns = t;
  return m;
}

}  // namespace

TEST_CASE("the window merges event types into time order and holds them until the window has passed") {
  Log log;
  ReorderWindow window(100, log);
  // A device record arrives before the call that queued it, as CUPTI buffers can.
  window.push(kernelAt(50, 60, 2));
  window.push(launch(1, 10, 20, 2));
  window.push(markerAt(30));
  window.push(ncclCall(1, 40, 45));
  CHECK(log.lines.empty());  // nothing is 100 ns older than the newest time (50) yet
  window.push(launch(1, 160, 170, 3));  // newest 160: releases up to 60
  CHECK(log.lines == std::vector<std::string>{"call 10 2", "marker 30", "nccl 40", "activity 50 2"});
  CHECK(window.held() == 1);
  window.flush();
  CHECK(log.lines.back() == "call 160 3");
  CHECK(window.lateEvents() == 0);
}

TEST_CASE("on a clock tie markers come first, then NCCL calls, outer API calls, and activities by correlation id") {
  Log log;
  ReorderWindow window(1000, log);
  window.push(kernelAt(100, 200, 9));
  window.push(kernelAt(100, 150, 4));
  window.push(launch(1, 100, 110, 8));   // nested in the next one (same entry, earlier exit)
  window.push(launch(1, 100, 300, 7));   // the outer call
  window.push(ncclCall(1, 100, 400));
  window.push(markerAt(100));
  window.flush();
  CHECK(log.lines == std::vector<std::string>{"marker 100", "nccl 100", "call 100 7", "call 100 8",
                                              "activity 100 4", "activity 100 9"});
}

TEST_CASE("an event older than what the window already released is late: counted, not delivered") {
  Log log;
  ReorderWindow window(ms(1), log);
  CHECK(window.push(launch(1, ms(1), ms(1) + 10, 1)));
  CHECK(window.push(launch(1, ms(5), ms(5) + 10, 2)));  // newest 5 ms: releases up to 4 ms
  REQUIRE(log.lines == std::vector<std::string>{"call 1000000 1"});
  // Later than what was released: still placed in order.
  CHECK(window.push(kernelAt(ms(2), ms(3), 1)));
  // Earlier than the released call at 1 ms: its place has gone.
  CHECK_FALSE(window.push(kernelAt(us(500), us(600), 9)));
  CHECK(window.lateEvents() == 1);
  window.flush();
  CHECK(log.lines == std::vector<std::string>{"call 1000000 1", "activity 2000000 1", "call 5000000 2"});
}

TEST_CASE("a tie with an already released event is late only when it would have to go before it") {
  Log log;
  ReorderWindow window(0, log);  // releases everything older than the newest time
  window.push(launch(1, 100, 110, 1));
  CHECK(window.push(kernelAt(100, 120, 1)));  // after the released call at the same time: in order
  window.push(launch(1, 101, 102, 3));        // releases the activity at 100
  CHECK_FALSE(window.push(launch(2, 100, 105, 2)));  // a call at 100 had to precede that activity
  CHECK(window.lateEvents() == 1);
  window.flush();
  CHECK(log.lines == std::vector<std::string>{"call 100 1", "activity 100 1", "call 101 3"});
}

TEST_CASE("the window holds only the events of its own length, however long the stream") {
  Log log;
  ReorderWindow window(us(100), log);
  for (uint64_t i = 0; i < 100000; ++i) window.push(launch(1, i * us(1), i * us(1) + 500, i + 1));
  CHECK(window.maxHeld() <= 102);  // 100 us of 1 us apart events, plus the newest
  window.flush();
  CHECK(log.lines.size() == 100000);
  CHECK(window.lateEvents() == 0);
}

namespace {

// The window's contract, written the plain way: every held event in one sorted list.
class ReferenceWindow {
 public:
  ReferenceWindow(uint64_t window_ns, Log& out) : window_ns_(window_ns), out_(out) {}

  template <typename Event>
  bool push(const Event& event, int rank, uint64_t time, uint64_t tie) {
    const Key key{time, rank, tie};
    if (released_any_ && key < last_released_) {
      ++late;
      return false;
    }
    held_.push_back({key, sequence_++, [this, event] { deliver(event); }});
    max_held = std::max(max_held, held_.size());
    if (time > newest_) {
      newest_ = time;
      if (newest_ > window_ns_) release(newest_ - window_ns_);
    }
    return true;
  }
  void flush() { release(UINT64_MAX); }
  std::size_t held() const { return held_.size(); }

  uint64_t late = 0;
  std::size_t max_held = 0;

 private:
  using Key = std::tuple<uint64_t, int, uint64_t>;
  struct Held {
    Key key;
    uint64_t sequence;
    std::function<void()> deliver;
  };
  void deliver(const ApiCallEvent& e) { out_.onApiCall(e); }
  void deliver(const DeviceActivityEvent& e) { out_.onActivity(e); }
  void deliver(const NcclCallEvent& e) { out_.onNcclCall(e); }
  void deliver(const MarkerEvent& e) { out_.onMarker(e); }
  void release(uint64_t up_to_ns) {
    std::stable_sort(held_.begin(), held_.end(),
                     [](const Held& a, const Held& b) { return std::tie(a.key, a.sequence) < std::tie(b.key, b.sequence); });
    std::size_t n = 0;
    while (n < held_.size() && std::get<0>(held_[n].key) <= up_to_ns) {
      released_any_ = true;
      last_released_ = held_[n].key;
      held_[n++].deliver();
    }
    held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  uint64_t window_ns_;
  Log& out_;
  std::vector<Held> held_;
  uint64_t sequence_ = 0, newest_ = 0;
  bool released_any_ = false;
  Key last_released_{};
};

}  // namespace

TEST_CASE("the window releases exactly what one sorted list of everything held would, however disordered") {
  // Sources that each arrive nearly in order (as threads and streams do), more of them than the
  // window keeps runs for, bursts of reordering, clock ties, and stretches of plain disorder.
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const uint64_t window_ns = std::vector<uint64_t>{0, 50, 1000, us(20), ms(5)}[seed % 5];
    Log got, want;
    ReorderWindow window(window_ns, got);
    ReferenceWindow reference(window_ns, want);
    const int sources = 1 + static_cast<int>(rng() % 60);
    std::vector<uint64_t> clock(static_cast<std::size_t>(sources), 0);
    for (int i = 0; i < 20000; ++i) {
      const std::size_t source = rng() % clock.size();
      clock[source] += rng() % 4 == 0 ? 0 : rng() % 300;  // ties within a source too
      uint64_t t = clock[source];
      if (rng() % 50 == 0) t = t > 5000 ? t - rng() % 5000 : 0;  // out of order
      if (seed % 7 == 0) t = rng() % 2000000;                   // no order at all
      const uint64_t end = t + rng() % 100;
      const uint64_t correlation = rng() % 50;
      bool placed = false, expected = false;
      switch (rng() % 4) {
        case 0:
          placed = window.push(launch(static_cast<uint32_t>(source), t, end, correlation));
          expected = reference.push(launch(static_cast<uint32_t>(source), t, end, correlation), 2, t, UINT64_MAX - end);
          break;
        case 1:
          placed = window.push(kernelAt(t, end, correlation, source));
          expected = reference.push(kernelAt(t, end, correlation, source), 3, t, correlation);
          break;
        case 2:
          placed = window.push(ncclCall(static_cast<uint32_t>(source), t, end));
          expected = reference.push(ncclCall(static_cast<uint32_t>(source), t, end), 1, t, UINT64_MAX - end);
          break;
        default:
          placed = window.push(markerAt(t));
          expected = reference.push(markerAt(t), 0, t, 0);
          break;
      }
      REQUIRE(placed == expected);
      REQUIRE(window.held() == reference.held());
    }
    window.flush();
    reference.flush();
    INFO("seed " << seed);
    REQUIRE(got.lines == want.lines);
    CHECK(window.lateEvents() == reference.late);
    CHECK(window.maxHeld() == reference.max_held);
  }
}
