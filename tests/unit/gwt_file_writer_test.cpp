// tests/unit/gwt_file_writer_test.cpp: tools/gwt_file_writer.h: a stream written as a .gwt reads
// back as the same stream; string definitions too large for one frame go ahead in batches of their
// own; an existing file is replaced only when asked; nothing is left behind when not committed.
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"
#include "tools/gwt_file_writer.h"

#include <gapwatch/recording_format.h>

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace gapwatch {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    char name[] = "/tmp/gapwatch_gwt_writer_XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    return names;
  }
};

struct Collected : RecordingVisitor {
  std::optional<v1::Hello> hello;
  std::optional<v1::Goodbye> goodbye;
  std::vector<StringDefinition> strings;
  std::vector<ApiCallEvent> calls;
  std::vector<NcclCallEvent> nccl;
  std::vector<uint64_t> sequences;
  void onHello(const v1::Hello& h, uint64_t) override { hello = h; }
  void onBatch(const DecodedBatch& b, const StringTable&) override {
    sequences.push_back(b.sequence);
    strings.insert(strings.end(), b.strings.begin(), b.strings.end());
    calls.insert(calls.end(), b.api_calls.begin(), b.api_calls.end());
    nccl.insert(nccl.end(), b.nccl_calls.begin(), b.nccl_calls.end());
  }
  void onGoodbye(const v1::Goodbye& g, uint64_t) override { goodbye = g; }
};

DecodedBatch batchWith(std::size_t strings, std::size_t string_bytes) {
  DecodedBatch b;
  b.base_time_ns = 1'000;
  for (std::size_t i = 0; i < strings; ++i) {
    b.strings.push_back({v1::STRING_KIND_KERNEL_NAME, static_cast<uint32_t>(i + 1), std::string(string_bytes, 'a' + i % 26)});
  }
  ApiCallEvent c;
  c.kind = v1::API_KIND_QUERY;
  c.thread_id = 3;
  c.start_ns = 1'500;
  c.end_ns = 2'500;
  c.bytes = 17;  // a merged poll run
  c.api_name_id = 1;
  b.api_calls.push_back(c);
  NcclCallEvent n;
  n.op = v1::NCCL_OP_ALL_REDUCE;
  n.thread_id = 3;
  n.start_ns = 1'200;
  n.end_ns = 9'000;
  n.bytes = 4096;
  n.count = 1024;
  n.nranks = 2;
  b.nccl_calls.push_back(n);
  return b;
}

void writeStream(cli::GwtFileWriter& writer, const DecodedBatch& batch) {
  v1::Hello hello;
  hello.set_wire_version(kWireVersion);
  hello.set_pid(77);
  hello.set_source(v1::STREAM_SOURCE_KINETO_TRACE);
  hello.set_clock(v1::CLOCK_DOMAIN_KINETO_US);
  writer.onHello(hello, 0);
  StringTable unused;
  writer.onBatch(batch, unused);
  v1::Goodbye goodbye;
  goodbye.set_end_time_ns(10'000);
  writer.onGoodbye(goodbye, 0);
}

TEST_CASE("a written stream reads back the same, its large string definitions split off", "[import]") {
  TempDir dir;
  const std::string path = (dir.path / "run.gwt").string();
  // 3 x 5 MiB of names: more than one 16 MiB frame holds with the events.
  const DecodedBatch batch = batchWith(3, 5u << 20);
  cli::GwtFileWriter writer(path, false);
  REQUIRE(writer.open());
  writeStream(writer, batch);
  REQUIRE(writer.commit());
  CHECK(dir.entries() == std::vector<std::string>{"run.gwt"});

  Collected got;
  StreamDecoder decoder(got);
  const ReadResult read = readRecordingFile(path, decoder);
  REQUIRE(read.ok());
  REQUIRE(got.hello);
  CHECK(got.hello->source() == v1::STREAM_SOURCE_KINETO_TRACE);
  CHECK(got.hello->clock() == v1::CLOCK_DOMAIN_KINETO_US);
  CHECK(got.strings == batch.strings);
  CHECK(got.calls == batch.api_calls);
  CHECK(got.nccl == batch.nccl_calls);
  REQUIRE(got.sequences.size() >= 2);  // the names went ahead in batches of their own
  for (std::size_t i = 0; i < got.sequences.size(); ++i) CHECK(got.sequences[i] == i);
  REQUIRE(got.goodbye);
  CHECK(got.goodbye->batches() == got.sequences.size());
  CHECK(decoder.health().batches_missing == 0);
  CHECK(writer.framesWritten() == got.sequences.size() + 2);
}

TEST_CASE("an existing file is replaced only when asked", "[import]") {
  TempDir dir;
  const std::string path = (dir.path / "run.gwt").string();
  std::ofstream(path) << "keep me";
  {
    cli::GwtFileWriter writer(path, false);
    REQUIRE(writer.open());
    writeStream(writer, batchWith(1, 10));
    CHECK_FALSE(writer.commit());
    CHECK(writer.error() == "exists (give --force to replace it)");
  }
  CHECK(dir.entries() == std::vector<std::string>{"run.gwt"});  // no temporary file left
  std::string kept;
  std::getline(std::ifstream(path), kept);
  CHECK(kept == "keep me");
  cli::GwtFileWriter writer(path, true);
  REQUIRE(writer.open());
  writeStream(writer, batchWith(1, 10));
  REQUIRE(writer.commit());
  Collected got;
  StreamDecoder decoder(got);
  CHECK(readRecordingFile(path, decoder).ok());
  CHECK(got.hello);
}

TEST_CASE("a writer that is not committed leaves nothing", "[import]") {
  TempDir dir;
  {
    cli::GwtFileWriter writer((dir.path / "run.gwt").string(), false);
    REQUIRE(writer.open());
    writeStream(writer, batchWith(1, 10));
  }
  CHECK(dir.entries().empty());
  cli::GwtFileWriter nowhere((dir.path / "no" / "such" / "run.gwt").string(), false);
  CHECK_FALSE(nowhere.open());
  CHECK(nowhere.error().starts_with("cannot create a file in "));
}

}  // namespace
}  // namespace gapwatch
