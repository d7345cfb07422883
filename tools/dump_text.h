// tools/dump_text.h: `gapwatch dump FILE`: one readable line per event, in stream order.
//
// Each line is a time column (seconds relative to the recording's earliest event; blank for
// records without a time), a record type, then key=value fields with names resolved through the
// string table. Fields with nothing in them (a zero or unspecified value) are left out.
#pragma once

#include "reader/stream_decoder.h"

#include <cstdint>
#include <ostream>

namespace gapwatch::cli {

class TextDumpPrinter final : public RecordingVisitor {
 public:
  // `reference_ns`: the time printed as +0.
  TextDumpPrinter(std::ostream& out, uint64_t reference_ns) : out_(out), reference_ns_(reference_ns) {}

  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;
  void onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) override;

 private:
  std::ostream& startLine(const char* type);
  std::ostream& startLine(uint64_t time_ns, const char* type);

  std::ostream& out_;
  uint64_t reference_ns_;
};

}  // namespace gapwatch::cli
