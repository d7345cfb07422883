// tools/import_command.h: `gapwatch import TRACE.json[.gz] -o run.gwt [--force]`: a PyTorch
// profiler (Kineto) trace written as a .gwt recording.
//
// The trace is read by reader/kineto_trace.h, exactly as `gapwatch report TRACE` reads it, and the
// stream it synthesises (Hello with source KINETO_TRACE, batches, Goodbye) is written by
// gwt_file_writer.h, so `gapwatch report run.gwt` says what `gapwatch report TRACE` says. An
// existing output is refused unless --force; nothing is left behind when the trace is refused.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gapwatch::cli {

struct ImportOptions {
  // One PyTorch profiler trace; or (several files, or a directory) the parts of one process's
  // recording, the collector's and the library's file for the rest (reader/recording_parts.h),
  // written as one recording.
  std::vector<std::string> inputs;
  std::string output;
  bool force = false;  // replace an existing output
};

// Returns the exit code (exit_codes.h); one line on `err` for each problem, a summary on `out`.
int runImport(const ImportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gapwatch::cli
