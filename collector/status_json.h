// collector/status_json.h: the collector's status as one JSON document (one line), what it sends a
// `gapwatch watch` client every second (docs/collector.md, "Status stream").
//
// Per process the one-line numbers of analysis/process_summary.h, so that the live view, the
// metrics and the report's cross-rank table agree on what they show.
#pragma once

#include "collector/collector_status.h"

#include <string>

namespace gapwatch::collector {

// One line of JSON, newline included.
std::string statusJsonLine(const CollectorStatus& status);

}  // namespace gapwatch::collector
