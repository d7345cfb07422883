// tools/watch_view.h: what `gapwatch watch` shows of one collector status, as lines of text.
//
// Two forms. The terminal form is a screen redrawn in place: a header (socket, uptime, processes
// running and ended), a table with one row per process (rank, pid, state, idle % with a bar, top
// cause, median step, syncs per step, launches, NCCL time, events, drops) and the node's totals
// (idle over the sum of the windows, idle shares by cause, events, drops), cut to the terminal's
// size. The plain form, for a pipe or a log, is one block per refresh: a timestamped header line,
// one labelled line per process and the totals line, no escape codes.
//
// A pure function of its inputs (the caller gives the time and the terminal's size), so the tests
// check the lines themselves. Unknown numbers are "-": no window yet, no complete step, no idle.
#pragma once

#include "tools/watch_status.h"

#include <cstddef>
#include <string>
#include <vector>

namespace gapwatch::cli {

struct WatchViewOptions {
  bool terminal = false;  // the table form; else plain lines
  bool colour = false;    // terminal form only (TerminalStyle)
  std::size_t width = 0;  // terminal form: lines are cut to this many columns (0: not cut)
  std::size_t height = 0; // terminal form: at most this many lines, rows beyond are counted (0: no limit)
  bool key_hint = false;  // terminal form: end with the keys that end the view
  std::string timestamp;  // plain form: the header's time, as the caller writes it
};

std::vector<std::string> renderWatchView(const WatchStatus& status, const WatchViewOptions& options);

}  // namespace gapwatch::cli
