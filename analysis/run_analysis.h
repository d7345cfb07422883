// analysis/run_analysis.h: the analysis library's entry point. A run is one or more processes
// (ranks), each a recording file or, in the collector daemon, a live stream; this module turns
// them into the one report that the command line and the daemon both show.
//
// Per process, a ProcessAnalyser rides the decoder's single pass: the engine (analysis_pipeline.h)
// and the overview of the recording (recording_overview.h) read the same decoded batches, so a
// recording of any length takes bounded memory. When every process has ended, RunAnalysis adds
// what needs all of them together (the rank the others waited for) and the diagnosis.
//
//   RunAnalysis run(options);
//   ProcessAnalyser process(options);
//   StreamDecoder decoder(process);
//   ReadResult read = readRecordingFile(path, decoder);   // or frames from a socket
//   run.addProcess(path, read, decoder.health(), process);
//   RunReport report = run.finish();
//
// analyseRecordingFiles() does exactly that for a list of files; a file that is a PyTorch profiler
// (Kineto) trace, recognised by its content, is read by reader/kineto_trace.h instead.
#pragma once

#include "analysis/analysis_pipeline.h"
#include "analysis/analysis_result.h"
#include "analysis/cross_rank.h"
#include "analysis/hang.h"
#include "analysis/recording_overview.h"
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::analysis {

// One recording given to the run, and what became of it.
struct RecordingInput {
  std::string file;
  // "ok", "truncated" (reported up to the last whole frame), "error" (not reported, or only the
  // frames before a corrupt one: then `process` is set too).
  std::string status;
  std::string message;  // the error or notice line, without the file name; "" when ok
  int process = -1;     // index into RunReport::analysis.processes, -1 when not reported
};

// Everything a report shows, gathered before a line is written: the terminal text and the JSON
// document are two views of the same content, so they cannot disagree.
struct RunReport {
  AnalysisReport analysis;
  std::vector<RecordingOverview> overviews;  // parallel to analysis.processes
  std::vector<std::string> files;            // parallel to analysis.processes
  std::vector<RecordingInput> inputs;        // every recording given, in order
};

// What one process's stream yields once it has ended.
struct ProcessOutcome {
  ProcessAnalysis analysis;
  RecordingOverview overview;
  RankCollectives collectives;  // for the cross-rank waits
};

// One process's stream: feed it a StreamDecoder's output, then finish() once.
class ProcessAnalyser final : public RecordingVisitor {
 public:
  explicit ProcessAnalyser(const AnalysisOptions& options);

  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;
  void onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) override;

  ProcessOutcome finish(const ReadResult& read, const StreamHealth& health);

  // The engine, for a caller that adds a stage of its own (an exporter) before the first frame.
  AnalysisPipeline& pipeline() { return pipeline_; }

  // While the stream goes on: AnalysisPipeline::snapshot() (no diagnosis, no hang).
  ProcessAnalysis snapshot() const { return pipeline_.snapshot(); }

 private:
  AnalysisPipeline pipeline_;
  CollectiveArrivalStage* arrivals_;  // owned by pipeline_
  RecordingOverviewBuilder overview_;
  HangTracker hang_;
};

class RunAnalysis {
 public:
  explicit RunAnalysis(const AnalysisOptions& options);

  // Records how reading `file` went and, when it has something to show (hasContentToShow),
  // finishes `process` and keeps its outcome.
  void addProcess(const std::string& file, const ReadResult& read, const StreamHealth& health,
                  ProcessAnalyser& process);
  // The same for one process read from several files, its parts (reader/recording_parts.h), in
  // the order read: each file's read is recorded, and the process is the first file's.
  void addProcessParts(const std::vector<std::string>& files, const std::vector<ReadResult>& reads,
                       const StreamHealth& health, ProcessAnalyser& process);
  // The same for a process already finished (the collector keeps each outcome for the run and
  // reports it alone as well); `outcome` is used only when hasContentToShow(read).
  void addOutcome(const std::string& file, const ReadResult& read, ProcessOutcome outcome);

  // The cross-rank analysis (two processes or more) and the diagnosis. Call once.
  RunReport finish();

 private:
  void addOutcome(const std::string& file, const ReadResult& read, ProcessOutcome outcome, bool shown);

  RunReport report_;
  std::vector<RecordingInput> pending_inputs_;  // a process's later parts, listed after its first
  std::vector<RankCollectives> collectives_;  // parallel to report_.analysis.processes
};

// Reads and analyses each file in one pass, in order, then the run. Files that are parts of one
// process (reader/recording_parts.h) are read as one stream, at the place of the first. A Kineto trace (gzip magic, or
// a JSON object) goes through readKinetoTraceFile; anything else through readRecordingFile. `on_read` (optional) hears how
// each file's read went, as soon as it has been read.
// `prepare` (optional) sees each process's ProcessAnalyser before its first frame (to add a stage),
// with the index of its first file.
RunReport analyseRecordingFiles(const std::vector<std::string>& files, const AnalysisOptions& options,
                                const std::function<void(const std::string&, const ReadResult&)>& on_read = {},
                                const std::function<void(std::size_t index, ProcessAnalyser&)>& prepare = {});

}  // namespace gapwatch::analysis
