// tests/unit/gwt_fixture_writer.cpp: writes the .gwt files the command-line tests run gapwatch on.
//
// Usage: gwt_fixture_writer DIR. Each file exercises one thing docs/cli.md promises: a complete
// recording, one cut short, one without Goodbye, newer versions, files that are not recordings,
// an oversized frame, a symbol-only recording, one with sampled Python stacks and one whose strings
// try to reach the terminal.

#include "gwt_test_writer.h"

#include <gapwatch/recording_format.h>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

namespace {

using namespace gapwatch;
using test::GwtBytes;

constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kS = 1'000'000'000;

// Two batches of a small training loop: launches and kernels on two streams, a pageable copy,
// stream syncs, an all-reduce, step markers, a drop counter.
void writeTrainingFrames(GwtBytes& gwt, uint64_t start_ns) {
  v1::Hello hello = test::makeHello(4242, start_ns);
  hello.set_rank(0);
  hello.set_local_rank(0);
  hello.set_world_size(2);
  hello.add_probes(v1::PROBE_NCCL_HOOKS);
  gwt.hello(hello);

  for (uint64_t sequence = 0; sequence < 2; ++sequence) {
    test::BatchContents batch;
    batch.sequence = sequence;
    batch.base_time_ns = start_ns + kS + sequence * 100 * kMs;
    if (sequence == 0) {
      batch.strings = {{v1::STRING_KIND_API_NAME, 1, "cudaLaunchKernel"},
                       {v1::STRING_KIND_API_NAME, 2, "cudaStreamSynchronize"},
                       {v1::STRING_KIND_API_NAME, 3, "cudaMemcpyAsync"},
                       {v1::STRING_KIND_KERNEL_NAME, 1, "_Z6matmulPfS_S_"},
                       {v1::STRING_KIND_THREAD_NAME, 100, "python"},
                       {v1::STRING_KIND_COMM, 1, "comm-5f3a"},
                       {v1::STRING_KIND_MARKER_NAME, 1, "train_step"}};
    }
    const uint64_t t0 = batch.base_time_ns;
    MarkerEvent step;
    step.kind = v1::MARKER_KIND_STEP_BEGIN;
    step.thread_id = 100;
    step.time_ns = t0;
    step.name_id = 1;
    step.step = sequence;
    batch.markers.push_back(step);

    ApiCallEvent copy_call = test::apiCall(v1::API_KIND_MEMCPY_ASYNC, 100, t0, t0 + 300 * kUs,
                                           true, 10 * sequence + 1);
    copy_call.api_name_id = 3;
    copy_call.bytes = 4 << 20;
    copy_call.copy_kind = v1::COPY_KIND_H2D;
    copy_call.src_memory = v1::MEMORY_KIND_PAGEABLE;
    copy_call.dst_memory = v1::MEMORY_KIND_DEVICE;
    copy_call.stream = 7;
    batch.api_calls.push_back(copy_call);
    DeviceActivityEvent copy = test::kernel(0, 7, t0 + 250 * kUs, t0 + 290 * kUs,
                                            copy_call.correlation_id);
    copy.kind = v1::ACTIVITY_KIND_MEMCPY;
    copy.bytes = copy_call.bytes;
    copy.copy_kind = v1::COPY_KIND_H2D;
    batch.activities.push_back(copy);

    for (uint64_t i = 0; i < 8; ++i) {
      const uint64_t launch = t0 + 400 * kUs + i * 20 * kUs;
      ApiCallEvent call = test::apiCall(v1::API_KIND_LAUNCH, 100, launch, launch + 4 * kUs, false,
                                        10 * sequence + 2 + i);
      call.api_name_id = 1;
      call.stream = 7 + i % 2;
      batch.api_calls.push_back(call);
      batch.activities.push_back(test::kernel(0, call.stream, launch + 10 * kUs,
                                              launch + 10 * kUs + (i % 2 ? 35 : 12) * kUs,
                                              call.correlation_id, 1));
    }
    ApiCallEvent sync = test::apiCall(v1::API_KIND_STREAM_SYNC, 100, t0 + 600 * kUs,
                                      t0 + 2 * kMs, true);
    sync.api_name_id = 2;
    sync.stream = 7;
    batch.api_calls.push_back(sync);

    NcclCallEvent all_reduce;
    all_reduce.op = v1::NCCL_OP_ALL_REDUCE;
    all_reduce.thread_id = 100;
    all_reduce.start_ns = t0 + 2 * kMs;
    all_reduce.end_ns = t0 + 2 * kMs + 15 * kUs;
    all_reduce.comm_id = 1;
    all_reduce.bytes = 1 << 20;
    all_reduce.count = 1 << 18;
    all_reduce.data_type = v1::NCCL_DATA_TYPE_FLOAT32;
    all_reduce.rank = 0;
    all_reduce.nranks = 2;
    all_reduce.stream = 9;
    batch.nccl_calls.push_back(all_reduce);
    batch.activities.push_back(test::kernel(0, 9, t0 + 2 * kMs + 20 * kUs, t0 + 5 * kMs));

    if (sequence == 1) batch.drops = {{v1::DROP_SOURCE_THREAD_RING, 100, 3}};
    gwt.batch(test::encodeBatch(batch));
  }
}

// A live recording with the Python sampler on: five steps of a loop whose thread waits 20 ms in the
// DataLoader between steps (a sample every 5 ms, one of them unreadable), then launches one kernel.
void writeSampledFrames(GwtBytes& gwt, uint64_t start_ns) {
  v1::Hello hello = test::makeHello(4242, start_ns);
  hello.add_probes(v1::PROBE_PYTHON_SAMPLER);
  gwt.hello(hello);
  test::BatchContents batch;
  batch.base_time_ns = start_ns + kS;
  batch.strings = {{v1::STRING_KIND_THREAD_NAME, 100, "python"},
                   {v1::STRING_KIND_PYTHON_STACK, 1,
                    "__next__\t/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\t631\n"
                    "train\t/home/ana/proj/train.py\t42\n"}};
  for (uint64_t step = 0; step < 5; ++step) {
    const uint64_t t0 = batch.base_time_ns + step * 22 * kMs;
    const uint64_t launch = t0 + 21 * kMs;
    for (uint64_t k = 1; k <= 4; ++k) {
      PythonSampleEvent sample{100, t0 + k * 5 * kMs, step == 2 && k == 2 ? 0u : 1u, 5 * kMs};
      batch.python_samples.push_back(sample);
    }
    batch.api_calls.push_back(test::apiCall(v1::API_KIND_LAUNCH, 100, launch, launch + 10 * kUs, false, step + 1));
    batch.activities.push_back(test::kernel(0, 7, launch + 20 * kUs, t0 + 22 * kMs + 500 * kUs, step + 1));
  }
  batch.drops = {{v1::DROP_SOURCE_PYTHON_SAMPLE, 6, 1}};
  gwt.batch(test::encodeBatch(batch));
}

v1::Goodbye normalGoodbye(uint64_t end_ns) {
  v1::Goodbye goodbye;
  goodbye.set_end_time_ns(end_ns);
  goodbye.set_exit_reason(v1::EXIT_REASON_NORMAL);
  goodbye.set_exit_status(0);  // known, as the recorder writes it since it records the status
  goodbye.set_batches(2);
  goodbye.set_events_dropped(3);
  return goodbye;
}

void write(const std::string& dir, const char* name, const std::string& bytes) {
  const std::string path = dir + "/" + name;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() ||
      std::fclose(file) != 0) {
    throw std::runtime_error("cannot write " + path);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gwt_fixture_writer DIR\n");
    return 1;
  }
  const std::string dir = argv[1];
  try {
    const uint64_t start = 100 * kS;

    GwtBytes good;
    writeTrainingFrames(good, start);
    good.goodbye(normalGoodbye(start + 2 * kS));
    write(dir, "good.gwt", good.bytes());

    // Cut inside the last batch, as a killed process leaves a file.
    const std::size_t last_batch_end = good.boundaries()[good.boundaries().size() - 2];
    write(dir, "truncated.gwt", good.bytes().substr(0, last_batch_end - 7));

    GwtBytes ended_early;
    writeTrainingFrames(ended_early, start);
    write(dir, "ended_early.gwt", ended_early.bytes());

    GwtBytes newer(kFileFormatVersion + 6);
    writeTrainingFrames(newer, start);
    write(dir, "newer_version.gwt", newer.bytes());

    GwtBytes newer_wire;
    v1::Hello hello = test::makeHello();
    hello.set_wire_version(kWireVersion + 1);
    newer_wire.hello(hello);
    write(dir, "newer_wire.gwt", newer_wire.bytes());

    write(dir, "not_recording.gwt", "name,value\nidle,42\n");
    write(dir, "empty.gwt", "");

    GwtBytes oversized;
    oversized.hello(test::makeHello());
    oversized.raw(test::varint(kMaxFrameBytes + 1)).raw("not this much");
    write(dir, "oversized_frame.gwt", oversized.bytes());

    GwtBytes symbol_only;
    v1::Hello hooks_hello = test::makeHello(4242, start);
    hooks_hello.clear_probes();
    hooks_hello.add_probes(v1::PROBE_CUDART_HOOKS);
    symbol_only.hello(hooks_hello);
    test::BatchContents host_only;
    host_only.base_time_ns = start;
    host_only.api_calls = {test::apiCall(v1::API_KIND_LAUNCH, 5, start, start + 5 * kUs),
                           test::apiCall(v1::API_KIND_DEVICE_SYNC, 5, start + 10 * kUs,
                                         start + 3 * kMs, true)};
    symbol_only.batch(test::encodeBatch(host_only));
    symbol_only.goodbye(normalGoodbye(start + kS));
    write(dir, "symbol_only.gwt", symbol_only.bytes());

    GwtBytes sampled;
    writeSampledFrames(sampled, start);
    v1::Goodbye sampled_goodbye = normalGoodbye(start + 2 * kS);
    sampled_goodbye.set_batches(1);
    sampled_goodbye.set_events_dropped(0);
    sampled.goodbye(sampled_goodbye);
    write(dir, "python_samples.gwt", sampled.bytes());

    // Strings that would drive a terminal if printed raw: ESC, a newline, a C1 control (CSI).
    GwtBytes hostile;
    v1::Hello hostile_hello = test::makeHello(4242, start);
    hostile_hello.set_host("evil\x1b[2J\nhost\xc2\x9b" "31m");
    hostile.hello(hostile_hello);
    test::BatchContents named;
    named.base_time_ns = start;
    named.strings = {{v1::STRING_KIND_KERNEL_NAME, 1, "kernel\x1b]0;title\x07"}};
    named.activities = {test::kernel(0, 1, start, start + kUs, 0, 1)};
    hostile.batch(test::encodeBatch(named));
    hostile.goodbye(normalGoodbye(start + kS));
    write(dir, "hostile_strings.gwt", hostile.bytes());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwt_fixture_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
