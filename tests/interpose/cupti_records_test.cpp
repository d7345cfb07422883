// The CUPTI 12 record readers (interpose/cupti_records_12.cpp) against records built from CUPTI
// 12.9's headers: 12.4-12.6 (versions 22-24) write CUpti_ActivityMemcpy5 and
// CUpti_ActivitySynchronization, 12.8-12.9 (26-28) Memcpy6 and Synchronization2, all Kernel9. The
// simulated libcupti.so.12 writes 12.9's structs only, so the older ones are checked here.
#include <catch2/catch.hpp>
#include <cupti.h>
#include <string.h>

#include <string>

#include "cupti_records.h"

static_assert(CUPTI_API_VERSION == 28, "cupti_records_test.cpp is built against CUPTI 12.9's headers");

using namespace gapwatch;

namespace {

template <class T>
T zeroed() {
  T t;
  memset(&t, 0, sizeof t);
  return t;
}

}  // namespace

TEST_CASE("CUPTI 12 readers exist for versions 22 to 28 only") {
  for (uint32_t v : {0u, 19u, 21u, 29u, 100u, 130001u}) CHECK(cupti12_record_reader(v) == nullptr);
  for (uint32_t v = 22; v <= 28; ++v) {
    const CuptiRecordReader* r = cupti12_record_reader(v);
    REQUIRE(r != nullptr);
    CHECK(r->runtime_cbid_end == 487);  // 12.9's CUPTI_RUNTIME_TRACE_CBID_SIZE
    CHECK(r->driver_cbid_end == 784);
  }
  CHECK(std::string(cupti12_record_reader(24)->name) == "CUPTI 12.4-12.6");
  CHECK(std::string(cupti12_record_reader(26)->name) == "CUPTI 12.8-12.9");
}

TEST_CASE("a CUPTI 12 kernel record is read as Kernel9") {
  auto k = zeroed<CUpti_ActivityKernel9>();
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000, k.end = 3500;
  k.deviceId = 1, k.streamId = 7, k.correlationId = 42, k.graphId = 9;
  k.name = "_Z4workv";
  for (uint32_t v : {22u, 28u}) {
    DeviceActivityFields e;
    const char* name = nullptr;
    REQUIRE(cupti12_record_reader(v)->decode(&k, &e, &name));
    CHECK(e.kind == wire::ActivityKind::kKernel);
    CHECK(e.start_ns == 1000);
    CHECK(e.end_ns == 3500);
    CHECK(e.device == 1);
    CHECK(e.stream == 7);
    CHECK(e.correlation_id == 42);
    CHECK(e.graph_id == 9);
    CHECK(std::string(name) == "_Z4workv");
  }
}

TEST_CASE("12.4-12.6 copies and syncs are read as Memcpy5 and Synchronization, 12.8+ as Memcpy6 and Synchronization2") {
  auto m5 = zeroed<CUpti_ActivityMemcpy5>();
  m5.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m5.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m5.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, m5.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m5.bytes = 4096, m5.start = 10, m5.end = 20, m5.deviceId = 0, m5.streamId = 3, m5.correlationId = 5;
  auto m6 = zeroed<CUpti_ActivityMemcpy6>();
  memcpy(&m6, &m5, sizeof m5);  // 12.8's Memcpy6 is Memcpy5 and copyCount
  m6.copyCount = 1;
  DeviceActivityFields e;
  const char* name = nullptr;
  for (auto [version, record] : {std::pair<uint32_t, const void*>{22, &m5}, {28, &m6}}) {
    REQUIRE(cupti12_record_reader(version)->decode(record, &e, &name));
    CHECK(e.kind == wire::ActivityKind::kMemcpy);
    CHECK(e.copy_kind == wire::CopyKind::kD2H);
    CHECK(e.bytes == 4096);
    CHECK(e.start_ns == 10);
    CHECK(e.end_ns == 20);
    CHECK(e.stream == 3);
    CHECK(e.correlation_id == 5);
  }

  auto s1 = zeroed<CUpti_ActivitySynchronization>();
  s1.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s1.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s1.start = 100, s1.end = 250, s1.correlationId = 8, s1.streamId = 13;
  REQUIRE(cupti12_record_reader(24)->decode(&s1, &e, &name));
  CHECK(e.kind == wire::ActivityKind::kSync);
  CHECK(e.sync_kind == uint8_t(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE));
  CHECK(e.end_ns - e.start_ns == 150);
  CHECK(e.stream == 13);

  auto s2 = zeroed<CUpti_ActivitySynchronization2>();
  memcpy(&s2, &s1, sizeof s1);
  s2.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;  // a context sync has no stream
  REQUIRE(cupti12_record_reader(26)->decode(&s2, &e, &name));
  CHECK(e.stream == 0);
  CHECK(e.correlation_id == 8);
}

TEST_CASE("kinds gapwatch does not enable are not read") {
  auto other = zeroed<CUpti_ActivityKernel9>();
  other.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  DeviceActivityFields e;
  const char* name = nullptr;
  CHECK_FALSE(cupti12_record_reader(28)->decode(&other, &e, &name));
}
