// tools/report_command.cpp: see report_command.h.
#include "tools/report_command.h"

#include "collector/basic_report.h"
#include "collector/recording_reader.h"
#include "collector/stream_decoder.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/report_text.h"

#include <algorithm>

namespace gapwatch::cli {

int runReport(const ReportOptions& options, std::ostream& out, std::ostream& err) {
  int exit_code = kExitOk;
  bool first = true;
  for (const std::string& file : options.files) {
    // One pass, no event kept: the builder takes what the report needs as batches go by.
    BasicReportBuilder builder;
    StreamDecoder decoder(builder);
    const ReadResult result = readRecordingFile(file, decoder);
    if (hasContentToShow(result)) {
      if (!first) out << '\n';
      first = false;
      printBasicReport(file, builder.finish(decoder.health()), result.summary, out);
      out.flush();
    }
    exit_code = std::max(exit_code, printReadOutcome(file, result, err));
  }
  return exit_code;
}

}  // namespace gapwatch::cli
