// tools/watch_status.h: the collector's status line (collector/status_json.cpp, docs/collector.md
// "Status stream") read back into values, for `gapwatch watch`.
//
// The reading is strict about what the view needs (a line that lacks a field or has it of the
// wrong type is not a status: a peer that is not a collector is told apart from one that is) and
// ignores fields it does not know, so a newer collector that adds some is still shown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gapwatch::cli {

struct WatchProcess {
  int64_t connection = 0;
  uint64_t pid = 0;
  std::string host;
  std::optional<int64_t> rank;
  std::string file;
  bool running = false;
  uint64_t events = 0, drops = 0, bytes = 0;
  uint64_t window_ns = 0, idle_ns = 0;
  double idle_fraction = 0;
  // Cause name to idle ns, in the order the collector sent them (its cause order).
  std::vector<std::pair<std::string, uint64_t>> idle_by_cause_ns;
  // The finding the report's verdict names (its id and title); none while none passes its threshold.
  std::optional<std::string> top_finding, top_finding_title;
  std::optional<std::string> top_finding_site;  // the user's Python line it points at
  uint64_t steps = 0, step_median_ns = 0, sync_points = 0;
  double syncs_per_step = 0;
  uint64_t launches = 0, nccl_comm_ns = 0;
};

struct WatchStatus {
  int64_t version = 0;
  uint64_t uptime_ns = 0;
  std::string socket;
  std::string output_dir;
  std::vector<WatchProcess> processes;
};

// One line of the stream (without its newline). nullopt with *error (a short phrase) when it is
// not a collector status.
std::optional<WatchStatus> parseWatchStatus(std::string_view line, std::string* error);

}  // namespace gapwatch::cli
