// tools/dump_json.h: `gapwatch dump --json FILE`: one JSON object per line, in stream order.
//
// Every object has "type" (hello, batch, string, api_call, activity, nccl_call, marker, drop,
// goodbye, end). Events carry absolute times in nanoseconds on Hello's clock, every schema field
// under its schema name (enum values as lower-case labels, or their number as a string when this
// build does not know them), and the names their ids refer to. Keys are the same on every object
// of a type, so tools such as jq need no defaults. docs/cli.md lists the fields.
#pragma once

#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"

#include <nlohmann/json.hpp>

#include <ostream>

namespace gapwatch::cli {

class JsonDumpPrinter final : public RecordingVisitor {
 public:
  explicit JsonDumpPrinter(std::ostream& out) : out_(out) {}

  void onHello(const v1::Hello& hello, uint64_t offset) override;
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override;
  void onGoodbye(const v1::Goodbye& goodbye, uint64_t offset) override;
  void onHeartbeat(const v1::Heartbeat& heartbeat, uint64_t offset) override;

  // The closing "end" object: how the read went (frames, skipped frames, truncation).
  void printEnd(const ReadSummary& summary, const StreamHealth& health);

 private:
  void print(const nlohmann::ordered_json& object);

  std::ostream& out_;
};

}  // namespace gapwatch::cli
