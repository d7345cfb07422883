// tests/unit/recording_in_memory.cpp: see recording_in_memory.h.
#include "recording_in_memory.h"

#include <functional>

namespace gapwatch::test {
namespace {

class Collector final : public RecordingVisitor {
 public:
  explicit Collector(ProcessRecording& into) : into_(into) {}

  void onHello(const v1::Hello& hello, uint64_t /*offset*/) override { into_.hello = hello; }

  void onBatch(const DecodedBatch& batch, const StringTable& /*strings*/) override {
    auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
    append(into_.api_calls, batch.api_calls);
    append(into_.activities, batch.activities);
    append(into_.nccl_calls, batch.nccl_calls);
    append(into_.markers, batch.markers);
    append(into_.host_ranges, batch.host_ranges);
    append(into_.python_samples, batch.python_samples);
    for (const DropCount& drop : batch.drops) into_.drops.update(drop);
  }

  void onGoodbye(const v1::Goodbye& goodbye, uint64_t /*offset*/) override {
    into_.goodbye = goodbye;
    for (const v1::DropCounter& d : goodbye.drops()) into_.drops.update({d.source(), d.id(), d.dropped()});
  }

 private:
  ProcessRecording& into_;
};

LoadedRecording load(const std::function<ReadResult(FrameSink&)>& read) {
  LoadedRecording loaded;
  Collector collector(loaded.recording);
  StreamDecoder decoder(collector);
  loaded.read = read(decoder);
  loaded.recording.strings = decoder.strings();
  loaded.recording.health = decoder.health();
  return loaded;
}

}  // namespace

LoadedRecording loadRecording(ByteSource& source) {
  return load([&](FrameSink& sink) { return readRecording(source, sink); });
}

LoadedRecording loadRecordingFile(const std::string& path) {
  return load([&](FrameSink& sink) { return readRecordingFile(path, sink); });
}

}  // namespace gapwatch::test
