// export/trace_export_stage.h: an analysis stage that turns one process's events, as the engine
// releases them in time order, into tracks and slices for a TraceSink, streamed: nothing is kept
// per event beyond what is still open.
//
// Per process: a track per host thread (its CUDA calls, NCCL calls, ops, annotations), a track per
// device stream (kernels, copies, memsets), a track per device with its idle gaps, each gap named
// by its cause as the device idle stage attributes it (the cause with the most of its time;
// every cause's share is in the gap's arguments), a track of sync points (the host calls that
// waited for the device, named by their kind) and the steps as the report's step detector
// delimits them: "steps" from markers, "steps (detected)" from the kernels or sync points (both
// where both exist; the report uses the markers then). A launch
// (kernel, copy, memset or graph launch call) and the work it queued share a flow id.
// Put the stage after addStandardStages: it listens to the DeviceIdleStage for the gaps and to the
// StepDetectorStage for the steps.
#pragma once

#include "analysis/analysis_pipeline.h"
#include "analysis/analysis_stage.h"
#include "export/trace_sink.h"

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>

namespace gapwatch::exporter {

class TraceExportStage final : public analysis::AnalysisStage {
 public:
  // `process_index`: this process's place in the export (one per input file), which keeps track
  // uuids and flow ids apart between processes. `fallback_name`: the process's name when its
  // recording gives no rank (the input file). `used_pids` (optional, shared by the processes of one
  // export) keeps pids apart: two ranks on two hosts may have the same one.
  TraceExportStage(TraceSink& sink, uint32_t process_index, std::string fallback_name,
                   std::set<uint32_t>* used_pids = nullptr);

  // Adds the stage to `pipeline` (after its standard stages) and hears the gaps of its device
  // idle stage.
  static TraceExportStage& attach(analysis::AnalysisPipeline& pipeline, TraceSink& sink, uint32_t process_index,
                                  std::string fallback_name, std::set<uint32_t>* used_pids = nullptr);

  void begin(const analysis::RecordingFacts& facts) override;
  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void onNcclCall(const NcclCallEvent& call) override;
  void onMarker(const MarkerEvent& marker) override;
  void onHostRange(const HostRangeEvent& range) override;
  void finish() override;
  void contribute(analysis::ProcessAnalysis& /*result*/) override {}

  // A gap the device idle stage closed.
  void onGap(uint32_t device, const analysis::IdleGap& gap);
  // A complete step the step detector delimited (by markers, or detected).
  void onStep(bool detected, uint64_t start_ns, uint64_t end_ns);

  // Launches held for their flow (bounded by the launches of kFlowExpiryNs of recording time).
  std::size_t pendingFlows() const { return pending_by_time_.size(); }

 private:
  void ensureProcess();
  uint64_t trackFor(TrackKind kind, uint64_t id, uint32_t device);
  Slice hostSlice(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns);
  uint64_t flowId(uint64_t correlation_id) const;
  std::string threadName(uint32_t thread_id) const;
  void expireFlows(uint64_t now_ns);

  TraceSink& sink_;
  uint32_t process_index_;
  std::string fallback_name_;
  std::set<uint32_t>* used_pids_;
  analysis::RecordingFacts facts_;
  const StringTable* strings_ = nullptr;
  bool process_written_ = false;
  uint64_t process_uuid_ = 0;
  uint32_t pid_ = 0;
  std::map<std::pair<int, uint64_t>, uint64_t> tracks_;  // (kind, id) -> uuid
  uint32_t next_track_ = 1;
  // Launches whose work may still come: correlation id, by the launch's entry, so that a launch
  // whose work was dropped leaves the set after a while instead of staying forever.
  std::unordered_set<uint64_t> pending_flows_;
  std::deque<std::pair<uint64_t, uint64_t>> pending_by_time_;  // (entry ns, correlation id)
  // Per steps track (markers, detected): the last step's end and the next step's number.
  struct StepTrack {
    uint64_t last_end_ns = 0;
    uint64_t next_number = 1;
  };
  StepTrack steps_[2];
  uint64_t last_time_ns_ = 0;
};

}  // namespace gapwatch::exporter
