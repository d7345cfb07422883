// collector/collector_log.h: the collector's log, one line per event on stderr (spdlog).
#pragma once

#include <string>

namespace gapwatch::collector {

void logInfo(const std::string& line);
void logWarning(const std::string& line);

}  // namespace gapwatch::collector
