// tests/unit/watch_view_test.cpp: what `gapwatch watch` shows of a collector status: one line per
// process with the right numbers, "-" where a number is not known yet, the node's totals computed
// over every process, escape codes only in the terminal form (colour only when asked), and lines
// that are not a collector status told apart from those that are.
#include "collector/status_json.h"
#include "tools/watch_status.h"
#include "tools/watch_view.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using gapwatch::cli::parseWatchStatus;
using gapwatch::cli::renderWatchView;
using gapwatch::cli::WatchStatus;
using gapwatch::cli::WatchViewOptions;

namespace {

constexpr uint64_t kMs = 1'000'000;

// Causes in the collector's order (analysis/idle_cause.h), as status_json.cpp writes them.
std::string causes(uint64_t host_cpu, uint64_t launch, uint64_t nccl) {
  return "{\"host_cpu\":" + std::to_string(host_cpu) + ",\"launch_overhead\":" + std::to_string(launch) +
         ",\"sync_copy\":0,\"cuda_api\":0,\"nccl_host\":" + std::to_string(nccl) + ",\"dependency\":0}";
}

// A top finding as the status gives it: its id, title and cause.
std::string topFinding(const std::string& id, const std::string& cause) {
  return "{\"id\":\"" + id + "\",\"title\":\"in " + id + "\",\"cause\":\"" + cause + "\",\"idle_share\":0.75}";
}

std::string process(int connection, uint32_t pid, const std::string& rank, const std::string& state, uint64_t window,
                    uint64_t idle, const std::string& by_cause, const std::string& top, uint64_t steps,
                    uint64_t step_median, uint64_t syncs, uint64_t events, uint64_t drops) {
  const double fraction = window ? double(idle) / double(window) : 0.0;
  const double per_step = steps ? double(syncs) / double(steps) : 0.0;
  return "{\"connection\":" + std::to_string(connection) + ",\"pid\":" + std::to_string(pid) +
         ",\"host\":\"node\",\"rank\":" + rank + ",\"file\":\"gapwatch-node-" + std::to_string(pid) +
         ".gwt\",\"state\":\"" + state + "\",\"events\":" + std::to_string(events) +
         ",\"drops\":" + std::to_string(drops) + ",\"bytes\":1000,\"device_timeline\":true,\"window_ns\":" +
         std::to_string(window) + ",\"idle_ns\":" + std::to_string(idle) +
         ",\"idle_fraction\":" + std::to_string(fraction) + ",\"idle_by_cause_ns\":" + by_cause +
         ",\"top_finding\":" + top + ",\"steps\":" + std::to_string(steps) +
         ",\"step_median_ns\":" + std::to_string(step_median) + ",\"sync_points\":" + std::to_string(syncs) +
         ",\"syncs_per_step\":" + std::to_string(per_step) + ",\"launches\":1234,\"nccl_comm_ns\":" +
         std::to_string(5 * kMs) + "}";
}

std::string statusLine(const std::vector<std::string>& processes, uint64_t uptime = 12'300 * kMs) {
  std::string list;
  for (const std::string& p : processes) list += (list.empty() ? "" : ",") + p;
  return "{\"version\":1,\"uptime_ns\":" + std::to_string(uptime) +
         ",\"socket\":\"/run/gw/c.sock\",\"output_dir\":\"recs\",\"processes\":[" + list + "]}";
}

// Rank 0: 40 ms of 100 ms idle, mostly NCCL; rank 1 (ended): 150 of 300 ms, host CPU; a process
// without a rank that has no window, step or idle yet.
std::string threeProcesses() {
  return statusLine({
      process(1, 101, "0", "running", 100 * kMs, 40 * kMs, causes(10 * kMs, 0, 30 * kMs), topFinding("nccl", "nccl_host"), 20,
              2 * kMs, 20, 5000, 0),
      process(2, 102, "1", "ended", 300 * kMs, 150 * kMs, causes(150 * kMs, 0, 0), topFinding("data_pipeline", "host_cpu"), 10, 30 * kMs,
              25, 7000, 3),
      process(3, 103, "null", "running", 0, 0, causes(0, 0, 0), "null", 0, 0, 0, 10, 0),
  });
}

WatchStatus parsed(const std::string& line) {
  std::string error;
  auto status = parseWatchStatus(line, &error);
  INFO(error);
  REQUIRE(status);
  return *status;
}

bool hasEscape(const std::vector<std::string>& lines) {
  return std::any_of(lines.begin(), lines.end(), [](const std::string& l) { return l.find('\x1b') != std::string::npos; });
}

std::string lineWith(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (l.find(part) != std::string::npos) return l;
  }
  FAIL("no line with " << part);
  return {};
}

}  // namespace

