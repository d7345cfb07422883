// collector/collector.h: the collector daemon's entry point and its options (docs/collector.md).
//
// One thread, one poll() loop: the listening socket, a signalfd for SIGINT/SIGTERM, every
// connection and every live-view client. A connection is one traced process; its frames are
// checked as they arrive, the whole ones written, unchanged, to that process's .gwt and analysed
// live. A bad connection is closed on its own. When a process's connection ends its report is
// written beside its recording; when the collector stops, the report of the whole run. With
// --metrics, one more thread, the HTTP server's, which only reads the text the loop hands it
// (metrics_server.h).
#pragma once

#include "analysis/analysis_result.h"
#include "analysis/run_analysis.h"

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace gapwatch::collector {

struct CollectorOptions {
  std::string socket_path;  // empty: defaultSocketPath()
  std::string output_dir = ".";
  bool exit_when_idle = false;  // exit once a process has connected and none is left
  // A connection with a frame begun (or no Hello yet) and no whole frame for this long is closed.
  uint64_t slow_peer_timeout_ns = 30'000'000'000ull;
  // --metrics: where to serve Prometheus metrics ("9464", "0.0.0.0:9464", "[::1]:9464"); empty: off.
  std::string metrics_address;
  // The analysis's knobs, as `gapwatch report` takes them.
  analysis::AnalysisOptions analysis;
  // How reports are written (the formats live in tools/: the collector only decides when and
  // where). Unset: no report files, the recordings only.
  std::function<void(const analysis::RunReport&, std::ostream&)> write_text_report;
  std::function<void(const analysis::RunReport&, std::ostream&)> write_json_report;
  std::function<void(const analysis::RunReport&, std::ostream&)> write_html_report;  // the run's only
};

// Report files the collector writes in its output directory (docs/collector.md, "Reports").
inline constexpr const char* kRunReportText = "gapwatch-report.txt";
inline constexpr const char* kRunReportJson = "gapwatch-report.json";
inline constexpr const char* kRunReportHtml = "gapwatch-report.html";
// Beside each recording <base>.gwt, that process's own report: <base>.report.json.
std::string processReportName(const std::string& recording_name);

// Runs until SIGINT/SIGTERM (or idle, with exit_when_idle). Returns the process exit code: 0 after
// a clean stop, 1 when it could not start (one line on stderr says why).
int runCollector(const CollectorOptions& options);

}  // namespace gapwatch::collector
