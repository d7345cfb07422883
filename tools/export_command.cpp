// tools/export_command.cpp: see export_command.h.
#include "tools/export_command.h"

#include "export/gzip_output.h"
#include "export/json_trace_writer.h"
#include "export/perfetto_trace_writer.h"
#include "export/trace_export.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/report_command.h"
#include "tools/text_format.h"
#include "reader/recording_parts.h"

#include <gapwatch/output_file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <ext/stdio_filebuf.h>
#include <fstream>
#include <memory>

namespace gapwatch::cli {

namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One output file: `files` in `format` (gzip for .gz), streamed to a temporary file beside
// `output` that takes its name only once whole (gapwatch/output_file.h). Nothing is left at
// `output` when no input could be read or the writing failed: an export never half-exists.
int exportInto(const ExportOptions& options, const std::vector<std::string>& files, const std::string& output,
               std::ostream& err) {
  PendingOutputFile file;
  std::string error;
  if (!file.open(output, &error)) {
    err << output << ": cannot write: " << error << '\n';
    return kExitCannotWrite;
  }
  std::unique_ptr<std::ostream> stream;
  std::unique_ptr<__gnu_cxx::stdio_filebuf<char>> plain;
  exporter::GzipFileStream* gzip = nullptr;
  if (options.format != "perfetto" && endsWith(output, ".gz")) {
    auto compressed = std::make_unique<exporter::GzipFileStream>(file.fd());
    gzip = compressed.get();
    stream = std::move(compressed);
  } else {
    plain = std::make_unique<__gnu_cxx::stdio_filebuf<char>>(::dup(file.fd()), std::ios::out | std::ios::binary);
    stream = std::make_unique<std::ostream>(plain.get());
  }
  if (!*stream || (plain && !plain->is_open())) {
    err << output << ": cannot write: " << std::strerror(errno) << '\n';
    return kExitCannotWrite;
  }
  std::unique_ptr<exporter::TraceSink> sink;
  if (options.format == "perfetto") {
    sink = std::make_unique<exporter::PerfettoTraceWriter>(*stream);
  } else {
    sink = std::make_unique<exporter::JsonTraceWriter>(
        *stream, options.format == "kineto" ? exporter::JsonFlavour::kKineto : exporter::JsonFlavour::kChrome);
  }
  int exit_code = kExitOk;
  std::size_t read = 0;
  exporter::exportTrace(files, options.analysis, *sink, [&](const std::string& file_name, const ReadResult& outcome) {
    const int code = printReadOutcome(file_name, outcome, err);
    if (code < kExitBadRecording) ++read;
    exit_code = std::max(exit_code, code);
  });
  bool written = sink->finish();
  if (gzip) written = gzip->close() && written;
  if (plain) written = plain->close() != nullptr && written;
  if (!written) {
    err << output << ": cannot write: " << (errno ? std::strerror(errno) : "write failed") << '\n';
    return kExitCannotWrite;
  }
  // Each unreadable input has said so in its one line; nothing is written for none.
  if (read == 0) return std::max(exit_code, kExitBadRecording);
  if (!file.commit(/*durable=*/false, &error)) {
    err << output << ": cannot write: " << error << '\n';
    return kExitCannotWrite;
  }
  return exit_code;
}

// A Kineto trace holds one process: several inputs go to a directory, one trace per input, named
// after it (rank0.gwt -> rank0.json), as PyTorch's profiler writes one file per rank.
std::string kinetoTraceName(const std::string& input, bool gzip) {
  std::string name = std::filesystem::path(input).filename().string();
  for (const char* extension : {".json.gz", ".json", ".gwt"}) {
    if (endsWith(name, extension)) {
      name.resize(name.size() - std::strlen(extension));
      break;
    }
  }
  return name + (gzip ? ".json.gz" : ".json");
}

}  // namespace

int runExport(const ExportOptions& given, std::ostream& err) {
  // A directory is its recordings, as `gapwatch report DIR` reads it: a process's parts (the
  // collector's recording and the library's file for the rest) are one process in the export.
  ExportOptions options = given;
  if (!expandRunOperands(options.files, err, "gapwatch export")) return kExitBadRecording;
  const std::vector<std::vector<std::size_t>> processes =
      options.format == "kineto" ? groupRecordingParts(options.files) : std::vector<std::vector<std::size_t>>{};
  // The output is checked before any input is read: a bad -o costs no work and leaves nothing.
  std::string problem;
  if (options.format != "kineto" || processes.size() == 1) {
    if (!checkOutputPath(options.output, &problem)) {
      err << "gapwatch export: -o " << printable(options.output) << ": " << problem << '\n';
      return kExitCannotWrite;
    }
    return exportInto(options, options.files, options.output, err);
  }
  // One Kineto trace per process, in the directory -o names: made here unless it exists, and
  // removed again when no trace could be written into it.
  std::error_code error;
  const bool existed = std::filesystem::is_directory(options.output, error);
  std::string directory = options.output;  // "traces/": the directory traces
  while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
  if (!existed && !checkOutputPath(directory, &problem)) {
    err << "gapwatch export: -o " << printable(options.output) << ": " << problem << '\n';
    return kExitCannotWrite;
  }
  std::filesystem::create_directories(options.output, error);
  if (error || !std::filesystem::is_directory(options.output)) {
    err << options.output << ": cannot make the directory for one Kineto trace per input: "
        << (error ? error.message() : "not a directory") << '\n';
    return kExitCannotWrite;
  }
  int exit_code = kExitOk;
  for (const std::vector<std::size_t>& parts : processes) {
    std::vector<std::string> files;
    for (std::size_t i : parts) files.push_back(options.files[i]);
    const std::string output =
        (std::filesystem::path(options.output) / kinetoTraceName(files.front(), endsWith(options.output, ".gz"))).string();
    exit_code = std::max(exit_code, exportInto(options, files, output, err));
  }
  if (!existed) std::filesystem::remove(options.output, error);  // only when it stayed empty
  return exit_code;
}

}  // namespace gapwatch::cli
