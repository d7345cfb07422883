// tools/main.cpp: the `gapwatch` command line: parses arguments and runs one command.
//
// Commands live in <command>_command.{h,cpp}; this file only wires them to CLI11 and turns
// command-line mistakes into exit code 1 (docs/cli.md).
#include "tools/dump_command.h"
#include "tools/exit_codes.h"
#include "tools/report_command.h"

#include <gapwatch/recording_format.h>

#include <CLI/CLI.hpp>
#include <google/protobuf/stubs/logging.h>

#include <exception>
#include <iostream>
#include <string>

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

  CLI::App app{"gapwatch: why is my GPU idle? Reads gapwatch recordings (.gwt files).", "gapwatch"};
  app.set_version_flag("--version", versionText(), "Print gapwatch's version and exit");
  app.require_subcommand(1);
  app.failure_message([](const CLI::App* /*app*/, const CLI::Error& e) {
    return std::string("gapwatch: ") + e.what() + " (see gapwatch --help)\n";
  });

  cli::DumpOptions dump;
  CLI::App* dump_command =
      app.add_subcommand("dump", "List every record of a recording, one line each, in file order");
  dump_command->add_flag("--json", dump.json, "Write one JSON object per line instead of text");
  dump_command->add_option("FILE", dump.file, "A .gwt recording")->required();

  cli::ReportOptions report;
  CLI::App* report_command = app.add_subcommand(
      "report", "Device busy and idle time, idle gaps and sync points, per process and device");
  report_command->add_option("FILE", report.files, "One or more .gwt recordings")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version arrive here too, with exit code 0.
    const int code = app.exit(e);
    return code == 0 ? cli::kExitOk : cli::kExitUsage;
  }

  try {
    if (*dump_command) return cli::runDump(dump, std::cout, std::cerr);
    if (*report_command) return cli::runReport(report, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "gapwatch: internal error: " << e.what() << '\n';
    return cli::kExitInternalError;
  }
  return cli::kExitUsage;
}
