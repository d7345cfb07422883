// tools/import_command.cpp: see import_command.h.
#include "tools/import_command.h"

#include "reader/kineto_trace.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/gwt_file_writer.h"
#include "tools/text_format.h"

#include <sys/stat.h>

namespace gapwatch::cli {

int runImport(const ImportOptions& options, std::ostream& out, std::ostream& err) {
  const std::string output = printable(options.output);
  struct stat st {};
  // Checked before the trace is read, so that a refusal costs nothing; commit() checks again.
  if (!options.force && ::lstat(options.output.c_str(), &st) == 0) {
    err << output << ": exists (give --force to replace it)\n";
    return kExitUsage;
  }
  if (!fileLooksLikeKinetoTrace(options.trace)) {
    FileByteSource probe(options.trace);
    if (!probe.isOpen()) {
      err << printable(options.trace) << ": " << probe.failure() << '\n';
    } else {
      err << printable(options.trace) << ": not a PyTorch profiler (Kineto) trace: not gzip or a JSON object\n";
    }
    return kExitBadRecording;
  }
  GwtFileWriter writer(options.output, options.force);
  if (!writer.open()) {
    err << output << ": " << writer.error() << '\n';
    return kExitCannotWrite;
  }
  const KinetoReadResult trace = readKinetoTraceFile(options.trace, writer);
  if (trace.read.error) return printReadOutcome(options.trace, trace.read, err);
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
