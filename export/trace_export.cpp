// export/trace_export.cpp: see trace_export.h.
#include "export/trace_export.h"

#include "export/trace_export_stage.h"

#include <set>

namespace gapwatch::exporter {

analysis::RunReport exportTrace(const std::vector<std::string>& files, const analysis::AnalysisOptions& options,
                                TraceSink& sink,
                                const std::function<void(const std::string&, const ReadResult&)>& on_read) {
  std::set<uint32_t> used_pids;
  analysis::RunReport report = analysis::analyseRecordingFiles(
      files, options, on_read, [&](std::size_t index, analysis::ProcessAnalyser& process) {
        const std::string& file = files[index];
        const std::size_t slash = file.rfind('/');
        TraceExportStage::attach(process.pipeline(), sink, uint32_t(index),
                                 slash == std::string::npos ? file : file.substr(slash + 1), &used_pids);
      });
  return report;
}

}  // namespace gapwatch::exporter
