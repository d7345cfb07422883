// analysis/run_analysis.cpp: see run_analysis.h.
#include "analysis/run_analysis.h"

#include "analysis/job_groups.h"

#include "analysis/diagnosis.h"
#include "reader/kineto_trace.h"
#include "reader/recording_parts.h"

#include <algorithm>

namespace gapwatch::analysis {

ProcessAnalyser::ProcessAnalyser(const AnalysisOptions& options) : pipeline_(options) {
  addStandardStages(pipeline_);
  arrivals_ = &pipeline_.emplaceStage<CollectiveArrivalStage>();
}

void ProcessAnalyser::onHello(const v1::Hello& hello, uint64_t offset) {
  pipeline_.onHello(hello, offset);
  overview_.onHello(hello, offset);
}

void ProcessAnalyser::onBatch(const DecodedBatch& batch, const StringTable& strings) {
  pipeline_.onBatch(batch, strings);
  overview_.onBatch(batch, strings);
  hang_.onBatch(batch, strings);
}

void ProcessAnalyser::onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) {
  pipeline_.onGoodbye(goodbye, offset);
  overview_.onGoodbye(goodbye, offset);
  hang_.onGoodbye(goodbye, offset);
}

void ProcessAnalyser::onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) {
  overview_.onHeartbeat(heartbeat, offset);
  hang_.onHeartbeat(heartbeat, offset);
}

ProcessOutcome ProcessAnalyser::finish(const ReadResult& read, const StreamHealth& health) {
  ProcessOutcome outcome;
  outcome.analysis = pipeline_.finish(read, health);
  outcome.overview = overview_.finish(read.summary, health);
  outcome.collectives = arrivals_->take();
  outcome.analysis.hang = hang_.finish(outcome.overview.span_end_ns);
  if (outcome.analysis.hang) extendWindowsToHang(outcome.analysis, *outcome.analysis.hang);
  return outcome;
}

RunAnalysis::RunAnalysis(const AnalysisOptions& options) { report_.analysis.options = options; }

void RunAnalysis::addProcess(const std::string& file, const ReadResult& read, const StreamHealth& health,
                             ProcessAnalyser& process) {
  addOutcome(file, read, hasContentToShow(read) ? process.finish(read, health) : ProcessOutcome{});
}

void RunAnalysis::addProcessParts(const std::vector<std::string>& files, const std::vector<ReadResult>& reads,
                                  const StreamHealth& health, ProcessAnalyser& process) {
  // The stream as one read: its frames and bytes summed, the first error (the frames before it
  // and every other part's are shown), the last part that was cut short.
  ReadResult read;
  for (const ReadResult& r : reads) {
    read.summary.format_version = std::max(read.summary.format_version, r.summary.format_version);
    read.summary.bytes_read += r.summary.bytes_read;
    read.summary.frames += r.summary.frames;
    read.summary.skipped_frames += r.summary.skipped_frames;
    if (r.summary.truncated) {
      read.summary.truncated = true;
      read.summary.truncated_at = r.summary.truncated_at;
      read.summary.dropped_bytes = r.summary.dropped_bytes;
    }
    if (r.error && !read.error) read.error = r.error;
  }
  // A part that could not be read at all leaves the others to show.
  const bool any_content = std::any_of(reads.begin(), reads.end(), [](const ReadResult& r) { return hasContentToShow(r); });
  if (read.error && !hasContentToShow(read) && any_content) read.error.reset();
  const int index = static_cast<int>(report_.analysis.processes.size());
  const bool shown = hasContentToShow(read);
  ProcessOutcome outcome = shown ? process.finish(read, health) : ProcessOutcome{};
  outcome.overview.part_files = files;
  for (std::size_t k = 1; k < files.size(); ++k) {
    RecordingInput input;
    input.file = files[k];
    input.status = reads[k].error ? "error" : reads[k].summary.truncated ? "truncated" : "ok";
    if (reads[k].error) input.message = reads[k].error->message;
    else if (reads[k].summary.truncated) input.message = truncationNotice(reads[k].summary);
    input.process = shown ? index : -1;
    pending_inputs_.push_back(std::move(input));
  }
  addOutcome(files.front(), reads.front(), std::move(outcome), shown);
}

void RunAnalysis::addOutcome(const std::string& file, const ReadResult& read, ProcessOutcome outcome) {
  addOutcome(file, read, std::move(outcome), hasContentToShow(read));
}