TEST_CASE("plain form: a timestamped header, one line per process, the totals") {
  WatchViewOptions options;
  options.timestamp = "2026-12-02T01:02:03";
  const auto lines = renderWatchView(parsed(threeProcesses()), options);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0] == "2026-12-02T01:02:03 collector /run/gw/c.sock: up 12.3 s, 3 processes (2 running, 1 ended)");
  CHECK(lines[1] ==
        "  rank 0  pid 101  running  idle 40.0%  top nccl  step 2.00 ms  syncs/step 1.0  launches 1,234  "
        "nccl 5.00 ms  events 5,000  drops 0");
  CHECK(lines[2] ==
        "  rank 1  pid 102  ended  idle 50.0%  top data_pipeline  step 30.0 ms  syncs/step 2.5  launches 1,234  "
        "nccl 5.00 ms  events 7,000  drops 3");
  // Nothing known yet: "-", not zeros that read as measurements.
  CHECK(lines[3] ==
        "  rank -  pid 103  running  idle -  top -  step -  syncs/step -  launches 1,234  nccl 5.00 ms  events 10  "
        "drops 0");
  // Idle over the sum of the windows (190 / 400 ms), not the mean of the fractions (45%); shares of
  // the idle time, the largest first, causes without idle left out.
  CHECK(lines[4] == "  node  idle 47.5%  by cause host_cpu 84%, nccl_host 16%  events 12,010  drops 3");
  CHECK_FALSE(hasEscape(lines));
}

TEST_CASE("no process yet: the header says so and the totals are unknown") {
  WatchViewOptions options;
  options.timestamp = "T";
  const auto lines = renderWatchView(parsed(statusLine({}, 500)), options);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "T collector /run/gw/c.sock: up 500 ns, 0 processes (0 running, 0 ended)");
  CHECK(lines[1] == "  no process has connected yet");
  CHECK(lines[2] == "  node  idle -  by cause -  events 0  drops 0");
}

TEST_CASE("the node's line names the three largest causes, the rest as others") {
  const std::string by_cause =
      "{\"host_cpu\":10,\"launch_overhead\":40,\"sync_copy\":5,\"cuda_api\":20,\"nccl_host\":25,\"dependency\":0}";
  WatchViewOptions options;
  const auto lines = renderWatchView(
      parsed(statusLine({process(1, 9, "0", "running", 200, 100, by_cause, topFinding("launch_overhead", "launch_overhead"), 0, 0, 0, 1, 0)})),
      options);
  CHECK(lines.back() == "  node  idle 50.0%  by cause launch_overhead 40%, nccl_host 25%, cuda_api 20%, others 15%  "
                        "events 1  drops 0");
}

TEST_CASE("terminal form: a table with bars, the totals, no escape codes without colour") {
  WatchViewOptions options;
  options.terminal = true;
  options.key_hint = true;
  const auto lines = renderWatchView(parsed(threeProcesses()), options);
  CHECK_FALSE(hasEscape(lines));
  CHECK(lines[0] == "gapwatch watch  collector /run/gw/c.sock  up 12.3 s  3 processes (2 running, 1 ended)");
  CHECK(lines[2].rfind("RANK  PID      STATE      IDLE              TOP FINDING", 0) == 0);
  const std::string rank0 = lineWith(lines, "101");
  CHECK(rank0.rfind("0     101      running   40.0% [####      ] nccl", 0) == 0);
  CHECK(rank0.find("2.00 ms") != std::string::npos);
  const std::string rank1 = lineWith(lines, "102");
  CHECK(rank1.rfind("1     102      ended     50.0% [#####     ] data_pipeline", 0) == 0);
  const std::string unknown = lineWith(lines, "103");
  CHECK(unknown.rfind("-     103      running       - [          ] -", 0) == 0);
  const std::string node = lineWith(lines, "node");
  CHECK(node.rfind("node                     47.5%", 0) == 0);  // under the processes' idle column
  CHECK(node.find("47.5% [#####     ] by cause host_cpu 84%, nccl_host 16%  events 12,010  drops 3") !=
        std::string::npos);
  CHECK(lines.back() == "q or Ctrl-C: quit");
  options.key_hint = false;
  CHECK(renderWatchView(parsed(threeProcesses()), options).back() == node);
}

