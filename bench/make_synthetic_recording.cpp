// make_synthetic_recording: writes a .gwt of N events shaped like a launch-heavy training loop
// (each step: data-loading idle, hundreds of short kernels on two streams with their launch calls,
// a pinned copy, an .item()-style sync), for the analysis throughput benchmark. Written with the
// injected library's own encoder, so the bytes are what a real recording holds.
//   make_synthetic_recording OUT.gwt EVENTS
#include <stdio.h>
#include <stdlib.h>

#include <random>
#include <string>

#include <gapwatch/recording_format.h>

#include "frame_encoder.h"

using namespace gapwatch;

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_synthetic_recording OUT.gwt EVENTS\n");
    return 1;
  }
  uint64_t target = strtoull(argv[2], nullptr, 10);
  FILE* out = fopen(argv[1], "wb");
  if (!out) {
    perror(argv[1]);
    return 1;
  }
  std::string bytes(reinterpret_cast<const char*>(kFileMagic), sizeof kFileMagic);
  for (int i = 0; i < 4; ++i) bytes.push_back(char((kFileFormatVersion >> (8 * i)) & 0xff));
  FrameEncoder encoder;
  HelloInfo hello;
  hello.pid = 4242;
  hello.host = "synthetic";
  hello.probes = {wire::Probe::kCuptiRuntimeCallbacks, wire::Probe::kCuptiDriverCallbacks,
                  wire::Probe::kCuptiActivity};
  hello.start_time_ns = 1000000000;
  encoder.hello(hello, bytes);

  std::mt19937_64 rng(42);
  constexpr int kKernelNames = 64;
  BatchContent batch;
  for (int k = 0; k < kKernelNames; ++k)
    batch.strings.push_back({uint32_t(k + 1), wire::StringKind::kKernelName,
                             "_Z" + std::to_string(10 + k % 10) + "sim_kernel" + std::to_string(k) + "v"});
  constexpr uint32_t kApiName = wire::StringKind::kApiName;
  batch.strings.push_back({1, kApiName, "cudaLaunchKernel"});
  batch.strings.push_back({2, kApiName, "cudaStreamSynchronize"});
  batch.strings.push_back({3, kApiName, "cudaMemcpyAsync"});

  uint64_t host = 1001000000, device_free[2] = {0, 0}, correlation = 1, events = 0, sequence = 0;
  auto api = [&](uint8_t kind, uint64_t start, uint64_t end, uint32_t name, bool blocked) {
    ApiCallFields e;
    e.kind = kind;
    e.thread_id = 777;
    e.start_ns = start, e.end_ns = end;
    e.correlation_id = correlation;
    e.api_name_id = name;
    e.blocked = blocked;
    batch.api_calls.push_back(e);
  };
  auto activity = [&](uint8_t kind, int stream, uint64_t earliest, uint64_t duration, uint32_t name) {
    DeviceActivityFields e;
    e.kind = kind;
    e.stream = stream ? 13 : 7;
    e.start_ns = std::max(earliest, device_free[stream]);
    e.end_ns = e.start_ns + duration;
    device_free[stream] = e.end_ns;
    e.correlation_id = correlation;
    e.name_id = name;
    batch.activities.push_back(e);
    return e.end_ns;
  };
  uint64_t frames_bytes = 0;
  while (events < target) {
    host += 2000000 + rng() % 3000000;  // the data pipeline: 2-5 ms of host work, the GPU idles
    for (int i = 0; i < 500 && events < target; ++i) {
      uint64_t enter = host, exit = host + 3000 + rng() % 2000;
      api(wire::ApiKind::kLaunch, enter, exit, 1, false);
      activity(wire::ActivityKind::kKernel, i % 7 == 0, exit + 2000, 2000 + rng() % 30000,
               uint32_t(1 + rng() % kKernelNames));
      ++correlation;
      host = exit + 1000 + rng() % 20000;
      events += 2;
    }
    uint64_t enter = host, exit = host + 5000;
    api(wire::ApiKind::kMemcpyAsync, enter, exit, 3, false);
    activity(wire::ActivityKind::kMemcpy, 1, exit + 1000, 50000, 0);
    ++correlation;
    uint64_t done = std::max(device_free[0], device_free[1]);
    api(wire::ApiKind::kStreamSync, host + 6000, std::max(done, host + 8000) + 3000, 2, true);
    ++correlation;
    host = std::max(done, host + 8000) + 3000;
    events += 3;
    if (batch.api_calls.size() >= 4000) {
      batch.sequence = sequence++;
      encoder.batch(batch, bytes);
      batch = BatchContent{};
    }
    if (bytes.size() > (64u << 20)) {
      fwrite(bytes.data(), 1, bytes.size(), out);
      frames_bytes += bytes.size();
      bytes.clear();
    }
  }
  batch.sequence = sequence++;
  encoder.batch(batch, bytes);
  GoodbyeInfo bye;
  bye.end_time_ns = host;
  bye.batches = sequence;
  encoder.goodbye(bye, bytes);
  fwrite(bytes.data(), 1, bytes.size(), out);
  frames_bytes += bytes.size();
  fclose(out);
  printf("wrote %llu events in %llu batches, %.1f MB (%.1f bytes/event)\n", (unsigned long long)events,
         (unsigned long long)sequence, frames_bytes / 1e6, double(frames_bytes) / double(events));
  return 0;
}
