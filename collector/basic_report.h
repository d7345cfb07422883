// collector/basic_report.h: the first analysis of a recording: per process and device, how long
// the device was busy and idle, how the idle time splits into gaps, and where the host waited.
//
// Definitions are ARCHITECTURE.md section 6's:
//   - activities are kernels, copies and memsets; SYNC records are host-side and never busy time;
//   - window = first activity start to last activity end, per device; busy = the union of the
//     activity intervals; idle = window - busy; the gaps go into a log2 GapHistogram;
//   - leading time = process start (Hello.process_start_ns, else Hello.start_time_ns) to the
//     first activity: start-up, compilation and warm-up, kept out of the window;
//   - sync points = API calls marked `blocked`, by SyncPointKind, with their blocked time.
// Without device activity (the CUPTI activity probe was off: symbol hooks only) there is nothing
// to say about device idle time, and the report says which of the two cases it is instead.
//
// BasicReportBuilder is a RecordingVisitor, so it runs straight off a StreamDecoder without
// keeping the events; it keeps one 16-byte interval per activity until finish(). Later analyses
// (attribution, launch and NCCL statistics) grow beside it as further fields and visitors.
#pragma once

#include "collector/device_busy.h"
#include "collector/drop_totals.h"
#include "collector/events.h"
#include "collector/recording.h"
#include "collector/stream_decoder.h"
#include "collector/sync_points.h"

#include <gapwatch/v1/stream.pb.h>

#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <optional>
#include <vector>

namespace gapwatch {

// What the recording can say about the device side.
enum class DeviceCoverage {
  kRecorded,       // device activities are present: busy and idle numbers are measured
  kProbeInactive,  // the CUPTI activity probe was not active (symbol-only fallback)
  kNoneRecorded,   // the probe was on, or the probes are unknown, but no activity arrived
};

// Where the leading time is measured from.
enum class LeadingReference {
  kUnknown,         // no Hello, or one without start times
  kProcessStart,    // Hello.process_start_ns
  kRecordingStart,  // Hello.start_time_ns (the library's initialisation)
};

struct DeviceReport {
  uint32_t device = 0;
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  BusySummary busy;  // window, busy, idle and the gap histogram
  // Reference (see BasicReport::leading_reference) to this device's first activity; 0 when the
  // first activity came before the reference (clocks that disagree). Absent when unknown.
  std::optional<uint64_t> leading_ns;
};

struct DropSummary {
  uint64_t events_dropped = 0;         // lost in the recorder's per-thread rings
  uint64_t cupti_records_dropped = 0;  // activity records CUPTI reported lost
  uint64_t transport_events_dropped = 0;  // in batches that could not be written
  uint64_t batches_missing = 0;        // sequence numbers that never arrived

  bool any() const {
    return events_dropped + cupti_records_dropped + transport_events_dropped + batches_missing > 0;
  }
};

struct BasicReport {
  std::optional<v1::Hello> hello;
  std::optional<v1::Goodbye> goodbye;
  StreamHealth health;

  // Event counts.
  uint64_t api_calls = 0;
  uint64_t launches = 0;  // kernel and graph launches
  uint64_t activities = 0;  // all device activity records, SYNC records included
  uint64_t nccl_calls = 0;
  uint64_t markers = 0;
  uint64_t steps = 0;  // STEP_BEGIN markers

  // Host-side span of the recording: Hello.start_time_ns (or the first event) to
  // Goodbye.end_time_ns (or the last event's end). Both 0 when nothing carried a time.
  uint64_t span_start_ns = 0;
  uint64_t span_end_ns = 0;

  DeviceCoverage device_coverage = DeviceCoverage::kNoneRecorded;
  LeadingReference leading_reference = LeadingReference::kUnknown;
  // Reference to the first activity on any device.
  std::optional<uint64_t> leading_ns;
  std::vector<DeviceReport> devices;  // by device ordinal; empty without device activity

  SyncPointCounter sync_points;
  DropSummary drops;

  uint64_t spanNs() const { return span_end_ns - span_start_ns; }
};

class BasicReportBuilder final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;

  // The same, one event at a time.
  void addApiCall(const ApiCallEvent& call);
  void addActivity(const DeviceActivityEvent& activity);
  void addNcclCall(const NcclCallEvent& call);
  void addMarker(const MarkerEvent& marker);
  void addDrop(const DropCount& drop);

  // Computes the report; the builder is spent afterwards. `health` comes from the StreamDecoder.
  BasicReport finish(const StreamHealth& health);

 private:
  struct DeviceState {
    DeviceReport counts;
    std::vector<Interval> intervals;
  };

  void noteTime(uint64_t start_ns, uint64_t end_ns);
  // An async copy blocks when a host side is pageable, which only its activity record tells; the
  // call and the record meet here by correlation id, whichever arrives first.
  void joinAsyncCopy(const ApiCallEvent& call);
  void joinCopyActivity(const DeviceActivityEvent& activity);
  std::unordered_map<uint64_t, ApiCallEvent> async_copies_waiting_;
  std::unordered_set<uint64_t> pageable_copies_waiting_;

  BasicReport report_;
  std::map<uint32_t, DeviceState> devices_;
  DropTotals drop_totals_;
  uint64_t first_event_ns_ = UINT64_MAX;
  uint64_t last_event_ns_ = 0;
};

// The report of a recording already in memory.
BasicReport computeBasicReport(const ProcessRecording& recording);

}  // namespace gapwatch
