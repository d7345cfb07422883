// tests/fuzz/collector_connection_fuzz.cpp: libFuzzer target for the collector's side of a
// connection (collector/connection.*, collector/live_process.*): the bytes a peer sends.
//
// Input: what a peer sends (a whole .gwt file loses its header: its frames are a stream). The bytes
// go through a socketpair, in chunks of random sizes, into a Connection that checks them, writes
// the whole frames of an accepted stream to its .gwt and analyses them live. Then:
//   - a refused stream is refused with a reason, a status request is recognised, never a crash;
//   - an accepted one (a Hello first) left a file of whole frames: reading it back finds no
//     error and no truncation, the same frames, bytes and skipped frames the live analysis was
//     told of, and the same counts of events, devices and idle time: the live analysis saw
//     exactly the file.

#include "fuzz_check.h"

#include "analysis/run_analysis.h"
#include "collector/collector_log.h"
#include "collector/connection.h"

#include <google/protobuf/stubs/logging.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace {

void ignoreProtobufLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}

int outputDir() {
  static int dir_fd = [] {
    char path[] = "/tmp/gapwatch-connection-fuzz-XXXXXX";
    FUZZ_CHECK(mkdtemp(path) != nullptr, "a directory for the recordings");
    return ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }();
  return dir_fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gapwatch;
  google::protobuf::SetLogHandler(&ignoreProtobufLog);
  collector::silenceLog();
  uint64_t ignored_offset = 0;
  const std::span<const uint8_t> stream = fuzz::framesOf(std::span(data, size), ignored_offset);
  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0, "socketpair");
  const int dir_fd = outputDir();
  const analysis::AnalysisOptions options;
  const auto now = collector::Connection::Clock::now();
  collector::Connection connection(1, fds[0], 0, dir_fd, options, now);
  fuzz::SplitMix random(fuzz::seedOf(stream));

  bool open = true;
  std::size_t sent = 0;
  while (open && sent < stream.size()) {
    const std::size_t chunk = std::min<std::size_t>(stream.size() - sent, 1 + random.next() % 8192);
    const ssize_t n = ::send(fds[1], stream.data() + sent, chunk, MSG_NOSIGNAL);
    if (n > 0) sent += std::size_t(n);
    open = connection.readAvailable(now, 64);
  }
  ::close(fds[1]);
  while (open) open = connection.readAvailable(now, 64);
  FUZZ_CHECK(!connection.closeReason().empty(), "every end has a reason");

  if (connection.helloSeen()) {
    FUZZ_CHECK(!connection.wantsStatus(), "a process's stream is not a status request");
    const std::string name = connection.fileName();
    collector::FinishedProcess live = connection.finishProcess();
    const std::string path = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
    analysis::RunReport offline = analysis::analyseRecordingFiles({path}, options);
    ::unlinkat(dir_fd, name.c_str(), 0);
    FUZZ_CHECK(offline.inputs.size() == 1 && offline.inputs[0].status == "ok", "the file reads whole");
    const ReadSummary& file = offline.overviews.empty() ? ReadSummary{} : offline.overviews[0].read;
    FUZZ_CHECK(!offline.overviews.empty(), "the file has content to show");
    FUZZ_CHECK(live.read.summary.frames == file.frames, "the same frames");
    FUZZ_CHECK(live.read.summary.bytes_read == file.bytes_read, "the same bytes");
    FUZZ_CHECK(live.read.summary.skipped_frames == file.skipped_frames, "the same skipped frames");
    const analysis::RecordingOverview& a = live.outcome.overview;
    const analysis::RecordingOverview& b = offline.overviews[0];
    FUZZ_CHECK(a.api_calls == b.api_calls && a.activities == b.activities && a.nccl_calls == b.nccl_calls &&
                   a.markers == b.markers,
               "the same events");
    const analysis::ProcessAnalysis& p = live.outcome.analysis;
    const analysis::ProcessAnalysis& q = offline.analysis.processes[0];
    FUZZ_CHECK(p.devices.size() == q.devices.size(), "the same devices");
    for (std::size_t d = 0; d < p.devices.size(); ++d) {
      FUZZ_CHECK(p.devices[d].idle_ns == q.devices[d].idle_ns && p.devices[d].busy_ns == q.devices[d].busy_ns,
                 "the same idle and busy time");
    }
  } else if (!connection.wantsStatus()) {
    FUZZ_CHECK(connection.fileName().empty(), "no file before a Hello");
  }
  return 0;
}
