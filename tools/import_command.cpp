// tools/import_command.cpp: see import_command.h.
#include "tools/import_command.h"

#include "reader/kineto_trace.h"
#include "reader/recording_parts.h"
#include "reader/stream_decoder.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/gwt_file_writer.h"
#include "tools/report_command.h"
#include "tools/html_page.h"
#include "tools/text_format.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

namespace gapwatch::cli {

namespace {

// The parts of one process's recording, read as `gapwatch report` reads them (one stream, each
// batch once), written as one recording.
int importRecordingParts(const ImportOptions& options, std::ostream& out, std::ostream& err) {
  const std::string output = printable(options.output);
  std::vector<std::string> files = options.inputs;
  if (!expandRunOperands(files, err, "gapwatch import")) return kExitBadRecording;
  for (const std::string& file : files) {
    if (fileLooksLikeKinetoTrace(file)) {
      err << printable(file) << ": a PyTorch profiler trace: import one trace alone, or the .gwt parts of one process\n";
      return kExitBadRecording;
    }
  }
  const std::vector<std::vector<std::size_t>> processes = groupRecordingParts(files);
  if (processes.size() != 1) {
    err << "gapwatch import: " << printable(files[processes[0][0]]) << " and " << printable(files[processes[1][0]])
        << " are not parts of one process (their Hellos differ in host, pid, rank or start, or one has none): "
           "import writes one process\n";
    return kExitBadRecording;
  }
  GwtFileWriter writer(options.output, options.force);
  writer.keepRecorderStream();
  if (!writer.open()) {
    err << output << ": " << writer.error() << '\n';
    return kExitCannotWrite;
  }
  StreamDecoder decoder(writer);
  int exit_code = kExitOk;
  for (std::size_t k = 0; k < processes[0].size(); ++k) {
    if (k > 0) decoder.beginPart();
    const std::string& file = files[processes[0][k]];
    exit_code = std::max(exit_code, printReadOutcome(file, readRecordingFile(file, decoder), err));
  }
  // Half a process is not the process: nothing is written when a part cannot be read.
  if (exit_code != kExitOk) return exit_code;
  if (!writer.commit()) {
    err << output << ": " << writer.error() << '\n';
    return writer.destinationExists() ? kExitUsage : kExitCannotWrite;
  }
  uint64_t batches = 0, duplicates = 0;
  for (const StreamHealth::Part& part : decoder.health().parts) duplicates += part.duplicate_batches;
  batches = decoder.health().batches;
  out << output << ": one process from " << formatCount(processes[0].size()) << " files: "
      << formatCount(batches) << " batches (" << formatCount(duplicates) << " in more than one part, written once), "
      << formatCount(decoder.health().batches_missing) << " missing; " << formatCount(writer.framesWritten())
      << " frames, " << formatCount(writer.bytesWritten()) << " bytes\n";
  return kExitOk;
}

}  // namespace

int runImport(const ImportOptions& options, std::ostream& out, std::ostream& err) {
  const std::string output = printable(options.output);
  struct stat st {};
  // Checked before the trace is read, so that a refusal costs nothing; commit() checks again.
  if (!outputPathUsable(options.output, "gapwatch import: -o ", err)) return kExitCannotWrite;
  if (!options.force && ::lstat(options.output.c_str(), &st) == 0) {
    err << output << ": exists (give --force to replace it)\n";
    return kExitUsage;
  }
  std::error_code dir_error;
  if (options.inputs.size() > 1 || std::filesystem::is_directory(options.inputs.front(), dir_error)) {
    return importRecordingParts(options, out, err);
  }
  const std::string& trace_path = options.inputs.front();
  if (!fileLooksLikeKinetoTrace(trace_path)) {
    FileByteSource probe(trace_path);
    if (!probe.isOpen()) {
      err << printable(trace_path) << ": " << probe.failure() << '\n';
    } else {
      err << printable(trace_path) << ": not a PyTorch profiler (Kineto) trace: not gzip or a JSON object\n";
    }
    return kExitBadRecording;
  }
  GwtFileWriter writer(options.output, options.force);
  if (!writer.open()) {
    err << output << ": " << writer.error() << '\n';
    return kExitCannotWrite;
  }
  const KinetoReadResult trace = readKinetoTraceFile(trace_path, writer);
  if (trace.read.error) return printReadOutcome(trace_path, trace.read, err);
  if (!writer.commit()) {
    err << output << ": " << writer.error() << '\n';
    return writer.destinationExists() ? kExitUsage : kExitCannotWrite;
  }
  const KinetoCounts& c = trace.counts;
  // The trace's polls are written as their loops (kineto_host_events.h).
  const uint64_t calls_written = c.api_calls - c.host.polls + c.host.poll_runs;
  out << output << ": " << formatCount(calls_written) << " API calls (" << formatCount(c.host.polls)
      << " polls written as " << formatCount(c.host.poll_runs) << " polling loops), " << formatCount(c.kernels + c.memcpys + c.memsets + c.syncs)
      << " device activities, " << formatCount(c.host.comms_calls + c.host.annotation_calls) << " NCCL calls (c10d ranges), "
      << formatCount(c.steps) << " steps; " << formatCount(writer.framesWritten()) << " frames, "
      << formatCount(writer.bytesWritten()) << " bytes\n";
  return kExitOk;
}

}  // namespace gapwatch::cli
