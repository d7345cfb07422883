// export/trace_export.h: the exporter's entry point: recordings and PyTorch profiler traces in
// (whatever `gapwatch report` reads), one trace out, in one streaming pass over each input.
//
// Each input is analysed exactly as `gapwatch report` analyses it (analyseRecordingFiles, the
// standard stages), with a TraceExportStage added to its engine: the trace's gaps are the report's
// gaps, and memory stays that of the report (the engine's bounded window) whatever the length.
//
// Lives in export/ (library gapwatch_export), beside analysis/ rather than in it: the formats are
// output, like tools/'s report formatting, but a collector or a test may export too, so it is a
// library and not part of the command line.
#pragma once

#include "analysis/run_analysis.h"
#include "export/trace_sink.h"

#include <functional>
#include <string>
#include <vector>

namespace gapwatch::exporter {

// Feeds every file's events to `sink` (one process per file) and returns the run's report, whose
// `inputs` say which files could not be read; `on_read` (optional) hears each file's read as it
// ends. The caller calls sink.finish().
analysis::RunReport exportTrace(const std::vector<std::string>& files, const analysis::AnalysisOptions& options,
                                TraceSink& sink,
                                const std::function<void(const std::string&, const ReadResult&)>& on_read = {});

}  // namespace gapwatch::exporter
