// tests/unit/report_terminal_test.cpp: the text report: the verdict comes first, colour only where
// asked for (a terminal without NO_COLOR) and never in recorded strings, and what a recording
// cannot see is said instead of numbers.
#include "analysis/diagnosis.h"
#include "tools/report_terminal.h"

#include <catch2/catch.hpp>

#include <sstream>
#include <string>

using namespace gapwatch;
using namespace gapwatch::analysis;
using gapwatch::analysis::RunReport;
using gapwatch::cli::TerminalStyle;

namespace {

constexpr uint64_t kMs = 1'000'000;

RunReport contentWithOneProcess(bool device_timeline = true) {
  RunReport content;
  ProcessAnalysis p;
  p.pid = 4242;
  p.host = "evil\x1b[2Jhost";
  p.device_timeline = device_timeline;
  if (device_timeline) {
    DeviceAnalysis d;
    d.window_start_ns = 10 * kMs;
    d.window_end_ns = 110 * kMs;
    d.idle_ns = 80 * kMs;
    d.busy_ns = 20 * kMs;
    d.idle_fraction = 0.8;
    d.idle_by_cause_ns[static_cast<std::size_t>(IdleCause::kHostCpu)] = 80 * kMs;
    // The host was inside the DataLoader's range (a trace's host events said so).
    d.host_cpu_by_part_ns[static_cast<std::size_t>(HostPart::kInputPipeline)] = 80 * kMs;
    d.host_part_labels[0] = {{"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 80 * kMs}};
    for (int i = 0; i < 10; ++i) d.gaps.add(8 * kMs);
    p.devices.push_back(d);
  }
  SyncTypeStats s;
  s.kind = SyncPointKind::kDeviceSync;
  s.count = 1;
  s.total_ns = 3 * kMs;
  p.sync_points.push_back(s);
  content.analysis.processes.push_back(p);
  analysis::RecordingOverview overview;
  v1::Hello hello;
  hello.set_pid(4242);
  hello.set_host(p.host);
  overview.hello = hello;
  content.overviews.push_back(overview);
  content.files.push_back("run.gwt");
  diagnoseReport(content.analysis);
  return content;
}

std::string render(const RunReport& content, bool colour) {
  std::ostringstream out;
  cli::writeTerminalReport(content, TerminalStyle{colour}, out);
  return out.str();
}

}  // namespace

TEST_CASE("colour only on a terminal, never with NO_COLOR set (even empty) or TERM=dumb") {
  CHECK(cli::colourWanted(true, nullptr, "xterm-256color"));
  CHECK(cli::colourWanted(true, nullptr, nullptr));
  CHECK_FALSE(cli::colourWanted(false, nullptr, "xterm"));
  CHECK_FALSE(cli::colourWanted(true, "1", "xterm"));
  CHECK_FALSE(cli::colourWanted(true, "", "xterm"));
  CHECK_FALSE(cli::colourWanted(true, nullptr, "dumb"));
}

TEST_CASE("the verdict is the first line after the file's name, and the findings follow") {
  const std::string text = render(contentWithOneProcess(), false);
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  CHECK(line == "== run.gwt ==");
  std::getline(lines, line);
  CHECK(line == "GPU idle 80.0% of the time; 100% of it waiting on the input pipeline (the host inside data loading); "
                "up to 5.00x faster if the GPU never waited");
  CHECK(text.find("findings   ranked by the idle time each explains") != std::string::npos);
  CHECK(text.find("1  Waiting on the input pipeline (the host inside data loading)   80.0 ms = 100% of idle") != std::string::npos);
  CHECK(text.find("fix  Have batches ready") != std::string::npos);
  CHECK(text.find("device 0   window 100 ms, busy 20.0 ms, idle 80.0 ms = 80.0% of the window") != std::string::npos);
  CHECK(text.find("4.1 ms - 8.19 ms") != std::string::npos);  // the gap histogram, with its bar
  CHECK(text.find("##############################") != std::string::npos);
}

TEST_CASE("notes follow the findings, with their fix, and stay out of the verdict") {
  RunReport content = contentWithOneProcess();
  content.analysis.processes[0].devices[0].leading_ns = 60'000 * kMs;  // a minute before the first kernel
  diagnoseReport(content.analysis);
  REQUIRE(content.analysis.processes[0].notes.size() == 1);
  const std::string text = render(content, false);
  const auto findings = text.find("findings   ranked by the idle time each explains");
  const auto notes = text.find("notes      worth a look, though none explains enough idle time to be a finding");
  REQUIRE(findings != std::string::npos);
  REQUIRE(notes != std::string::npos);
  CHECK(findings < notes);
  CHECK(text.find("1  In a long start-up before the first GPU work (compile, warm-up)", notes) != std::string::npos);
  CHECK(text.find("fix  Warm up before timing", notes) != std::string::npos);
  CHECK(text.find("GPU idle 80.0% of the time; 100% of it waiting on the input pipeline (the host inside data loading)") !=
        std::string::npos);
}

TEST_CASE("without colour there is no escape byte at all; with it, recorded strings stay escaped") {
  const RunReport content = contentWithOneProcess();
  const std::string plain = render(content, false);
  CHECK(plain.find('\x1b') == std::string::npos);
  CHECK(plain.find("evil\\x1b[2Jhost") != std::string::npos);

  const std::string coloured = render(content, true);
  CHECK(coloured.find("\x1b[1m") != std::string::npos);
  CHECK(coloured.find("\x1b[2J") == std::string::npos);
  CHECK(coloured.find("evil\\x1b[2Jhost") != std::string::npos);
}

TEST_CASE("a symbol-only recording says device idle is not measured and shows no window") {
  const std::string text = render(contentWithOneProcess(false), false);
  CHECK(text.find("Device idle time not measured") != std::string::npos);
  CHECK(text.find("CUPTI activity probe was not active") != std::string::npos);
  CHECK(text.find("device synchronize") != std::string::npos);
  CHECK(text.find("window") == std::string::npos);
  CHECK(text.find("idle gaps") == std::string::npos);
}

TEST_CASE("several recordings start with each rank's verdict and the cross-rank section") {
  RunReport content = contentWithOneProcess();
  content.analysis.processes[0].rank = 0;
  content.analysis.processes.push_back(content.analysis.processes[0]);
  content.analysis.processes[1].rank = 1;
  content.overviews.push_back(content.overviews[0]);
  content.files.push_back("rank1.gwt");
  // Rank 1 late in every collective, beyond the spread (the straggler test's arrival data).
  content.analysis.jobs = {{0, 1}};
  RankComparison job;
  job.processes = {0, 1};
  job.rank_waits = {{0, 1 * kMs, 2}, {1, 30 * kMs, 28, 0, 30, 15, 30, 1e6, 1e4, 20, 1'000'000, 10'000}};
  content.analysis.rank_comparisons = {job};
  diagnoseReport(content.analysis);
  const std::string text = render(content, false);
  CHECK(text.rfind("== 2 recordings, analysed together (one per rank) ==\nrank 0     GPU idle 80.0%", 0) == 0);
  CHECK(text.find("1  Waiting for rank 1 in collectives") != std::string::npos);
  CHECK(text.find("== rank1.gwt ==") != std::string::npos);
}

TEST_CASE("recordings of two jobs of two ranks each are compared job by job, never across jobs") {
  RunReport content = contentWithOneProcess();
  const ProcessAnalysis one = content.analysis.processes[0];
  content.analysis.processes.clear();
  content.overviews.assign(4, content.overviews[0]);
  content.files = {"a-rank0.gwt", "a-rank1.gwt", "b-rank0.gwt", "b-rank1.gwt"};
  for (int32_t k = 0; k < 4; ++k) {
    content.analysis.processes.push_back(one);
    content.analysis.processes.back().rank = k % 2;
  }
  content.analysis.jobs = {{0, 1}, {2, 3}};
  content.analysis.jobs_why = "their wall-clock windows do not overlap";
  // Job 1: rank 1 late in every collective; job 2: the ranks even.
  RankComparison late;
  late.processes = {0, 1};
  late.rank_waits = {{0, 1 * kMs, 2}, {1, 30 * kMs, 28, 0, 30, 15, 30, 1e6, 1e4, 20, 1'000'000, 10'000}};
  RankComparison even;
  even.processes = {2, 3};
  content.analysis.rank_comparisons = {late, even};
  diagnoseReport(content.analysis);
  REQUIRE(content.analysis.rank_comparisons[0].findings.size() == 1);
  CHECK(content.analysis.rank_comparisons[1].findings.empty());
  const std::string text = render(content, false);
  CHECK(text.rfind("== 4 recordings of 2 jobs ==\njobs       not one job: their wall-clock windows do not overlap\n", 0) ==
        0);
  const auto first = text.find("== job 1 of 2: 2 ranks compared ==\nfiles      a-rank0.gwt, a-rank1.gwt\n");
  const auto second = text.find("== job 2 of 2: 2 ranks compared ==\nfiles      b-rank0.gwt, b-rank1.gwt\n");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  REQUIRE(first < second);
  // The straggler is job 1's, said under job 1 only; job 2 has no collectives to compare.
  const auto straggler = text.find("1  Waiting for rank 1 in collectives");
  CHECK(straggler > first);
  CHECK(straggler < second);
  CHECK(text.find("ranks      no collective shared by the ranks was recorded", second) != std::string::npos);
  // Each job's table has its own two ranks, not four.
  const auto table = text.find("  rank ", first);
  REQUIRE(table != std::string::npos);
  const std::string job_one = text.substr(table, second - table);
  std::size_t rows = 0;
  for (auto at = job_one.find("\n  rank "); at != std::string::npos; at = job_one.find("\n  rank ", at + 1)) ++rows;
  CHECK(rows == 2);
  CHECK(text.find("give one job's files together") == std::string::npos);
}

TEST_CASE("the sync section counts sync points and their waiting, and a polling loop's polls") {
  RunReport content = contentWithOneProcess();
  SyncTypeStats loop;
  loop.kind = SyncPointKind::kQueryPolling;
  loop.count = 1;
  loop.total_ns = 20 * kMs;
  loop.polls = 74'395;
  loop.polling_ns = 26 * kMs;
  content.analysis.processes[0].sync_points.push_back(loop);
  const std::string text = render(content, false);
  CHECK(text.find("sync       2 sync points (host calls that wait for the device when it is busy), 23.0 ms waiting "
                  "in all") != std::string::npos);
  const auto row = text.find("  query polling ");
  REQUIRE(row != std::string::npos);
  CHECK(text.find("    74,395 polls over 26.0 ms", row) != std::string::npos);
}

TEST_CASE("the probes line names the libcupti version and its CUDA release, and none when CUPTI was not used") {
  RunReport content = contentWithOneProcess();
  ProcessAnalysis& p = content.analysis.processes[0];
  p.probes = {"cupti_activity"};
  p.cupti_version = 28;
  CHECK(render(content, false).find("cupti_activity (libcupti version 28, CUDA 12.9 Update 1)\n") != std::string::npos);
  p.cupti_version = 22;
  CHECK(render(content, false).find("(libcupti version 22, CUDA 12.4)") != std::string::npos);
  p.cupti_version = 130001;
  CHECK(render(content, false).find("(libcupti version 130001, CUDA 13.0)") != std::string::npos);
  p.cupti_unavailable = "libcupti reports version 21, gapwatch reads ...";
  p.cupti_version = 21;
  CHECK(render(content, false).find("libcupti version 21") == std::string::npos);
}

TEST_CASE("a split from sampled Python stacks says so, under host_cpu and in the finding, with the sampler's row") {
  RunReport content = contentWithOneProcess();
  ProcessAnalysis& p = content.analysis.processes[0];
  p.python_sampler = true;
  p.python_samples = 410;
  p.python_sample_misses = 7;
  DeviceAnalysis& d = p.devices[0];
  d.host_evidence = HostEvidence::kPythonSamples;
  d.python_samples = 400;
  d.host_part_labels[0] = {{"proj/train.py:42 in train", 60 * kMs}, {"proj/train.py:57 in train", 20 * kMs}};
  diagnoseReport(content.analysis);
  const std::string text = render(content, false);
  CHECK(text.find("    split by 400 sampled Python stacks\n") != std::string::npos);
  CHECK(text.find("unknown 0 ns (from 400 sampled Python stacks)") != std::string::npos);
  CHECK(text.find("proj/train.py:42 in train: 60.0 ms of idle, 75%; proj/train.py:57 in train: 20.0 ms of idle, 25%") !=
        std::string::npos);
  CHECK(text.find("410 samples of the launching thread's Python stack while it was outside CUDA calls; 7 could not be "
                  "read or kept") != std::string::npos);
}

TEST_CASE("a recording without the sampler has no sampler row and no split note") {
  const std::string text = render(contentWithOneProcess(), false);
  CHECK(text.find("py samples") == std::string::npos);
  CHECK(text.find("sampled Python") == std::string::npos);
}
