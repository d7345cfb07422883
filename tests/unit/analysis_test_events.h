// tests/unit/analysis_test_events.h: builds event streams for the analysis engine's tests.
//
// EngineFeed collects events into batches exactly as a StreamDecoder would hand them over (each
// batch in the order given, which need not be time order), runs them through an AnalysisPipeline
// with the standard stages and returns the ProcessAnalysis. Times in the tests are written in
// microseconds (us(...)) so the hand computations stay readable.
#pragma once

#include "analysis/analysis_pipeline.h"
#include "reader/events.h"

#include <gapwatch/v1/stream.pb.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gapwatch::analysis::test {

constexpr uint64_t us(uint64_t v) { return v * 1'000; }
constexpr uint64_t ms(uint64_t v) { return v * 1'000'000; }

inline ApiCallEvent call(v1::ApiKind kind, uint32_t thread_id, uint64_t enter_ns, uint64_t exit_ns,
                         uint64_t correlation_id = 0, bool blocked = false, uint64_t stream = 7) {
  ApiCallEvent e;
  e.kind = kind;
  e.thread_id = thread_id;
  e.start_ns = enter_ns;
  e.end_ns = exit_ns;
  e.correlation_id = correlation_id;
  e.blocked = blocked;
  e.stream = stream;
  e.domain = v1::API_DOMAIN_RUNTIME;
  return e;
}

inline ApiCallEvent launch(uint32_t thread_id, uint64_t enter_ns, uint64_t exit_ns, uint64_t correlation_id,
                           uint64_t stream = 7) {
  return call(v1::API_KIND_LAUNCH, thread_id, enter_ns, exit_ns, correlation_id, false, stream);
}

inline DeviceActivityEvent work(v1::ActivityKind kind, uint64_t start_ns, uint64_t end_ns, uint64_t correlation_id,
                                uint64_t stream = 7, uint32_t device = 0) {
  DeviceActivityEvent e;
  e.kind = kind;
  e.device = device;
  e.stream = stream;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.correlation_id = correlation_id;
  return e;
}

inline HostRangeEvent hostRange(v1::HostRangeKind kind, uint32_t thread_id, uint64_t start_ns, uint64_t end_ns,
                                uint32_t name_id = 0) {
  return {kind, thread_id, start_ns, end_ns, name_id};
}

inline DeviceActivityEvent kernelAt(uint64_t start_ns, uint64_t end_ns, uint64_t correlation_id, uint64_t stream = 7,
                                    uint32_t device = 0) {
  return work(v1::ACTIVITY_KIND_KERNEL, start_ns, end_ns, correlation_id, stream, device);
}

inline DeviceActivityEvent copyAt(uint64_t start_ns, uint64_t end_ns, uint64_t correlation_id,
                                  v1::MemoryKind host_side, v1::CopyKind direction = v1::COPY_KIND_H2D) {
  DeviceActivityEvent e = work(v1::ACTIVITY_KIND_MEMCPY, start_ns, end_ns, correlation_id);
  e.copy_kind = direction;
  e.src_memory = direction == v1::COPY_KIND_H2D ? host_side : v1::MEMORY_KIND_DEVICE;
  e.dst_memory = direction == v1::COPY_KIND_H2D ? v1::MEMORY_KIND_DEVICE : host_side;
  return e;
}

inline NcclCallEvent ncclCall(uint32_t thread_id, uint64_t enter_ns, uint64_t exit_ns) {
  NcclCallEvent e;
  e.op = v1::NCCL_OP_ALL_REDUCE;
  e.thread_id = thread_id;
  e.start_ns = enter_ns;
  e.end_ns = exit_ns;
  return e;
}

// A sample of a thread's Python stack at `time_ns` (python_stack_id 0: not readable).
inline PythonSampleEvent pythonSample(uint32_t thread_id, uint64_t time_ns, uint32_t python_stack_id,
                                      uint64_t period_ns) {
  return {thread_id, time_ns, python_stack_id, period_ns};
}

// A Hello with the CUPTI probes (device timeline) or the symbol hooks only; `python_sampler` adds
// the sampler's probe.
inline v1::Hello helloFor(bool device_timeline, uint64_t process_start_ns = 0, bool python_sampler = false) {
  v1::Hello hello;
  hello.set_pid(4242);
  hello.set_host("testhost");
  if (device_timeline) {
    hello.add_probes(v1::PROBE_CUPTI_RUNTIME_CALLBACKS);
    hello.add_probes(v1::PROBE_CUPTI_ACTIVITY);
  } else {
    hello.add_probes(v1::PROBE_CUDART_HOOKS);
  }
  if (python_sampler) hello.add_probes(v1::PROBE_PYTHON_SAMPLER);
  hello.set_process_start_ns(process_start_ns);
  return hello;
}

class EngineFeed {
 public:
  explicit EngineFeed(AnalysisOptions options = {}) : options_(options) { batches_.emplace_back(); }

  EngineFeed& add(const ApiCallEvent& e) { return batches_.back().api_calls.push_back(e), *this; }
  EngineFeed& add(const DeviceActivityEvent& e) { return batches_.back().activities.push_back(e), *this; }
  EngineFeed& add(const NcclCallEvent& e) { return batches_.back().nccl_calls.push_back(e), *this; }
  EngineFeed& add(const MarkerEvent& e) { return batches_.back().markers.push_back(e), *this; }
  EngineFeed& add(const HostRangeEvent& e) { return batches_.back().host_ranges.push_back(e), *this; }
  EngineFeed& add(const PythonSampleEvent& e) { return batches_.back().python_samples.push_back(e), *this; }
  // The Hello lists the Python sampler's probe (a live recording with the sampler on).
  EngineFeed& withSampler() { return python_sampler_ = true, *this; }
  // Defines a name (kernel, API call, marker) in the current batch, as a recording would.
  EngineFeed& name(v1::StringKind kind, uint32_t id, std::string text) {
    return batches_.back().strings.push_back({kind, id, std::move(text)}), *this;
  }
  // Later events go in a new batch (delivered after everything added so far).
  EngineFeed& nextBatch() { return batches_.emplace_back(), *this; }

  ProcessAnalysis run(bool device_timeline = true, uint64_t process_start_ns = 0) const {
    AnalysisPipeline pipeline(options_);
    addStandardStages(pipeline);
    pipeline.onHello(helloFor(device_timeline, process_start_ns, python_sampler_), 0);
    StringTable strings;
    for (const DecodedBatch& batch : batches_) {
      for (const StringDefinition& s : batch.strings) strings.define(s.kind, s.id, s.text);
      pipeline.onBatch(batch, strings);
    }
    StreamHealth health;
    health.has_hello = true;
    health.has_goodbye = true;
    return pipeline.finish(ReadResult{}, health);
  }

 private:
  AnalysisOptions options_;
  std::vector<DecodedBatch> batches_;
  bool python_sampler_ = false;
};

inline uint64_t cause(const DeviceAnalysis& device, IdleCause c) {
  return device.idle_by_cause_ns[static_cast<std::size_t>(c)];
}

inline uint64_t causeSum(const DeviceAnalysis& device) {
  uint64_t sum = 0;
  for (uint64_t v : device.idle_by_cause_ns) sum += v;
  return sum;
}

}  // namespace gapwatch::analysis::test
