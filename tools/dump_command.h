// tools/dump_command.h: `gapwatch dump [--json] FILE`, every record of a recording in order.
#pragma once

#include <ostream>
#include <string>

namespace gapwatch::cli {

struct DumpOptions {
  std::string file;
  bool json = false;
};

// Returns the exit code (exit_codes.h).
int runDump(const DumpOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gapwatch::cli
