// tools/exit_codes.h: what `gapwatch` exits with (docs/cli.md, "Exit codes").
#pragma once

namespace gapwatch::cli {

inline constexpr int kExitOk = 0;     // also for a truncated recording: it is read and reported
inline constexpr int kExitUsage = 1;  // bad command line
// A file that is not a readable recording: cannot be opened, empty, not a recording, a version
// this build does not read, or corrupt.
inline constexpr int kExitBadRecording = 2;
// Something gapwatch did not expect of itself (a bug): "gapwatch: internal error: ...".
inline constexpr int kExitInternalError = 3;
// An output file could not be written (gapwatch import: no space, no permission).
inline constexpr int kExitCannotWrite = 4;

}  // namespace gapwatch::cli
