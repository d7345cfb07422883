// collector/status_json.cpp: see status_json.h.
#include "collector/status_json.h"

#include "analysis/process_summary.h"
#include <gapwatch/json_text.h>

#include <nlohmann/json.hpp>

namespace gapwatch::collector {

std::string statusJsonLine(const CollectorStatus& status) {
  using nlohmann::ordered_json;
  ordered_json processes = ordered_json::array();
  for (const ProcessStatus& p : status.processes) {
    const analysis::ProcessSummary s = analysis::summarizeProcess(p.analysis);
    // The finding the report's verdict would name now: the snapshot diagnosed as a report is.
    const std::optional<analysis::TopFinding> top = analysis::topFinding(p.analysis);
    ordered_json causes = ordered_json::object();
    for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
      causes[analysis::idleCauseName(static_cast<analysis::IdleCause>(c))] = s.idle_by_cause_ns[c];
    }
    processes.push_back({
        {"connection", p.connection},
        {"pid", p.pid},
        {"host", p.host},
        {"rank", p.rank ? ordered_json(*p.rank) : ordered_json(nullptr)},
        {"file", p.file},
        {"state", p.running ? "running" : "ended"},
        {"events", p.events},
        {"drops", p.drops},
        {"bytes", p.bytes},
        {"device_timeline", p.analysis.device_timeline},
        {"window_ns", s.window_ns},
        {"idle_ns", s.idle_ns},
        {"idle_fraction", s.idle_fraction},
        {"idle_by_cause_ns", causes},
        {"top_finding", top ? ordered_json{{"id", top->id}, {"title", top->title}, {"cause", top->cause},
                                           {"idle_share", top->idle_share},
                                           {"python_site", top->python_site.empty() ? ordered_json(nullptr)
                                                                                   : ordered_json(top->python_site)}}
                            : ordered_json(nullptr)},
        {"steps", s.steps},
        {"step_median_ns", s.step_median_ns},
        {"sync_points", s.sync_points},
        {"syncs_per_step", s.syncs_per_step},
        {"launches", s.launches},
        {"nccl_comm_ns", s.nccl_comm_ns},
    });
  }
  ordered_json doc = {
      {"version", CollectorStatus::kVersion}, {"uptime_ns", status.uptime_ns}, {"socket", status.socket},
      {"output_dir", status.output_dir},     {"processes", processes},
  };
  // Paths and names need not be UTF-8: jsonText never throws on them.
  return jsonText(doc) + "\n";
}

}  // namespace gapwatch::collector
