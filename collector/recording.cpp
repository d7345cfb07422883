// collector/recording.cpp: see recording.h.
#include "collector/recording.h"

#include <utility>

namespace gapwatch {

void RecordingBuilder::onHello(const v1::Hello& hello, uint64_t /*offset*/) {
  recording_.hello = hello;
}

void RecordingBuilder::onBatch(const DecodedBatch& batch, const StringTable& /*strings*/) {
  auto append = [](auto& to, const auto& from) { to.insert(to.end(), from.begin(), from.end()); };
  append(recording_.api_calls, batch.api_calls);
  append(recording_.activities, batch.activities);
  append(recording_.nccl_calls, batch.nccl_calls);
  append(recording_.markers, batch.markers);
  for (const DropCount& drop : batch.drops) recording_.drops.update(drop);
}

void RecordingBuilder::onGoodbye(const v1::Goodbye& goodbye, uint64_t /*offset*/) {
  recording_.goodbye = goodbye;
  for (const v1::DropCounter& d : goodbye.drops()) {
    recording_.drops.update({d.source(), d.id(), d.dropped()});
  }
}

ProcessRecording RecordingBuilder::take(const StreamDecoder& decoder) {
  recording_.strings = decoder.strings();
  recording_.health = decoder.health();
  return std::exchange(recording_, ProcessRecording{});
}

namespace {

template <typename Read>
LoadedRecording load(Read&& read) {
  RecordingBuilder builder;
  StreamDecoder decoder(builder);
  LoadedRecording loaded;
  loaded.read = read(decoder);
  loaded.recording = builder.take(decoder);
  return loaded;
}

}  // namespace

LoadedRecording loadRecording(ByteSource& source) {
  return load([&](FrameSink& sink) { return readRecording(source, sink); });
}

LoadedRecording loadRecordingFile(const std::string& path) {
  return load([&](FrameSink& sink) { return readRecordingFile(path, sink); });
}

}  // namespace gapwatch
