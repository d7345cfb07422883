// tests/unit/sync_points_test.cpp: which calls are sync points, and of which type.

#include <catch2/catch.hpp>

#include "analysis/sync_points.h"
#include "gwt_test_writer.h"

#include <optional>

namespace {

using namespace gapwatch;

std::optional<SyncPointKind> kindOf(v1::ApiKind kind, bool blocked) {
  return classifySyncPoint(test::apiCall(kind, 1, 0, 100, blocked));
}

}  // namespace

TEST_CASE("a call is a sync point only if it blocked") {
  CHECK_FALSE(kindOf(v1::API_KIND_MEMCPY, false));  // a small H2D copy: did not block
  CHECK_FALSE(kindOf(v1::API_KIND_LAUNCH, false));
  CHECK(kindOf(v1::API_KIND_MEMCPY, true) == SyncPointKind::kSyncCopy);
}

TEST_CASE("blocked calls are sorted into the sync point types") {
  CHECK(kindOf(v1::API_KIND_DEVICE_SYNC, true) == SyncPointKind::kDeviceSync);
  CHECK(kindOf(v1::API_KIND_STREAM_SYNC, true) == SyncPointKind::kStreamSync);
  CHECK(kindOf(v1::API_KIND_EVENT_SYNC, true) == SyncPointKind::kEventSync);
  CHECK(kindOf(v1::API_KIND_MEMCPY_ASYNC, true) == SyncPointKind::kPageableAsyncCopy);
  CHECK(kindOf(v1::API_KIND_MEMSET, true) == SyncPointKind::kMemset);
  CHECK(kindOf(v1::API_KIND_MALLOC, true) == SyncPointKind::kAllocFree);
  CHECK(kindOf(v1::API_KIND_FREE, true) == SyncPointKind::kAllocFree);
  CHECK(kindOf(v1::API_KIND_MODULE_LOAD, true) == SyncPointKind::kOther);
  CHECK_FALSE(kindOf(v1::API_KIND_QUERY, false));  // a poll alone: its loop is the sync point
}

TEST_CASE("every sync point type has a name and a distinct JSON key") {
  for (std::size_t i = 0; i < kSyncPointKindCount; ++i) {
    const auto kind = static_cast<SyncPointKind>(i);
    CAPTURE(i);
    CHECK_FALSE(syncPointName(kind).empty());
    for (std::size_t j = 0; j < i; ++j) {
      CHECK(std::string_view(syncPointKey(kind)) != syncPointKey(static_cast<SyncPointKind>(j)));
    }
  }
  CHECK(std::string_view(syncPointKey(SyncPointKind::kPageableAsyncCopy)) == "pageable_async_copy");
}
