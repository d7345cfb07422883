// A hang from the recorder's last heartbeat (analysis/hang.h): what is still in progress at the end
// of a stream without Goodbye, what later batches strike out, and the window it extends.
#include "analysis/hang.h"

#include <catch2/catch.hpp>

using namespace gapwatch;
using namespace gapwatch::analysis;

namespace {

constexpr uint64_t kMs = 1000000;

v1::Heartbeat heartbeatAt(uint64_t time_ns) {
  v1::Heartbeat h;
  h.set_time_ns(time_ns);
  v1::CallInProgress* call = h.add_calls();
  call->set_thread_id(7);
  call->set_start_ns(100 * kMs);
  call->set_correlation_id(42);
  call->set_api_name("cudaDeviceSynchronize");
  v1::UnfinishedLaunch* launch = h.add_unfinished();
  launch->set_correlation_id(41);
  launch->set_launch_ns(90 * kMs);
  launch->set_kernel_name("_Z7endlessv");
  launch->set_thread_id(7);
  return h;
}

}  // namespace

TEST_CASE("a stream that ends without Goodbye inside a call is a hang on that call and its kernel") {
  HangTracker tracker;
  tracker.onHeartbeat(heartbeatAt(1000 * kMs), 0);
  std::optional<Hang> hang = tracker.finish(1200 * kMs);
  REQUIRE(hang);
  REQUIRE(hang->calls.size() == 1);
  CHECK(hang->calls[0].api_name == "cudaDeviceSynchronize");
  REQUIRE(hang->kernels.size() == 1);
  const Finding note = hangNote(*hang, 0);
  CHECK(note.id == "hang");
  CHECK(note.title == "hung in cudaDeviceSynchronize for 1.10 s waiting for kernel _Z7endlessv (launched at +90.0 ms, "
                      "never finished)");
}

TEST_CASE("a call that returned and a kernel that finished after the last heartbeat are no hang") {
  HangTracker tracker;
  tracker.onHeartbeat(heartbeatAt(1000 * kMs), 0);
  DecodedBatch later;
  ApiCallEvent call;
  call.thread_id = 7;
  call.start_ns = 100 * kMs;
  call.correlation_id = 42;
  later.api_calls.push_back(call);
  DeviceActivityEvent kernel;
  kernel.kind = v1::ACTIVITY_KIND_KERNEL;
  kernel.correlation_id = 41;
  later.activities.push_back(kernel);
  tracker.onBatch(later, StringTable{});
  CHECK_FALSE(tracker.finish(1200 * kMs));
}

TEST_CASE("a stream with Goodbye is no hang, whatever its heartbeats showed") {
  HangTracker tracker;
  tracker.onHeartbeat(heartbeatAt(1000 * kMs), 0);
  tracker.onGoodbye(v1::Goodbye{}, 0);
  CHECK_FALSE(tracker.finish(1200 * kMs));
}

TEST_CASE("with a kernel unfinished the device window runs to the end of the recording, the tail busy") {
  ProcessAnalysis process;
  DeviceAnalysis device;
  device.window_start_ns = 10 * kMs;
  device.window_end_ns = 20 * kMs;
  device.busy_ns = 8 * kMs;
  device.idle_ns = 2 * kMs;
  process.devices.push_back(device);
  Hang hang;
  hang.end_ns = 110 * kMs;
  hang.kernels.push_back({41, 15 * kMs, "_Z7endlessv", 7});
  extendWindowsToHang(process, hang);
  CHECK(process.devices[0].window_end_ns == 110 * kMs);
  CHECK(process.devices[0].busy_ns == 98 * kMs);
  CHECK(process.devices[0].idle_ns == 2 * kMs);
  CHECK(process.devices[0].idle_fraction == Approx(0.02));
}
