// tools/main.cpp: the `gapwatch` command line: parses arguments and runs one command.
//
// Commands live in <command>_command.{h,cpp}; this file only wires them to CLI11 and turns
// command-line mistakes into exit code 1 (docs/cli.md).
#include "collector/collector.h"
#include "tools/diff_command.h"
#include "tools/dump_command.h"
#include "tools/duration_text.h"
#include "tools/exit_codes.h"
#include "tools/export_command.h"
#include "tools/import_command.h"
#include "tools/profile_command.h"
#include "tools/report_command.h"
#include "tools/report_html.h"
#include "tools/report_json.h"
#include "tools/report_terminal.h"
#include "tools/text_format.h"
#include "tools/watch_command.h"

#include <gapwatch/recording_format.h>

#include <CLI/CLI.hpp>
#include <google/protobuf/stubs/logging.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

// libprotobuf logs to stderr when a string field of a frame is not valid UTF-8. The reader
// already turns every parse failure into one error line of its own; a second, library-worded
// line would break the "one line per error" rule.
void ignoreProtobufLog(google::protobuf::LogLevel /*level*/, const char* /*file*/, int /*line*/,
                       const std::string& /*message*/) {}

std::string versionText() {
  return std::string("gapwatch ") + gapwatch::kLibraryVersion + " (file format " +
         std::to_string(gapwatch::kFileFormatVersion) + ", wire protocol " +
         std::to_string(gapwatch::kWireVersion) + ")";
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = gapwatch::cli;
  google::protobuf::SetLogHandler(&ignoreProtobufLog);

  // Installed as gapwatchd too (a link to this binary): that name means `gapwatch collector`.
  std::vector<char*> daemon_argv;
  const char* slash = argc > 0 ? std::strrchr(argv[0], '/') : nullptr;
  if (argc > 0 && std::strcmp(slash ? slash + 1 : argv[0], "gapwatchd") == 0) {
    static char collector_word[] = "collector";
    daemon_argv.assign(argv, argv + argc);
    daemon_argv.insert(daemon_argv.begin() + 1, collector_word);
    argc = int(daemon_argv.size());
    argv = daemon_argv.data();
  }

  CLI::App app{"gapwatch: why is my GPU idle? Reads gapwatch recordings (.gwt files).", "gapwatch"};
  app.set_version_flag("--version", versionText(), "Print gapwatch's version and exit");
  app.require_subcommand(1);
  // --where answers without a command, as --version does: its callback runs while the command line
  // is parsed, before CLI11 asks for a command, and ends the parse with exit code 0.
  bool where = false;
  app.add_flag_callback(
      "--where",
      [&where] {
        where = true;
        throw CLI::Success();
      },
      "Print the path of libgapwatch.so (what gapwatch profile preloads) and exit: "
      "LD_PRELOAD=$(gapwatch --where) python train.py");
  app.failure_message([](const CLI::App* /*app*/, const CLI::Error& e) {
    return std::string("gapwatch: ") + e.what() + " (see gapwatch --help)\n";
  });

  cli::DumpOptions dump;
  CLI::App* dump_command =
      app.add_subcommand("dump", "List every record of a recording, one line each, in file order");
  dump_command->add_flag("--json", dump.json, "Write one JSON object per line instead of text");
  dump_command->add_option("FILE", dump.file, "A .gwt recording")->required();

  cli::ReportOptions report;
  std::string min_gap_text, launch_threshold_text;
  CLI::App* report_command = app.add_subcommand(
      "report", "Why the GPU was idle: the verdict, the causes ranked with their evidence and fix, and the numbers");
  report_command->add_flag("--json", report.json, "Write one JSON document (docs/report-json.md) instead of text");
  report_command->add_option("--html", report.html_path,
                             "Also write the report as one self-contained HTML page to this file (plots inline, "
                             "nothing fetched)");
  CLI::Option* hta_flag = report_command->add_flag("--hta", report.analysis.hta_view,
                           "Also give HTA's own numbers (temporal breakdown, idle per stream, launch statistics) with "
                           "HTA's conventions (docs/hta-parity.md)");
  report_command
      ->add_option_function<std::string>(
          "--hta-release",
          [&report](const std::string& release) {
            report.analysis.hta_release =
                release == "0.5.0" ? gapwatch::analysis::HtaRelease::k0_5_0 : gapwatch::analysis::HtaRelease::k0_6_1;
          },
          "Whose rules --hta follows: 0.6.1 (pip install traceinsight) or 0.5.0 (pip install "
          "HolisticTraceAnalysis); they differ only in which kernels count as computation")
      ->check(CLI::IsMember({"0.6.1", "0.5.0"}))
      ->default_str("0.6.1")
      ->needs(hta_flag);  // alone it would change nothing, silently
  report_command->add_option("--top", report.analysis.top_n, "How many longest gaps (and call sites) to list")
      ->check(CLI::Range(0u, 1000u))
      ->default_str(std::to_string(report.analysis.top_n));
  const CLI::Validator duration_check(
      [](std::string& text) {
        return cli::parseDuration(text) ? std::string() : "not a duration: give a number and a unit (30us, 1.5ms, 2s)";
      },
      "DURATION");
  report_command->add_option("--min-gap", min_gap_text, "List only gaps at least this long (they still count as idle)")
      ->check(duration_check)
      ->default_str("0us");
  report_command
      ->add_option("--launch-threshold", launch_threshold_text,
                   "A shorter gap while the host is outside any CUDA call is launch overhead, a longer one host CPU")
      ->check(duration_check)
      ->default_str("30us");
  std::vector<std::string> input_pipeline_frames;
  report_command
      ->add_option("--input-pipeline-frames", input_pipeline_frames,
                   "A sampled Python frame whose file path contains PATTERN is data loading (repeat it for "
                   "several); replaces the defaults (/datasets/, /webdataset/, /nvidia/dali/, /ray/data/), "
                   "'' for none; torch/utils/data/ always is")
      ->type_name("PATTERN")
      ->allow_extra_args(false);
  report_command
      ->add_option("FILE", report.files,
                   "One or more .gwt recordings or PyTorch profiler (Kineto) traces, .json or .json.gz "
                   "(several: one per rank)")
      ->required();

  cli::DiffOptions diff;
  std::string fail_if_slower_text;
  CLI::App* diff_command = app.add_subcommand(
      "diff", "Compare two runs: step time (with a test against noise), idle by cause, syncs, launches, NCCL, kernels");
  diff_command->add_flag("--json", diff.json, "Write one JSON document (docs/report-json.md) instead of text");
  diff_command->add_option("--html", diff.html_path, "Also write the comparison as one self-contained HTML page");
  diff_command
      ->add_option("--fail-if-slower", fail_if_slower_text,
                   "Exit 5 when B's mean step time is slower than A's by more than this (5%) and beyond noise")
      ->check(CLI::Validator(
          [](std::string& text) { return cli::parsePercent(text) ? std::string() : "not a percentage (5%, 0.5%)"; },
          "PERCENT"));
  diff_command->add_option("A", diff.before, "Run A (before): a recording, a trace, or a directory of them (one per rank)")
      ->required();
  diff_command->add_option("B", diff.after, "Run B (after): the same")->required();

  cli::ImportOptions import_options;
  CLI::App* import_command = app.add_subcommand(
      "import", "Write a PyTorch profiler (Kineto) trace as a .gwt recording that reports the same as the trace");
  import_command
      ->add_option("INPUT", import_options.inputs,
                   "A PyTorch profiler trace, .json or .json.gz; or the parts of one process's recording (the "
                   "collector's .gwt and the library's file for the rest, or their directory), written as one")
      ->required();
  import_command->add_option("-o,--output", import_options.output, "The .gwt file to write")->required();
  import_command->add_flag("--force", import_options.force, "Replace the output file if it exists");

  cli::ExportOptions export_options;
  CLI::App* export_command = app.add_subcommand(
      "export", "Write recordings or PyTorch profiler traces as a trace for Perfetto, chrome://tracing or HTA");
  export_command->add_option("--format", export_options.format, "perfetto (protobuf), chrome (JSON) or kineto (JSON)")
      ->check(CLI::IsMember({"perfetto", "chrome", "kineto"}))
      ->default_str("perfetto");
  export_command
      ->add_option("-o,--output", export_options.output,
                   "The file to write (.json.gz: gzip-compressed JSON); kineto with several inputs: a directory, "
                   "one trace per input")
      ->required();
  export_command
      ->add_option("FILE", export_options.files,
                   "One or more .gwt recordings or PyTorch profiler traces (several: one process per rank)")
      ->required();

  gapwatch::collector::CollectorOptions collector;
  std::string slow_peer_text;
  CLI::App* collector_command = app.add_subcommand(
      "collector", "Receive traced processes' streams on a Unix socket and write each to its own .gwt (also: gapwatchd)");
  // `gapwatchd --version`: the daemon's name must answer it too (a unit file, a package check).
  collector_command->set_version_flag("--version", versionText(), "Print gapwatch's version and exit");
  collector_command
      ->add_option("--socket", collector.socket_path,
                   "Socket to listen on (default: $XDG_RUNTIME_DIR/gapwatch/collector.sock, else "
                   "/tmp/gapwatch-<uid>/collector.sock); its directory must be 0700 and yours");
  collector_command
      ->add_option("--output-dir", collector.output_dir,
                   "Directory the recordings go to, made (0700, with its parents) if missing")
      ->default_str(".");
  collector_command->add_flag("--exit-when-idle", collector.exit_when_idle,
                              "Exit once a process has connected and every process has disconnected");
  collector_command
      ->add_option("--slow-peer-timeout", slow_peer_text,
                   "Close a connection that has begun a frame (or sent no Hello) and sent no whole frame for this long")
      ->check(duration_check)
      ->default_str("30s");
  CLI::Option* metrics_option = collector_command->add_option(
      "--metrics", collector.metrics_address,
      "Serve Prometheus metrics on http://ADDR:PORT/metrics: PORT or :PORT is loopback (127.0.0.1); another "
      "address only when given (0.0.0.0:9464, [::1]:9464); port 0 picks a free one (logged)");

  cli::ProfileOptions profile;
  // The install layout's path from bin to lib (tools/CMakeLists.txt): where libgapwatch.so is.
  profile.bin_to_lib = GAPWATCH_BIN_TO_LIB;
  CLI::App* profile_command = app.add_subcommand(
      "profile", "Run a command and every process it starts under gapwatch, then print the run's report");
  profile_command->add_option("-o,--output-dir", profile.output_dir,
                              "Where the recordings go: a new or empty directory (default: "
                              "gapwatch-profile-<YYYYmmdd-HHMMSS>[-N] in the current directory, always a new one)");
  profile_command->add_flag("--json", profile.json, "Print the report as one JSON document (docs/report-json.md)");
  profile_command->add_option("--html", profile.html_path,
                              "Also write the run's report as one self-contained HTML page to this file");
  profile_command->add_flag("--watch", profile.watch, "Show the live view while the command runs (gapwatch watch); on stderr when stdout is not a "
                            "terminal");
  profile_command->add_option("CMD", profile.command, "The command and its arguments, after --")->required();

  cli::WatchOptions watch;
  CLI::App* watch_command = app.add_subcommand(
      "watch", "Live view of a running collector: per process idle %, top finding, step time, syncs, drops");
  watch_command->add_option("--socket", watch.socket_path,
                            "The collector's socket (default: the collector's default, as for gapwatch collector)");
  watch_command->add_flag("--once", watch.once, "Print one status and exit");

  // A first word that is no command and no option: say the nearest command, rather than CLI11's
  // "A subcommand is required".
  std::vector<std::string> command_names;
  for (const CLI::App* sub : app.get_subcommands({})) command_names.push_back(sub->get_name());
  if (argc > 1 && argv[1][0] != '-' &&
      std::find(command_names.begin(), command_names.end(), argv[1]) == command_names.end()) {
    const std::vector<std::string>& names = command_names;
    const std::string nearest = cli::nearestWord(argv[1], names);
    std::cerr << "gapwatch: no command '" << cli::printable(argv[1]) << "'"
              << (nearest.empty() ? std::string() : "; did you mean '" + nearest + "'?") << " (see gapwatch --help)\n";
    return cli::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    if (e.get_exit_code() == 0) {
      if (where) {
        const auto library = cli::findInjectedLibrary("gapwatch --where", GAPWATCH_BIN_TO_LIB, std::cerr);
        if (!library) return cli::kExitUsage;
        std::cout << *library << '\n';
        return cli::kExitOk;
      }
      app.exit(e);
      return cli::kExitOk;
    }
    // The help that answers it is the command's own, where a command was given.
    const std::vector<CLI::App*> given = app.get_subcommands();
    const std::string help = given.empty() ? "gapwatch --help" : "gapwatch " + given.front()->get_name() + " --help";
    std::cerr << "gapwatch: " << e.what() << " (see " << help << ")\n";
    return cli::kExitUsage;
  }

  try {
    if (*dump_command) return cli::runDump(dump, std::cout, std::cerr);
    if (*report_command) {
      if (!min_gap_text.empty()) report.analysis.min_gap_ns = *cli::parseDuration(min_gap_text);
      if (!launch_threshold_text.empty()) {
        report.analysis.launch_threshold_ns = *cli::parseDuration(launch_threshold_text);
      }
      if (!input_pipeline_frames.empty()) {
        report.analysis.input_pipeline_frames.clear();
        for (const std::string& pattern : input_pipeline_frames) {
          if (!pattern.empty()) report.analysis.input_pipeline_frames.push_back(pattern);
        }
      }
      report.colour = cli::colourWanted(isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"), std::getenv("TERM"));
      return cli::runReport(report, std::cout, std::cerr);
    }
    if (*diff_command) {
      if (!fail_if_slower_text.empty()) diff.fail_if_slower = cli::parsePercent(fail_if_slower_text);
      return cli::runDiff(diff, std::cout, std::cerr);
    }
    if (*watch_command) return cli::runWatch(watch);
    if (*export_command) return cli::runExport(export_options, std::cerr);
    if (*import_command) return cli::runImport(import_options, std::cout, std::cerr);
    if (*collector_command) {
      if (!slow_peer_text.empty()) collector.slow_peer_timeout_ns = *cli::parseDuration(slow_peer_text);
      if (metrics_option->count() > 0 && collector.metrics_address.empty()) {
        std::cerr << "gapwatch: --metrics: give PORT, HOST:PORT or [IPv6]:PORT (see gapwatch collector --help)\n";
        return cli::kExitUsage;
      }
      if (collector.slow_peer_timeout_ns == 0) {
        std::cerr << "gapwatch: --slow-peer-timeout must be more than 0 (see gapwatch collector --help)\n";
        return cli::kExitUsage;
      }
      // The collector decides when and where reports are written; their formats are the CLI's.
      collector.write_text_report = [](const gapwatch::analysis::RunReport& content, std::ostream& out) {
        cli::writeTerminalReport(content, cli::TerminalStyle{false}, out);
      };
      collector.write_json_report = [](const gapwatch::analysis::RunReport& content, std::ostream& out) {
        cli::writeReportJson(content, out);
      };
      collector.write_html_report = [](const gapwatch::analysis::RunReport& content, std::ostream& out) {
        cli::writeHtmlReport(content, out);
      };
      return gapwatch::collector::runCollector(collector);
    }
    if (*profile_command) {
      profile.colour = cli::colourWanted(isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR"), std::getenv("TERM"));
      return cli::runProfile(profile, std::cout, std::cerr);
    }
  } catch (const std::exception& e) {
    std::cerr << "gapwatch: internal error: " << e.what() << '\n';
    return cli::kExitInternalError;
  }
  return cli::kExitUsage;
}