void RunAnalysis::addOutcome(const std::string& file, const ReadResult& read, ProcessOutcome outcome, bool shown) {
  RecordingInput input;
  input.file = file;
  input.status = read.error ? "error" : read.summary.truncated ? "truncated" : "ok";
  if (read.error) input.message = read.error->message;
  else if (read.summary.truncated) input.message = truncationNotice(read.summary);
  if (shown) {
    input.process = static_cast<int>(report_.analysis.processes.size());
    report_.analysis.processes.push_back(std::move(outcome.analysis));
    report_.overviews.push_back(std::move(outcome.overview));
    report_.files.push_back(file);
    collectives_.push_back(std::move(outcome.collectives));
  }
  report_.inputs.push_back(std::move(input));
  for (RecordingInput& part : pending_inputs_) report_.inputs.push_back(std::move(part));
  pending_inputs_.clear();
}

RunReport RunAnalysis::finish() {
  AnalysisReport& a = report_.analysis;
  const JobGroups groups = groupIntoJobs(a.processes, report_.overviews);
  a.jobs = groups.jobs;
  a.jobs_why = groups.why;
  // Each job of several processes is compared on its own: its ranks' collectives against each
  // other's, never against another job's.
  for (const std::vector<std::size_t>& job : a.jobs) {
    if (job.size() < 2) continue;
    RankComparison comparison;
    comparison.processes = job;
    std::vector<RankCollectives> job_collectives;
    for (std::size_t i : job) job_collectives.push_back(std::move(collectives_[i]));
    comparison.rank_waits = attributeRankWaits(job_collectives);
    a.rank_comparisons.push_back(std::move(comparison));
  }
  diagnoseReport(report_.analysis);
  // A hang is said first: what the process was doing when it died matters more than its idle time.
  for (std::size_t i = 0; i < report_.analysis.processes.size(); ++i) {
    ProcessAnalysis& p = report_.analysis.processes[i];
    if (p.hang) p.notes.insert(p.notes.begin(), hangNote(*p.hang, report_.overviews[i].span_start_ns));
  }
  return std::move(report_);
}

RunReport analyseRecordingFiles(const std::vector<std::string>& files, const AnalysisOptions& options,
                                const std::function<void(const std::string&, const ReadResult&)>& on_read,
                                const std::function<void(std::size_t index, ProcessAnalyser&)>& prepare) {
  RunAnalysis run(options);
  std::vector<std::size_t> read_order;  // the index in `files` of each input as the run records it
  for (const std::vector<std::size_t>& parts : groupRecordingParts(files)) {
    read_order.insert(read_order.end(), parts.begin(), parts.end());
    const std::size_t index = *std::min_element(parts.begin(), parts.end());
    const std::string& file = files[parts.front()];
    ProcessAnalyser process(options);
    if (prepare) prepare(index, process);
    if (parts.size() > 1) {
      StreamDecoder decoder(process);
      std::vector<std::string> part_files;
      std::vector<ReadResult> reads;
      for (std::size_t k = 0; k < parts.size(); ++k) {
        if (k > 0) decoder.beginPart();
        part_files.push_back(files[parts[k]]);
        reads.push_back(readRecordingFile(part_files.back(), decoder));
        if (on_read) on_read(part_files.back(), reads.back());
      }
      run.addProcessParts(part_files, reads, decoder.health(), process);
      continue;
    }
    if (fileLooksLikeKinetoTrace(file)) {
      // A PyTorch profiler trace, recognised by content (reader/kineto_trace.h): the same analysis.
      // The stages keep a pointer to the trace's string table and resolve names until they finish
      // (in addProcess): `trace` owns it (KinetoReadResult::strings) until then.
      const KinetoReadResult trace = readKinetoTraceFile(file, process);
      if (on_read) on_read(file, trace.read);
      run.addProcess(file, trace.read, trace.health, process);
      continue;
    }
    StreamDecoder decoder(process);
    const ReadResult read = readRecordingFile(file, decoder);
    if (on_read) on_read(file, read);
    run.addProcess(file, read, decoder.health(), process);
  }
  RunReport report = run.finish();
  // The inputs in the order given, whatever order the parts were read in: a caller pairs them
  // with `files` by position (the Python API's tables do).
  if (report.inputs.size() == files.size()) {
    std::vector<RecordingInput> given(files.size());
    for (std::size_t k = 0; k < read_order.size(); ++k) given[read_order[k]] = std::move(report.inputs[k]);
    report.inputs = std::move(given);
  }
  return report;
}

}  // namespace gapwatch::analysis
