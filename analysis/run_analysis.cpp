// analysis/run_analysis.cpp: see run_analysis.h.
#include "analysis/run_analysis.h"

#include "analysis/job_groups.h"

#include "analysis/diagnosis.h"
#include "reader/kineto_trace.h"

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

void RunAnalysis::addOutcome(const std::string& file, const ReadResult& read, ProcessOutcome outcome) {
  RecordingInput input;
  input.file = file;
  input.status = read.error ? "error" : read.summary.truncated ? "truncated" : "ok";
  if (read.error) input.message = read.error->message;
  else if (read.summary.truncated) input.message = truncationNotice(read.summary);
  if (hasContentToShow(read)) {
    input.process = static_cast<int>(report_.analysis.processes.size());
    report_.analysis.processes.push_back(std::move(outcome.analysis));
    report_.overviews.push_back(std::move(outcome.overview));
    report_.files.push_back(file);
    collectives_.push_back(std::move(outcome.collectives));
  }
  report_.inputs.push_back(std::move(input));
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
  for (std::size_t index = 0; index < files.size(); ++index) {
    const std::string& file = files[index];
    ProcessAnalyser process(options);
    if (prepare) prepare(index, process);
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
  return run.finish();
}

}  // namespace gapwatch::analysis
