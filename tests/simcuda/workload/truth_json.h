// truth_json.h: the ground-truth file (docs/scenarios.md, "Truth file"), built and written.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ground_truth.h"
#include "scenario.h"
#include "workload_runner.h"

namespace gapwatch_sim {

inline constexpr int kTruthFormat = 1;

struct ProcessIdentity {
  RankInfo rank;
  int pid = 0;
  std::string host;
  uint64_t main_start_ns = 0;
  uint64_t sim_init_ns = 0;
};

// One element of the file's "processes" array: identity, numbers per device, the full timeline.
nlohmann::ordered_json process_to_json(const ProcessIdentity& who, const ProcessTruth& truth, const Timeline& timeline,
                               const RunRecord& run);

// The whole file from its processes (sorted by rank), with the definitions and the totals.
nlohmann::ordered_json truth_document(const Scenario& scenario, std::vector<nlohmann::ordered_json> processes);

// Writes JSON readable by people too: objects indented, arrays of numbers and table rows on one
// line each. Throws std::runtime_error when the file cannot be written.
void write_json_file(const std::string& path, const nlohmann::ordered_json& value);

// The cause with the most idle time in an idle_by_cause object, or "none" when there is none.
std::string dominant_cause(const nlohmann::ordered_json& idle_by_cause);

}  // namespace gapwatch_sim
