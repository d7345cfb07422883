// tools/report_text.h: the basic report as text a person reads in twenty seconds.
//
// One block per recording: who the process was, how the recording ended, then per device the
// window, busy and idle time with the idle-gap histogram, then the host's sync points and what
// was dropped. Later analyses add their own sections here, each a function of its own.
#pragma once

#include "collector/basic_report.h"
#include "collector/recording_reader.h"

#include <ostream>
#include <string_view>

namespace gapwatch::cli {

void printBasicReport(std::string_view name, const BasicReport& report, const ReadSummary& read,
                      std::ostream& out);

}  // namespace gapwatch::cli
