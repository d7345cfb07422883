// tests/unit/stream_decoder_test.cpp: decoded events have the absolute values the recorder had:
// the running deltas of times and correlation ids and "thread_id 0 = same as before" are undone
// per list and per batch exactly as events.proto says, string definitions apply before the
// batch's events, and the stream's shape (Hello, sequence numbers, Goodbye) is checked.

#include <catch2/catch.hpp>

#include "reader/batch_encoder.h"
#include "reader/byte_source.h"
#include "recording_in_memory.h"
#include "reader/recording_parts.h"
#include "reader/stream_decoder.h"
#include "gwt_test_writer.h"

#include <gapwatch/recording_format.h>

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace gapwatch;
using test::GwtBytes;
using test::LoadedRecording;
using test::ProcessRecording;
using test::loadRecording;
using test::loadRecordingFile;

LoadedRecording load(const GwtBytes& gwt) {
  MemoryByteSource source(gwt.span());
  return loadRecording(source);
}

// Keeps every decoded batch as it was handed over, with the names resolvable at that moment.
class BatchCollector final : public RecordingVisitor {
 public:
  void onBatch(const DecodedBatch& batch, const StringTable& strings) override {
    batches.push_back(batch);
    for (const ApiCallEvent& call : batch.api_calls) {
      thread_names.push_back(strings.display(v1::STRING_KIND_THREAD_NAME, call.thread_id));
    }
  }
  std::vector<DecodedBatch> batches;
  std::vector<std::string> thread_names;
};

}  // namespace

