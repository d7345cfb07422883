// collector/collector_status.h: what a running collector knows of its processes, for the live view
// (`gapwatch watch`, through status_json.h) and the metrics endpoint.
//
// Built by the collector's loop thread once a second when something wants it; a plain value, so
// it can be handed to another thread (the metrics server's) as a copy.
#pragma once

#include "analysis/analysis_result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch::collector {

struct ProcessStatus {
  int connection = 0;  // the collector's connection number (its log lines say it)
  uint32_t pid = 0;
  std::string host;
  std::optional<int32_t> rank;
  std::string file;  // the .gwt in the output directory
  bool running = false;
  uint64_t events = 0, drops = 0, bytes = 0;  // received so far (drops: the process's own counters)
  // running: the numbers so far (AnalysisPipeline::snapshot(), the last reorder window's events not
  // yet in it); ended: the final analysis, the same as the process's own report.
  analysis::ProcessAnalysis analysis;
};

struct CollectorStatus {
  // 2: a process's "top_finding" (the verdict's finding) replaced "top_cause" (docs/collector.md).
  static constexpr int kVersion = 2;
  uint64_t uptime_ns = 0;  // since the collector started listening
  std::string socket;
  std::string output_dir;
  std::vector<ProcessStatus> processes;  // by rank (processes without one last), then pid
};

}  // namespace gapwatch::collector
