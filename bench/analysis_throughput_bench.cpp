// analysis_throughput_bench: how fast a recording is read and analysed, and with how much memory.
//   analysis_throughput_bench MODE FILE
// MODE parse:  frames decoded with libprotobuf and nothing else (the speed to compare with)
// MODE engine: the full read feeding the analysis engine with all its standard stages (what
//              `gapwatch report` runs)
// Prints events per second and the process's peak resident memory.
#include "bench/bench_clock.h"
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <string>
#include <vector>

#include "analysis/analysis_pipeline.h"
#include "reader/frame_decoder.h"
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"

using namespace gapwatch;

namespace {

double now_s() { return gapwatch::bench::nowSeconds(); }
long peak_rss_kb() { return gapwatch::bench::peakRssKb(); }

// Counts events in frames parsed by libprotobuf: the floor any reader pays.
class CountingSink final : public FrameSink {
 public:
  std::optional<ReadError> onFrame(const v1::Frame& frame, uint64_t) override {
    if (frame.has_batch()) {
      const auto& b = frame.batch();
      events += uint64_t(b.api_calls_size() + b.activities_size() + b.nccl_calls_size() + b.markers_size());
    }
    return std::nullopt;
  }
  uint64_t events = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "parse") && strcmp(argv[1], "engine"))) {
    fprintf(stderr, "usage: analysis_throughput_bench parse|engine FILE\n");
    return 1;
  }
  std::string mode = argv[1];
  double start = now_s();
  uint64_t events = 0;
  if (mode == "parse") {
    CountingSink sink;
    ReadResult r = readRecordingFile(argv[2], sink);
    if (!r.ok()) return fprintf(stderr, "%s\n", r.error->message.c_str()), 2;
    events = sink.events;
  } else {
    analysis::AnalysisPipeline pipeline;
    analysis::addStandardStages(pipeline);
    ReadResult read;
    analysis::ProcessAnalysis result = analysis::analyzeFile(argv[2], pipeline, &read);
    if (!read.ok()) return fprintf(stderr, "%s\n", read.error->message.c_str()), 2;
    double engine_s = now_s() - start;
    CountingSink count;  // the engine reports no event total: count them in a second, untimed pass
    readRecordingFile(argv[2], count);
    events = count.events;
    start = now_s() - engine_s;
  }
  double seconds = now_s() - start;
  printf("mode=%s events=%llu seconds=%.3f events_per_second=%.0f peak_rss_mb=%.1f\n", mode.c_str(),
         (unsigned long long)events, seconds, double(events) / seconds, peak_rss_kb() / 1024.0);
  return 0;
}
