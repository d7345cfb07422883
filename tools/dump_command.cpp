// tools/dump_command.cpp: see dump_command.h.
//
// Two passes over the file: the first finds the earliest event, which the text form prints as
// time +0 (events are not in time order in the stream, so the first one read need not be the
// earliest); the second prints. Neither keeps more than one batch, so a dump of any length runs
// in little memory.
#include "tools/dump_command.h"

#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"
#include "tools/dump_json.h"
#include "tools/dump_text.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"

#include <algorithm>

namespace gapwatch::cli {
namespace {

class EarliestEventFinder final : public RecordingVisitor {
 public:
  void onHello(const v1::Hello& hello, uint64_t /*offset*/) override {
    hello_start_ns_ = hello.start_time_ns();
  }
  void onBatch(const DecodedBatch& batch, const StringTable& /*strings*/) override {
    for (const auto& e : batch.api_calls) note(e.start_ns);
    for (const auto& e : batch.activities) note(e.start_ns);
    for (const auto& e : batch.nccl_calls) note(e.start_ns);
    for (const auto& e : batch.markers) note(e.time_ns);
  }

  // The earliest event's time; without events, the recording's start.
  uint64_t reference() const { return found_ ? earliest_ns_ : hello_start_ns_; }

 private:
  void note(uint64_t t) {
    earliest_ns_ = found_ ? std::min(earliest_ns_, t) : t;
    found_ = true;
  }

  bool found_ = false;
  uint64_t earliest_ns_ = 0;
  uint64_t hello_start_ns_ = 0;
};

}  // namespace

int runDump(const DumpOptions& options, std::ostream& out, std::ostream& err) {
  uint64_t reference_ns = 0;
  if (!options.json) {
    EarliestEventFinder finder;
    StreamDecoder decoder(finder);
    const ReadResult first_pass = readRecordingFile(options.file, decoder);
    if (!hasContentToShow(first_pass)) return printReadOutcome(options.file, first_pass, err);
    reference_ns = finder.reference();
  }

  ReadResult result;
  if (options.json) {
    JsonDumpPrinter printer(out);
    StreamDecoder decoder(printer);
    result = readRecordingFile(options.file, decoder);
    // The end object says the dump is complete; a reader that does not see it knows it is not.
    if (!result.error) printer.printEnd(result.summary, decoder.health());
  } else {
    TextDumpPrinter printer(out, reference_ns);
    StreamDecoder decoder(printer);
    result = readRecordingFile(options.file, decoder);
    if (!result.error && result.summary.skipped_frames > 0) {
      out << "# skipped " << result.summary.skipped_frames
          << " empty frames or frames of a kind this gapwatch does not know\n";
    }
  }
  out.flush();
  return printReadOutcome(options.file, result, err);
}

}  // namespace gapwatch::cli
