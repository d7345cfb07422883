// analysis/analysis_pipeline.h: the analysis engine for one process's recording.
//
// AnalysisPipeline is a RecordingVisitor: a StreamDecoder hands it batches in drained order, it
// puts the events back into time order in a bounded ReorderWindow, and fans them out to its
// stages (AnalysisStage), each of which fills its own part of the ProcessAnalysis at the end. On
// the way it joins each async copy to its copy record: the recorder cannot tell from the call
// whether the host side was pageable (which makes the copy block), the record can, so stages see
// such calls already marked `blocked`. The whole run is one pass over the file, with memory
// bounded by the reordering window and the stages' own bounded state.
//
//   AnalysisPipeline pipeline(options);
//   addStandardStages(pipeline);          // device idle, sync points, launches (+ NCCL, steps)
//   ReadResult read;
//   ProcessAnalysis result = analyzeFile(path, pipeline, &read);
//
// or simply analyzeFile(path, options, &read). A caller feeding frames itself (a live collector)
// passes the pipeline to a StreamDecoder and calls finish() at the end.
#pragma once

#include "analysis/analysis_result.h"
#include "analysis/analysis_stage.h"
#include "analysis/reorder_window.h"
#include "reader/drop_totals.h"
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gapwatch::analysis {

class AnalysisPipeline final : public RecordingVisitor {
 public:
  explicit AnalysisPipeline(const AnalysisOptions& options = {});
  ~AnalysisPipeline() override;
  AnalysisPipeline(const AnalysisPipeline&) = delete;
  AnalysisPipeline& operator=(const AnalysisPipeline&) = delete;

  // Adds a stage; stages see each event in the order they were added. Add them all before the
  // first frame.
  AnalysisStage& addStage(std::unique_ptr<AnalysisStage> stage);
  template <typename Stage, typename... Args>
  Stage& emplaceStage(Args&&... args) {
    return static_cast<Stage&>(addStage(std::make_unique<Stage>(std::forward<Args>(args)...)));
  }

  // The first stage of type Stage (added by addStandardStages or by the caller), or nullptr.
  template <typename Stage>
  Stage* findStage() const {
    for (const auto& stage : stages_) {
      if (auto* found = dynamic_cast<Stage*>(stage.get())) return found;
    }
    return nullptr;
  }

  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;

  // After the last frame: releases the window, finishes the stages and collects their parts,
  // with the process's identity, drop counts and whether the recording ended early. Call once.
  ProcessAnalysis finish(const ReadResult& read, const StreamHealth& health);

  // While the stream goes on: the process's identity and drops, and each stage's snapshot() of
  // the events the reordering window has released (those of the last reorder_window_ns of the
  // recording's time are not in it yet). Changes nothing; finish() may follow as usual.
  ProcessAnalysis snapshot() const;

  const AnalysisOptions& options() const { return options_; }
  const RecordingFacts& facts() const { return facts_; }
  const ReorderWindow& window() const { return window_; }

 private:
  // Receives the window's time-ordered output, completes async copies, passes events on.
  class Fanout final : public TimeOrderedConsumer {
   public:
    explicit Fanout(AnalysisPipeline& pipeline) : pipeline_(pipeline) {}
    void onApiCall(const ApiCallEvent& call) override;
    void onActivity(const DeviceActivityEvent& activity) override;
    void onNcclCall(const NcclCallEvent& call) override;
    void onMarker(const MarkerEvent& marker) override;
    void onHostRange(const HostRangeEvent& range) override;
    void onPythonSample(const PythonSampleEvent& sample) override;

   private:
    AnalysisPipeline& pipeline_;
  };

  void beginStages();
  // Identity (Hello), timeline, drops and API-spans: what finish() and snapshot() both write.
  void writeProcessFacts(ProcessAnalysis& result) const;

  AnalysisOptions options_;
  RecordingFacts facts_;
  std::vector<std::unique_ptr<AnalysisStage>> stages_;
  Fanout fanout_;
  ReorderWindow window_;
  bool begun_ = false;
  bool strings_set_ = false;
  // Copy records in the window, by correlation id: does the copy block the host (a pageable host
  // side, or host to host)? Looked up when the async copy call leaves the window (its record
  // starts no earlier, so it has arrived by then unless it was dropped), erased as the record does.
  // Also the record's direction and size, for a copy call that did not record them (a PyTorch
  // profiler trace's cudaMemcpyAsync has neither): a small read of a value is told by them.
  struct CopyRecord {
    bool blocks = false;
    v1::CopyKind copy_kind = v1::COPY_KIND_UNSPECIFIED;
    uint64_t bytes = 0;
    uint64_t end_ns = 0;  // when the transfer ended: a synchronous call that returned after it blocked
  };
  std::unordered_map<uint64_t, CopyRecord> copy_blocks_;
  std::optional<v1::Hello> hello_;
  std::optional<v1::Goodbye> goodbye_;
  DropTotals drops_;
  uint64_t sync_records_ = 0;  // SYNC activities seen (RecordingSource::sync_records)
  uint64_t python_stacks_ = 0;  // calls that carry a Python stack (ProcessAnalysis::python_stacks)
  uint64_t python_samples_ = 0;  // Python samples read (ProcessAnalysis::python_samples)
  std::map<uint64_t, ActivityApiSpan> activity_api_spans_;  // by start: the latest report of each
};

// The stages every report uses: device idle and attribution, sync points, launch statistics, and
// (once the lead wires them, see the marked place in analysis_pipeline.cpp) NCCL statistics and
// step detection.
void addStandardStages(AnalysisPipeline& pipeline);

// What a PyTorch profiler trace does not hold (RecordingSource::not_in_trace), from what the
// analysis of one found.
std::vector<std::string> notInTrace(const ProcessAnalysis& process);

// Reads the recording at `path` into `pipeline` (configured, not yet fed) and finishes it.
// `read`, when given, receives what the reader got through (error, truncation).
ProcessAnalysis analyzeFile(const std::string& path, AnalysisPipeline& pipeline, ReadResult* read = nullptr);

// The same with a fresh pipeline and the standard stages.
ProcessAnalysis analyzeFile(const std::string& path, const AnalysisOptions& options, ReadResult* read = nullptr);

}  // namespace gapwatch::analysis
