// rank_launcher.h: a multi-process scenario, one process per rank, as torchrun would start them.
//
// The launcher makes the one NCCL unique id, starts each rank by fork + exec of this program with
// RANK, LOCAL_RANK, WORLD_SIZE and the id (hex, in GAPWATCH_SIM_NCCL_ID) in its environment, waits
// for all of them and collects the per-rank truths they wrote.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nccl.h>
#include <nlohmann/json.hpp>

#include "scenario.h"
#include "workload_runner.h"

namespace gapwatch_sim {

inline constexpr const char* kNcclIdEnv = "GAPWATCH_SIM_NCCL_ID";

class LaunchError : public std::runtime_error {
 public:
  explicit LaunchError(const std::string& message) : std::runtime_error(message) {}
};

// Runs every rank of `scenario`; returns their "processes" entries. Throws LaunchError.
std::vector<nlohmann::ordered_json> run_ranks(const Scenario& scenario, const std::string& scenario_path);

// A rank's identity from its environment (set by run_ranks). Throws LaunchError when it is
// missing or does not fit the scenario.
RankInfo rank_from_environment(const Scenario& scenario);

std::string nccl_id_to_hex(const ncclUniqueId& id);
std::optional<ncclUniqueId> nccl_id_from_hex(const std::string& hex);

}  // namespace gapwatch_sim