TEST_CASE("times and correlation ids are running deltas from the batch's base, per list") {
  // Written by hand, not by the test encoder, so that the decoder is checked against the rules
  // and not against a second copy of itself.
  v1::EventBatch batch;
  batch.set_base_time_ns(10'000);
  auto* a = batch.add_api_calls();
  a->set_thread_id(5);
  a->set_start_delta_ns(100);  // 10'100
  a->set_duration_ns(50);
  a->set_correlation_delta(40);  // 40
  a = batch.add_api_calls();
  a->set_start_delta_ns(-30);  // 10'070: lists are not sorted
  a->set_duration_ns(0);
  a->set_correlation_delta(-2);  // 38
  a = batch.add_api_calls();
  a->set_start_delta_ns(1'000);  // 11'070
  a->set_correlation_delta(0);   // 38 again
  auto* k = batch.add_activities();
  k->set_kind(v1::ACTIVITY_KIND_KERNEL);
  k->set_start_delta_ns(7);  // 10'007: its own running time, from the base again
  k->set_duration_ns(3);
  k->set_correlation_delta(40);
  auto* m = batch.add_markers();
  m->set_kind(v1::MARKER_KIND_INSTANT);
  m->set_thread_id(9);
  m->set_time_delta_ns(-10'000);  // 0
  auto* n = batch.add_nccl_calls();
  n->set_thread_id(6);
  n->set_start_delta_ns(1);  // 10'001
  n->set_duration_ns(9);

  GwtBytes gwt;
  gwt.hello(test::makeHello()).batch(batch);
  const LoadedRecording loaded = load(gwt);
  REQUIRE(loaded.read.ok());
  const ProcessRecording& r = loaded.recording;

  REQUIRE(r.api_calls.size() == 3);
  CHECK(r.api_calls[0].start_ns == 10'100);
  CHECK(r.api_calls[0].end_ns == 10'150);
  CHECK(r.api_calls[0].correlation_id == 40);
  CHECK(r.api_calls[1].start_ns == 10'070);
  CHECK(r.api_calls[1].end_ns == 10'070);
  CHECK(r.api_calls[1].correlation_id == 38);
  CHECK(r.api_calls[2].start_ns == 11'070);
  CHECK(r.api_calls[2].correlation_id == 38);
  REQUIRE(r.activities.size() == 1);
  CHECK(r.activities[0].start_ns == 10'007);
  CHECK(r.activities[0].end_ns == 10'010);
  CHECK(r.activities[0].correlation_id == 40);
  REQUIRE(r.markers.size() == 1);
  CHECK(r.markers[0].time_ns == 0);
  REQUIRE(r.nccl_calls.size() == 1);
  CHECK(r.nccl_calls[0].start_ns == 10'001);
  CHECK(r.nccl_calls[0].end_ns == 10'010);
}

TEST_CASE("running values restart in every batch") {
  v1::EventBatch first;
  first.set_base_time_ns(1'000);
  first.add_api_calls()->set_start_delta_ns(5);
  first.mutable_api_calls(0)->set_correlation_delta(3);
  first.mutable_api_calls(0)->set_thread_id(77);
  v1::EventBatch second = first;
  second.set_sequence(1);
  second.set_base_time_ns(2'000);
  second.mutable_api_calls(0)->set_thread_id(0);  // no previous element in this batch

  GwtBytes gwt;
  gwt.hello(test::makeHello()).batch(first).batch(second);
  const LoadedRecording loaded = load(gwt);
  REQUIRE(loaded.recording.api_calls.size() == 2);
  CHECK(loaded.recording.api_calls[1].start_ns == 2'005);
  CHECK(loaded.recording.api_calls[1].correlation_id == 3);
  CHECK(loaded.recording.api_calls[1].thread_id == 0);
}

TEST_CASE("thread_id 0 repeats the previous element's thread, separately in each list") {
  v1::EventBatch batch;
  for (uint32_t tid : {11u, 0u, 12u, 0u, 0u}) batch.add_api_calls()->set_thread_id(tid);
  for (uint32_t tid : {0u, 21u, 0u}) batch.add_nccl_calls()->set_thread_id(tid);
  for (uint32_t tid : {31u, 0u}) batch.add_markers()->set_thread_id(tid);

  GwtBytes gwt;
  gwt.hello(test::makeHello()).batch(batch);
  const ProcessRecording r = load(gwt).recording;
  std::vector<uint32_t> api, nccl, markers;
  for (const auto& e : r.api_calls) api.push_back(e.thread_id);
  for (const auto& e : r.nccl_calls) nccl.push_back(e.thread_id);
  for (const auto& e : r.markers) markers.push_back(e.thread_id);
  CHECK(api == std::vector<uint32_t>{11, 11, 12, 12, 12});
  CHECK(nccl == std::vector<uint32_t>{0, 21, 21});
  CHECK(markers == std::vector<uint32_t>{31, 31});
}

TEST_CASE("events of several batches decode to exactly what the recorder encoded") {
  std::mt19937_64 random(7);
  GwtBytes gwt;
  gwt.hello(test::makeHello());
  std::vector<ApiCallEvent> api_calls;
  std::vector<DeviceActivityEvent> activities;
  std::vector<NcclCallEvent> nccl_calls;
  std::vector<MarkerEvent> markers;
  for (uint64_t sequence = 0; sequence < 5; ++sequence) {
    test::BatchContents batch;
    batch.sequence = sequence;
    batch.base_time_ns = 1'000'000'000 + sequence * 1'000'000;
    for (int i = 0; i < 50; ++i) {
      // Times around the base in both directions, threads that repeat and change.
      const uint64_t t = batch.base_time_ns - 500'000 + random() % 1'000'000;
      ApiCallEvent call = test::apiCall(static_cast<v1::ApiKind>(1 + random() % 18),
                                        1000 + static_cast<uint32_t>(random() % 3), t,
                                        t + random() % 10'000, random() % 2 == 0,
                                        random() % 5000);
      call.stream = random() % 4;
      call.bytes = random() % 100'000;
      call.api_name_id = static_cast<uint32_t>(random() % 10);
      batch.api_calls.push_back(call);
      DeviceActivityEvent activity =
          test::kernel(static_cast<uint32_t>(random() % 2), random() % 4, t, t + random() % 50'000,
                       random() % 5000, static_cast<uint32_t>(random() % 10));
      activity.graph_id = static_cast<uint32_t>(random() % 3);
      // A wait's named event (a trace's cuda_sync record), now and then.
      if (random() % 4 == 0) {
        activity.event_record_correlation_id = random() % 5000;
        activity.event_record_stream = random() % 30;
      }
      batch.activities.push_back(activity);
      NcclCallEvent nccl;
      nccl.op = v1::NCCL_OP_ALL_REDUCE;
      nccl.thread_id = 2000 + static_cast<uint32_t>(random() % 2);
      nccl.start_ns = t;
      nccl.end_ns = t + 77;
      nccl.bytes = random();
      nccl.rank = 1;
      nccl.nranks = 8;
      batch.nccl_calls.push_back(nccl);
      MarkerEvent marker;
      marker.kind = v1::MARKER_KIND_STEP_BEGIN;
      marker.thread_id = 3000 + static_cast<uint32_t>(random() % 2);
      marker.time_ns = t;
      marker.step = sequence * 50 + static_cast<uint64_t>(i);
      batch.markers.push_back(marker);
    }
    api_calls.insert(api_calls.end(), batch.api_calls.begin(), batch.api_calls.end());
    activities.insert(activities.end(), batch.activities.begin(), batch.activities.end());
    nccl_calls.insert(nccl_calls.end(), batch.nccl_calls.begin(), batch.nccl_calls.end());
    markers.insert(markers.end(), batch.markers.begin(), batch.markers.end());
    gwt.batch(test::encodeBatch(batch));
  }
  const LoadedRecording loaded = load(gwt);
  REQUIRE(loaded.read.ok());
  CHECK(loaded.recording.api_calls == api_calls);
  CHECK(loaded.recording.activities == activities);
  CHECK(loaded.recording.nccl_calls == nccl_calls);
  CHECK(loaded.recording.markers == markers);
  CHECK(loaded.recording.health.batches == 5);
  CHECK(loaded.recording.health.batches_missing == 0);
}

TEST_CASE("a batch's string definitions apply before its events and the last thread name wins") {
  test::BatchContents first;
  first.strings = {{v1::STRING_KIND_THREAD_NAME, 7, "main"},
                   {v1::STRING_KIND_API_NAME, 1, "cudaLaunchKernel"}};
  first.api_calls = {test::apiCall(v1::API_KIND_LAUNCH, 7, 10, 20)};
  first.api_calls[0].api_name_id = 1;
  test::BatchContents second;
  second.sequence = 1;
  second.strings = {{v1::STRING_KIND_THREAD_NAME, 7, "pt_main_thread"}};
  second.api_calls = {test::apiCall(v1::API_KIND_LAUNCH, 7, 30, 40)};

  GwtBytes gwt;
  gwt.hello(test::makeHello()).batch(test::encodeBatch(first)).batch(test::encodeBatch(second));
  BatchCollector collector;
  StreamDecoder decoder(collector);
  MemoryByteSource source(gwt.span());
  REQUIRE(readRecording(source, decoder).ok());

  CHECK(collector.thread_names == std::vector<std::string>{"main", "pt_main_thread"});
  CHECK(decoder.strings().display(v1::STRING_KIND_THREAD_NAME, 7) == "pt_main_thread");
  CHECK(decoder.strings().display(v1::STRING_KIND_API_NAME, 1) == "cudaLaunchKernel");
  REQUIRE(collector.batches.size() == 2);
  CHECK(collector.batches[0].strings.size() == 2);
}

TEST_CASE("ids are scoped by kind, and an id whose definition never came shows as a bare id") {
  StringTable strings;
  strings.define(v1::STRING_KIND_KERNEL_NAME, 1, "_Z6kernelv");
  strings.define(v1::STRING_KIND_API_NAME, 1, "cudaMemcpy");
  CHECK(strings.display(v1::STRING_KIND_KERNEL_NAME, 1) == "_Z6kernelv");
  CHECK(strings.display(v1::STRING_KIND_API_NAME, 1) == "cudaMemcpy");
  CHECK(strings.display(v1::STRING_KIND_KERNEL_NAME, 2) == "#2");
  CHECK(strings.display(v1::STRING_KIND_KERNEL_NAME, 0).empty());
  CHECK(strings.find(v1::STRING_KIND_COMM, 1) == nullptr);
}

TEST_CASE("gaps in batch sequence numbers count missing batches") {
  GwtBytes gwt;
  gwt.hello(test::makeHello());
  for (uint64_t sequence : {0, 1, 4, 5, 2}) {
    v1::EventBatch batch;
    batch.set_sequence(sequence);
    gwt.batch(batch);
  }
  const StreamHealth health = load(gwt).recording.health;
  CHECK(health.batches == 5);
  CHECK(health.batches_missing == 2);
  CHECK(health.batches_out_of_order == 1);
}

TEST_CASE("a Hello with a newer wire protocol version is refused naming both versions") {
  v1::Hello hello = test::makeHello();
  hello.set_wire_version(kWireVersion + 1);
  GwtBytes gwt;
  gwt.hello(hello);
  const LoadedRecording loaded = load(gwt);
  REQUIRE(loaded.read.error);
  CHECK(loaded.read.error->kind == ReadErrorKind::kUnsupportedVersion);
  CHECK(loaded.read.error->message ==
        "wire protocol version " + std::to_string(kWireVersion + 1) +
            " is newer than this gapwatch reads " +
            versionRangeText(kMinWireVersion, kWireVersion) + "; use a newer gapwatch");
  CHECK_FALSE(loaded.recording.hello);
}

TEST_CASE("frames out of place are decoded and counted") {
  GwtBytes gwt;
  gwt.batch(v1::EventBatch());  // before Hello
  gwt.hello(test::makeHello(1));
  gwt.hello(test::makeHello(2));  // a second Hello: ignored
  gwt.goodbye(v1::Goodbye());
  v1::EventBatch late;
  late.set_sequence(1);
  gwt.batch(late);  // after Goodbye
  const LoadedRecording loaded = load(gwt);
  REQUIRE(loaded.read.ok());
  const StreamHealth& health = loaded.recording.health;
  CHECK(health.frames_before_hello == 1);
  CHECK(health.extra_hellos == 1);
  CHECK(health.frames_after_goodbye == 1);
  CHECK(health.batches == 2);
  REQUIRE(loaded.recording.hello);
  CHECK(loaded.recording.hello->pid() == 1);
}

TEST_CASE("drop counters keep the latest total of each source and id, and Goodbye's are final") {
  test::BatchContents first;
  first.drops = {{v1::DROP_SOURCE_THREAD_RING, 7, 10}, {v1::DROP_SOURCE_CUPTI, 0, 3}};
  test::BatchContents second;
  second.sequence = 1;
  second.drops = {{v1::DROP_SOURCE_THREAD_RING, 7, 25}, {v1::DROP_SOURCE_THREAD_RING, 8, 1}};
  v1::Goodbye goodbye;
  auto* final_count = goodbye.add_drops();
  final_count->set_source(v1::DROP_SOURCE_CUPTI);
  final_count->set_id(0);
  final_count->set_dropped(5);

  GwtBytes gwt;
  gwt.hello(test::makeHello())
      .batch(test::encodeBatch(first))
      .batch(test::encodeBatch(second))
      .goodbye(goodbye);
  const ProcessRecording r = load(gwt).recording;
  CHECK(r.drops.total(v1::DROP_SOURCE_THREAD_RING) == 26);
  CHECK(r.drops.total(v1::DROP_SOURCE_CUPTI) == 5);
  CHECK(r.drops.total(v1::DROP_SOURCE_TRANSPORT) == 0);
}

TEST_CASE("a duration past the end of time ends the event at the last nanosecond, not before it") {
  v1::EventBatch batch;
  batch.set_base_time_ns(UINT64_MAX - 10);
  batch.add_activities()->set_duration_ns(100);
  GwtBytes gwt;
  gwt.hello(test::makeHello()).batch(batch);
  const ProcessRecording r = load(gwt).recording;
  REQUIRE(r.activities.size() == 1);
  CHECK(r.activities[0].start_ns == UINT64_MAX - 10);
  CHECK(r.activities[0].end_ns == UINT64_MAX);
}

TEST_CASE("python samples' times run over the batch's samples and thread 0 repeats the previous sample's") {
  // Written by hand: the decoder against events.proto's rules, not against the test encoder.
  v1::EventBatch batch;
  batch.set_base_time_ns(50'000);
  auto* s = batch.add_python_samples();
  s->set_thread_id(41);
  s->set_time_delta_ns(2'000);  // 52'000
  s->set_python_stack_id(3);
  s->set_period_ns(5'000'000);
  s = batch.add_python_samples();
  s->set_time_delta_ns(5'000);  // 57'000, thread 41 again
  s->set_python_stack_id(0);    // unreadable: kept, with no stack
  s->set_period_ns(5'000'000);
  s = batch.add_python_samples();
  s->set_thread_id(42);
  s->set_time_delta_ns(-1'000);  // 56'000: the list need not be sorted
  s->set_python_stack_id(4);
  s->set_period_ns(1'000'000);
  batch.add_api_calls()->set_start_delta_ns(7);  // 50'007: the calls keep their own running time

  GwtBytes gwt;
  gwt.hello(test::makeHello()).batch(batch);
  const LoadedRecording loaded = load(gwt);
  REQUIRE(loaded.read.ok());
  const std::vector<PythonSampleEvent> expected = {
      {41, 52'000, 3, 5'000'000}, {41, 57'000, 0, 5'000'000}, {42, 56'000, 4, 1'000'000}};
  CHECK(loaded.recording.python_samples == expected);
  REQUIRE(loaded.recording.api_calls.size() == 1);
  CHECK(loaded.recording.api_calls[0].start_ns == 50'007);
}

TEST_CASE("python samples decode to what was encoded on both decoding paths") {
  std::mt19937_64 random(11);
  test::BatchContents contents;
  contents.base_time_ns = 9'000'000'000;
  std::vector<PythonSampleEvent> samples;
  for (int i = 0; i < 40; ++i) {
    PythonSampleEvent e;
    e.thread_id = 500 + static_cast<uint32_t>(random() % 2);
    e.time_ns = contents.base_time_ns - 1'000'000 + random() % 20'000'000;
    e.python_stack_id = static_cast<uint32_t>(random() % 6);
    e.period_ns = 5'000'000;
    samples.push_back(e);
  }
  contents.python_samples = samples;
  v1::Frame frame;
  *frame.mutable_batch() = test::encodeBatch(contents);
  const std::string bytes = frame.SerializeAsString();

  // The fast path reads the frame's bytes; onFrame decodes libprotobuf's parse of them.
  BatchCollector fast, parsed;
  StreamDecoder fast_decoder(fast), parsed_decoder(parsed);
  REQUIRE(fast_decoder.takeFrameBytes({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, 0));
  REQUIRE_FALSE(parsed_decoder.onFrame(frame, 0));
  REQUIRE(fast.batches.size() == 1);
  REQUIRE(parsed.batches.size() == 1);
  CHECK(fast.batches[0].python_samples == samples);
  CHECK(parsed.batches[0].python_samples == samples);

  // And the batch encoder writes them back as they came: `gapwatch import` and the test writer keep
  // every sample.
  const v1::EventBatch again = encodeEventBatch(parsed.batches[0]);
  CHECK(again.SerializeAsString() == frame.batch().SerializeAsString());
}

// One process in two files (the collector's recording and the library's file for the rest, after
// the collector went away: reader/recording_parts.h), read as one stream.
namespace {

test::BatchContents partBatch(uint64_t sequence, uint64_t start_ns) {
  test::BatchContents b;
  b.sequence = sequence;
  b.api_calls = {test::apiCall(v1::API_KIND_LAUNCH, 7, start_ns, start_ns + 10)};
  b.api_calls[0].api_name_id = 1;
  return b;
}

struct PartsRead {
  BatchCollector collector;
  StreamHealth health;
  std::size_t goodbyes = 0;
};

// Reads `parts` through one decoder, beginPart() between them.
void readParts(const std::vector<GwtBytes>& parts, PartsRead& out) {
  class Visitor final : public RecordingVisitor {
   public:
    explicit Visitor(PartsRead& out) : out_(out) {}
    void onBatch(const DecodedBatch& batch, const StringTable& strings) override { out_.collector.onBatch(batch, strings); }
    void onGoodbye(const v1::Goodbye&, uint64_t) override { ++out_.goodbyes; }

   private:
    PartsRead& out_;
  } visitor(out);
  StreamDecoder decoder(visitor);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (k > 0) decoder.beginPart();
    MemoryByteSource source(parts[k].span());
    REQUIRE(readRecording(source, decoder).ok());
  }
  out.health = decoder.health();
}

}  // namespace

TEST_CASE("a process's parts read as one stream: each batch once, strings carried over, the seam counted") {
  test::BatchContents first = partBatch(0, 100);
  first.strings = {{v1::STRING_KIND_THREAD_NAME, 7, "main"}};
  GwtBytes collector_part;  // batches 0 to 2; the collector died before its receipt of 2
  collector_part.hello(test::makeHello()).batch(test::encodeBatch(first));
  collector_part.batch(test::encodeBatch(partBatch(1, 200))).batch(test::encodeBatch(partBatch(2, 300)));
  GwtBytes library_part;  // the Hello's copy, then from 2 on, and the Goodbye
  v1::Goodbye goodbye;
  goodbye.set_batches(5);
  library_part.hello(test::makeHello()).batch(test::encodeBatch(partBatch(2, 300)));
  library_part.batch(test::encodeBatch(partBatch(3, 400))).batch(test::encodeBatch(partBatch(4, 500))).goodbye(goodbye);

  PartsRead read;
  readParts({collector_part, library_part}, read);
  std::vector<uint64_t> sequences;
  for (const DecodedBatch& b : read.collector.batches) sequences.push_back(b.sequence);
  CHECK(sequences == std::vector<uint64_t>{0, 1, 2, 3, 4});
  // The thread's name came in the collector's part only.
  CHECK(read.collector.thread_names == std::vector<std::string>(5, "main"));
  CHECK(read.goodbyes == 1);
  CHECK(read.health.extra_hellos == 0);
  CHECK(read.health.batches_missing == 0);
  CHECK(read.health.batches_out_of_order == 0);
  REQUIRE(read.health.parts.size() == 2);
  CHECK(read.health.parts[0].batches == 3);
  CHECK(read.health.parts[0].last_sequence == 2);
  CHECK_FALSE(read.health.parts[0].goodbye);
  CHECK(read.health.parts[1].first_sequence == 2);
  CHECK(read.health.parts[1].last_sequence == 4);
  CHECK(read.health.parts[1].duplicate_batches == 1);
  CHECK(read.health.parts[1].duplicate_events == 1);
  CHECK(read.health.parts[1].missing_before == 0);
  CHECK(read.health.parts[1].goodbye);
}

TEST_CASE("parts with a gap between them, and both ending with the Goodbye") {
  v1::Goodbye goodbye;
  goodbye.set_batches(4);
  GwtBytes collector_part;
  collector_part.hello(test::makeHello()).batch(test::encodeBatch(partBatch(0, 100))).goodbye(goodbye);
  GwtBytes library_part;
  library_part.hello(test::makeHello()).batch(test::encodeBatch(partBatch(3, 400))).goodbye(goodbye);

  PartsRead read;
  readParts({collector_part, library_part}, read);
  CHECK(read.collector.batches.size() == 2);
  CHECK(read.goodbyes == 1);  // the second, the same, is left out
  CHECK(read.health.batches_missing == 2);
  CHECK(read.health.parts[1].missing_before == 2);
  CHECK(read.health.frames_after_goodbye == 1);  // the batch after the first part's Goodbye
}

TEST_CASE("parts are grouped by their Hello and ordered by their first batch, whatever order they are given in") {
  char dir_template[] = "/tmp/gapwatch-parts-test-XXXXXX";
  REQUIRE(mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  const v1::Hello hello = test::makeHello(4711, 2'000'000'000);
  v1::Hello execd = hello;  // the same pid after exec(): another start, another process
  execd.set_start_time_ns(3'000'000'000);
  v1::Hello other_rank = hello;
  other_rank.set_rank(1);
  GwtBytes collector_part, library_part, goodbye_only, after_exec, rank1;
  collector_part.hello(hello).batch(test::encodeBatch(partBatch(0, 100))).batch(test::encodeBatch(partBatch(1, 200)));
  library_part.hello(hello).batch(test::encodeBatch(partBatch(1, 200))).batch(test::encodeBatch(partBatch(2, 300)));
  goodbye_only.hello(hello).goodbye(v1::Goodbye{});
  after_exec.hello(execd).batch(test::encodeBatch(partBatch(0, 100)));
  rank1.hello(other_rank).batch(test::encodeBatch(partBatch(0, 100)));
  const std::vector<std::pair<std::string, const GwtBytes*>> written = {
      {dir + "/z-goodbye.gwt", &goodbye_only}, {dir + "/rest.gwt", &library_part}, {dir + "/exec.gwt", &after_exec},
      {dir + "/collector.gwt", &collector_part}, {dir + "/rank1.gwt", &rank1}};
  std::vector<std::string> files;
  for (const auto& [path, bytes] : written) {
    bytes->writeTo(path);
    files.push_back(path);
  }
  files.push_back(dir + "/rest.gwt");  // given twice: read twice, as asked
  const std::vector<std::vector<std::size_t>> groups = groupRecordingParts(files);
  for (const auto& [path, bytes] : written) std::remove(path.c_str());
  rmdir(dir.c_str());
  // The process's parts at the place of its first file: the collector's (batch 0), the library's
  // (from 1), the one that holds only the Goodbye; then the exec'd process, rank 1, the file again.
  const std::vector<std::vector<std::size_t>> expected = {{3, 1, 0}, {2}, {4}, {5}};
  CHECK(groups == expected);
}
