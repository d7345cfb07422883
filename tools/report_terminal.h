// tools/report_terminal.h: the report a person reads in twenty seconds, as text.
//
// The verdict comes first ("GPU idle 80.5% of the time; 76% of it waiting on the data pipeline
// (host CPU)"), then the findings ranked by the idle time each explains, each with its evidence
// and its fix, then the numbers behind them: who the process was, per device the window, busy
// and idle time, idle by cause and the log2 gap histogram (with bars), the longest gaps, sync
// points by type, launch statistics, NCCL, steps, and what was lost or cannot be seen. Several
// recordings (one per rank) start with a summary: each rank's verdict and the cross-rank finding.
//
// Recorded strings are printed through printable(); colour is only ever added by TerminalStyle,
// which the command line turns on for a terminal without NO_COLOR (colourWanted).
#pragma once

#include "analysis/run_analysis.h"

#include <ostream>
#include <string>
#include <string_view>

namespace gapwatch::cli {

// ANSI styling, or none. Every styled piece of text goes through here, so "no colour" means no
// escape byte at all.
struct TerminalStyle {
  bool colour = false;

  std::string bold(std::string_view text) const;
  std::string dim(std::string_view text) const;
  std::string warn(std::string_view text) const;  // notices: truncation, drops (yellow)
  std::string good(std::string_view text) const;  // the fix (green)
  std::string bar(std::string_view text) const;   // histogram bars (cyan)
};

// Colour only for a terminal, never with NO_COLOR set (https://no-color.org; set to anything,
// even empty, it is honoured) and never for TERM=dumb.
bool colourWanted(bool stdout_is_terminal, const char* no_color_env, const char* term_env);

void writeTerminalReport(const analysis::RunReport& content, const TerminalStyle& style, std::ostream& out);

}  // namespace gapwatch::cli
