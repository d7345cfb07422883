// tools/file_outcome.h: the lines every command prints about how reading a file went, and the
// exit code that follows from it.
//
// Errors are one line on stderr, "<file>: <what is wrong>". A truncated recording is not an
// error: one "<file>: note: ..." line, and the command goes on with what was read.
#pragma once

#include "reader/recording_reader.h"

#include <ostream>
#include <string_view>

namespace gapwatch::cli {

// Prints the error line or the notices of `result` to `err`; returns kExitOk or
// kExitBadRecording.
int printReadOutcome(std::string_view name, const ReadResult& result, std::ostream& err);

}  // namespace gapwatch::cli
