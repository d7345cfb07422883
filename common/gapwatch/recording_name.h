// gapwatch/recording_name.h: the name a collector gives a process's recording,
// "gapwatch-<host>-<pid>[-rank<r>]" (then "-<n>" if taken, and ".gwt"). The collector makes the
// file; the injected library names it too, in the line it writes when the collector went away and
// the rest of the stream is in a file of its own: the two files are one process, and the line
// says to give both. One definition, so that the line names the file the collector made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gapwatch {

inline constexpr std::size_t kRecordingNameMaxHostChars = 64;

// The host comes from the stream (untrusted): only [A-Za-z0-9._-] are kept, others become '_', at
// most kRecordingNameMaxHostChars; empty: "unknown-host".
inline std::string collectorRecordingBaseName(const std::string& host, uint32_t pid, bool has_rank, int32_t rank) {
  std::string clean;
  for (char c : host) {
    if (clean.size() == kRecordingNameMaxHostChars) break;
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    clean.push_back(ok ? c : '_');
  }
  if (clean.empty()) clean = "unknown-host";
  std::string base = "gapwatch-" + clean + "-" + std::to_string(pid);
  if (has_rank) base += "-rank" + std::to_string(rank);
  return base;
}

}  // namespace gapwatch
