// tools/report_command.cpp: see report_command.h.
#include "tools/report_command.h"

#include "collector/analysis/analysis_pipeline.h"
#include "collector/analysis/cross_rank.h"
#include "collector/analysis/diagnosis.h"
#include "collector/recording_reader.h"
#include "collector/stream_decoder.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"

#include <algorithm>

namespace gapwatch::cli {

ReportContent gatherReport(const ReportOptions& options, std::ostream& err, int& exit_code) {
  ReportContent content;
  content.analysis.options = options.analysis;
  std::vector<analysis::RankCollectives> collectives;
  exit_code = kExitOk;
  for (const std::string& file : options.files) {
    // One pass per file: the engine and the overview read the same decoded batches.
    analysis::AnalysisPipeline pipeline(options.analysis);
    analysis::addStandardStages(pipeline);
    auto& arrivals = pipeline.emplaceStage<analysis::CollectiveArrivalStage>();
    RecordingOverviewBuilder overview;
    VisitorTee tee({&pipeline, &overview});
    StreamDecoder decoder(tee);
    const ReadResult read = readRecordingFile(file, decoder);

    ReportInput input;
    input.file = file;
    input.status = read.error ? "error" : read.summary.truncated ? "truncated" : "ok";
    if (read.error) input.message = read.error->message;
    else if (read.summary.truncated) input.message = truncationNotice(read.summary);
    if (hasContentToShow(read)) {
      input.process = static_cast<int>(content.analysis.processes.size());
      content.analysis.processes.push_back(pipeline.finish(read, decoder.health()));
      content.overviews.push_back(overview.finish(read.summary, decoder.health()));
      content.files.push_back(file);
      collectives.push_back(arrivals.take());
    }
    content.inputs.push_back(input);
    exit_code = std::max(exit_code, printReadOutcome(file, read, err));
  }
  if (content.analysis.processes.size() > 1) {
    content.analysis.rank_waits = analysis::attributeRankWaits(collectives);
  }
  analysis::diagnoseReport(content.analysis);
  return content;
}

int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  int exit_code = kExitOk;
  const ReportContent content = gatherReport(options, err, exit_code);
  if (options.json) {
    writeReportJson(content, out);
  } else {
    writeTerminalReport(content, TerminalStyle{options.colour}, out);
  }
  out.flush();
  return exit_code;
}

}  // namespace gapwatch::cli
