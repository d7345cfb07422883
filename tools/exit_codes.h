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

namespace gapwatch::cli {

// gapwatch diff --fail-if-slower: run B's step time is slower than A's by more than the threshold
// and beyond the noise of the step times (docs/cli.md, "gapwatch diff").
inline constexpr int kExitSlower = 5;
// gapwatch diff --fail-if-slower: the step times could not be compared (a run without two timed
// steps), so the check cannot pass.
inline constexpr int kExitNotCompared = 6;

}  // namespace gapwatch::cli
