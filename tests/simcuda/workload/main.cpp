// gapwatch-sim: runs a scenario file on the simulated CUDA stack and writes the ground truth of
// the GPU's idle time, so that gapwatch's measurement of the same run can be checked.
//
//   gapwatch-sim SCENARIO.json [--truth OUT.json] [--quiet]
//
// Exit status: 0 done; 1 bad scenario or a failed run (one line on stderr); 2 bad command line.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "ground_truth.h"
#include "host_work.h"
#include "json_reader.h"
#include "rank_launcher.h"
#include "scenario.h"
#include "simcuda/timeline.h"
#include "truth_json.h"
#include "truth_summary.h"
#include "workload_runner.h"

namespace {

using namespace gapwatch_sim;

constexpr const char* kUsage = "usage: gapwatch-sim SCENARIO.json [--truth OUT.json] [--quiet]";

struct Options {
  std::string scenario;
  std::string truth;
  std::string rank_output;  // internal: set by the launcher for each rank it starts
  bool quiet = false;
};

// The message quotes the user's file (keys, values, bytes JSON could not parse): keep it one
// line of valid UTF-8 by escaping control bytes and broken sequences.
std::string printable(const std::string& text) {
  std::string out;
  auto escape = [&out](unsigned char c) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
  };
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool whole = len > 0 && i + len <= text.size();
    for (size_t k = 1; whole && k < len; ++k) whole = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (!whole || (len == 1 && (c < 0x20 || c == 0x7f))) {
      escape(c);
      ++i;
    } else {
      out.append(text, i, len);
      i += len;
    }
  }
  return out;
}

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "gapwatch-sim: %s\n", printable(message).c_str());
  std::exit(1);
}

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "gapwatch-sim: %s (%s)\n", printable(message).c_str(), kUsage);
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) usage_error(std::string(name) + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n\nRuns SCENARIO.json (see docs/scenarios.md) on the simulated CUDA stack, then writes\n"
                  "its ground truth to OUT.json and prints a summary of it.\n",
                  kUsage);
      std::exit(0);
    } else if (arg == "--truth") {
      o.truth = value("--truth");
    } else if (arg.rfind("--truth=", 0) == 0) {
      o.truth = arg.substr(8);
    } else if (arg == "--quiet" || arg == "-q") {
      o.quiet = true;
    } else if (arg == "--rank-output") {
      o.rank_output = value("--rank-output");
    } else if (arg.size() > 1 && arg[0] == '-') {
      usage_error("unknown option \"" + arg + "\"");
    } else if (o.scenario.empty()) {
      o.scenario = arg;
    } else {
      usage_error("more than one scenario file (\"" + o.scenario + "\" and \"" + arg + "\")");
    }
  }
  if (o.scenario.empty()) usage_error("no scenario file");
  return o;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// Runs this process's part of the scenario and describes it as one "processes" entry.
nlohmann::ordered_json run_this_process(const Scenario& scenario, const RankInfo& rank, uint64_t main_start_ns) {
  RunRecord run = run_workload(scenario, rank);
  Timeline timeline = snapshot_timeline();
  TruthInputs inputs;
  inputs.timeline = &timeline;
  inputs.host_spans = &run.host_spans;
  inputs.main_start_ns = main_start_ns;
  inputs.launch_threshold_ns = uint64_t(std::llround(scenario.launch_threshold_us * 1000.0));
  ProcessTruth truth = compute_truth(inputs);
  ProcessIdentity who;
  who.rank = rank;
  who.pid = int(getpid());
  who.host = host_name();
  who.main_start_ns = main_start_ns;
  who.sim_init_ns = simcuda_init_ns();
  return process_to_json(who, truth, timeline, run);
}

}  // namespace

int main(int argc, char** argv) {
  // Leading time is measured from here: everything before the first GPU activity counts.
  const uint64_t main_start_ns = monotonic_ns();
  Options options = parse_options(argc, argv);

  Scenario scenario;
  try {
    scenario = load_scenario(options.scenario);
  } catch (const InputError& e) {
    fail(options.scenario + (e.position().empty() ? "" : ":" + e.position()) + ": " + e.what());
  }

  try {
    if (!options.rank_output.empty()) {
      RankInfo rank = rank_from_environment(scenario);
      write_json_file(options.rank_output, run_this_process(scenario, rank, main_start_ns));
      return 0;
    }
    std::vector<nlohmann::ordered_json> processes;
    if (scenario.processes > 1) {
      processes = run_ranks(scenario, options.scenario);
    } else {
      processes.push_back(run_this_process(scenario, RankInfo{}, main_start_ns));
    }
    nlohmann::ordered_json truth = truth_document(scenario, std::move(processes));
    if (!options.truth.empty()) write_json_file(options.truth, truth);
    if (!options.quiet) {
      std::string expected;
      if (scenario.expect.dominant_cause) {
        expected = *scenario.expect.dominant_cause;
        if (scenario.expect.rank) expected += " on rank " + std::to_string(*scenario.expect.rank);
      }
      print_summary(std::cout, truth, expected);
    }
  } catch (const LaunchError& e) {
    fail(options.scenario + ": " + e.what());
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
