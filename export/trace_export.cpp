// export/trace_export.cpp: see trace_export.h.
#include "export/trace_export.h"

#include "export/trace_export_stage.h"

namespace gapwatch::exporter {

analysis::RunReport exportTrace(const std::vector<std::string>& files, const analysis::AnalysisOptions& options,
                                TraceSink& sink,
                                const std::function<void(const std::string&, const ReadResult&)>& on_read) {
  analysis::RunReport report = analysis::analyseRecordingFiles(
      files, options, on_read, [&](std::size_t index, analysis::ProcessAnalyser& process) {
        const std::string& file = files[index];
        const std::size_t slash = file.rfind('/');
        TraceExportStage::attach(process.pipeline(), sink, uint32_t(index),
                                 slash == std::string::npos ? file : file.substr(slash + 1));
      });
  return report;
}

}  // namespace gapwatch::exporter