TEST_CASE("terminal form: colour when asked, lines cut to the width, rows beyond the height counted") {
  WatchViewOptions options;
  options.terminal = true;
  options.colour = true;
  const WatchStatus status = parsed(threeProcesses());
  const auto coloured = renderWatchView(status, options);
  CHECK(hasEscape(coloured));
  CHECK(lineWith(coloured, "102").find("\x1b[33m") != std::string::npos);  // rank 1 dropped events: yellow

  options.colour = false;
  options.width = 40;
  for (const std::string& l : renderWatchView(status, options)) CHECK(l.size() <= 40);
  options.colour = true;
  for (const std::string& l : renderWatchView(status, options)) {
    std::string visible;
    for (std::size_t i = 0; i < l.size(); ++i) {
      if (l[i] == '\x1b') i = l.find('m', i);
      else visible += l[i];
    }
    CHECK(visible.size() <= 40);
  }

  options = WatchViewOptions{};
  options.terminal = true;
  options.height = 8;  // room for two rows: one process and the "more" line
  const auto cut = renderWatchView(status, options);
  CHECK(cut.size() <= 8);
  CHECK(lineWith(cut, "... and 2 more").size() > 0);
  CHECK(lineWith(cut, "node").find("events 12,010") != std::string::npos);  // totals still over all
}

TEST_CASE("the collector's own status line reads back") {
  using namespace gapwatch;
  collector::CollectorStatus status;
  status.uptime_ns = 2'500 * kMs;
  status.socket = "/tmp/gw/c.sock";
  status.output_dir = "out";
  collector::ProcessStatus p;
  p.connection = 4;
  p.pid = 777;
  p.host = "h";
  p.rank = 3;
  p.file = "gapwatch-h-777-rank3.gwt";
  p.running = true;
  p.events = 99;
  analysis::DeviceAnalysis d;
  d.window_start_ns = 0;
  d.window_end_ns = 200 * kMs;
  d.idle_ns = 50 * kMs;
  d.idle_by_cause_ns[std::size_t(analysis::IdleCause::kLaunchOverhead)] = 50 * kMs;
  // In 1,000 short gaps: launch overhead is a finding only from many of them.
  for (int i = 0; i < 1000; ++i) d.gaps.add(50'000);
  d.launch_overhead_short_gaps = 1000;
  p.analysis.devices.push_back(d);
  status.processes.push_back(p);
  std::string line = collector::statusJsonLine(status);
  REQUIRE(line.back() == '\n');
  line.pop_back();
  WatchViewOptions options;
  options.timestamp = "T";
  const auto lines = renderWatchView(parsed(line), options);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] ==
        "  rank 3  pid 777  running  idle 25.0%  top launch_overhead  step -  syncs/step -  launches 0  nccl 0 ns  "
        "events 99  drops 0");
  CHECK(lines[2] == "  node  idle 25.0%  by cause launch_overhead 100%  events 99  drops 0");
}

TEST_CASE("what is not a collector status is refused with the reason") {
  std::string error;
  CHECK_FALSE(parseWatchStatus("hello", &error));
  CHECK(error == "not JSON");
  CHECK_FALSE(parseWatchStatus("[1,2]", &error));
  CHECK(error == "not a JSON object");
  CHECK_FALSE(parseWatchStatus("{}", &error));
  CHECK(error == "version is missing");
  CHECK_FALSE(parseWatchStatus("{\"version\":1,\"uptime_ns\":-4,\"socket\":\"s\",\"output_dir\":\"o\",\"processes\":[]}",
                               &error));
  CHECK(error == "uptime_ns is not a whole number >= 0");
  std::string bad_state = threeProcesses();
  bad_state.replace(bad_state.find("\"ended\""), 7, "\"gone\"");
  CHECK_FALSE(parseWatchStatus(bad_state, &error));
  CHECK(error == "processes[1].state is neither \"running\" nor \"ended\"");
  std::string no_pid = threeProcesses();
  no_pid.replace(no_pid.find("\"pid\":103"), 9, "\"pid\":\"x\"");
  CHECK_FALSE(parseWatchStatus(no_pid, &error));
  CHECK(error == "processes[2].pid is not a whole number >= 0");
  // A newer collector may add fields; they are ignored.
  std::string newer = threeProcesses();
  newer.insert(1, "\"future\":[1],");
  CHECK(parseWatchStatus(newer, &error));
}
