// collector/collector_log.h: the collector's log, one line per event on stderr (spdlog).
#pragma once

#include <string>

namespace gapwatch::collector {

void logInfo(const std::string& line);
void logWarning(const std::string& line);
// Drops every later line (the fuzz target, which opens thousands of connections a second).
void silenceLog();

}  // namespace gapwatch::collector
