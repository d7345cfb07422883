// analysis/sync_points.cpp: see sync_points.h.
#include "analysis/sync_points.h"

#include "reader/python_stack_text.h"

namespace gapwatch {

std::optional<SyncPointKind> classifySyncPoint(const ApiCallEvent& call) {
  if (!call.blocked) return std::nullopt;
  switch (call.kind) {
    case v1::API_KIND_DEVICE_SYNC:
      return SyncPointKind::kDeviceSync;
    case v1::API_KIND_STREAM_SYNC:
      return SyncPointKind::kStreamSync;
    case v1::API_KIND_EVENT_SYNC:
      return SyncPointKind::kEventSync;
    case v1::API_KIND_MEMCPY:
      return SyncPointKind::kSyncCopy;
    case v1::API_KIND_MEMCPY_ASYNC:
      return SyncPointKind::kPageableAsyncCopy;
    case v1::API_KIND_MEMSET:
    case v1::API_KIND_MEMSET_ASYNC:
      return SyncPointKind::kMemset;
    case v1::API_KIND_MALLOC:
    case v1::API_KIND_FREE:
    case v1::API_KIND_HOST_ALLOC:
    case v1::API_KIND_HOST_FREE:
      return SyncPointKind::kAllocFree;
    default:
      return SyncPointKind::kOther;
  }
}

bool synchronousCopyBlocks(v1::CopyKind kind, uint64_t bytes) {
  constexpr uint64_t kSmallHostToDeviceBytes = 64 * 1024;
  return kind == v1::COPY_KIND_D2H || kind == v1::COPY_KIND_H2H ||
         (kind == v1::COPY_KIND_H2D && bytes > kSmallHostToDeviceBytes);
}

const char* syncPointKey(SyncPointKind kind) {
  switch (kind) {
    case SyncPointKind::kDeviceSync: return "device_sync";
    case SyncPointKind::kStreamSync: return "stream_sync";
    case SyncPointKind::kEventSync: return "event_sync";
    case SyncPointKind::kSyncCopy: return "sync_copy";
    case SyncPointKind::kPageableAsyncCopy: return "pageable_async_copy";
    case SyncPointKind::kMemset: return "memset";
    case SyncPointKind::kAllocFree: return "malloc_free";
    case SyncPointKind::kOther: return "other";
    case SyncPointKind::kQueryPolling: return "query_polling";
  }
  return "other";
}

std::string_view syncPointName(SyncPointKind kind) {
  switch (kind) {
    case SyncPointKind::kDeviceSync:
      return "device synchronize";
    case SyncPointKind::kStreamSync:
      return "stream synchronize";
    case SyncPointKind::kEventSync:
      return "event synchronize";
    case SyncPointKind::kSyncCopy:
      return "synchronous copy";
    case SyncPointKind::kPageableAsyncCopy:
      return "async copy, pageable";
    case SyncPointKind::kMemset:
      return "memset";
    case SyncPointKind::kAllocFree:
      return "malloc / free";
    case SyncPointKind::kOther:
      return "other blocking call";
    case SyncPointKind::kQueryPolling:
      return "query polling";
  }
  return "?";
}

std::vector<PythonFrame> stackFrames(uint32_t python_stack_id, const StringTable* strings) {
  const std::string* text = python_stack_id && strings ? strings->find(v1::STRING_KIND_PYTHON_STACK, python_stack_id) : nullptr;
  return text ? parsePythonStack(*text) : std::vector<PythonFrame>{};
}

std::string siteName(uint64_t key, const StringTable* strings) {
  if (key == 0) return "(not recorded)";
  if (const uint32_t stack = pythonStackOfSite(key)) {
    const std::string* text = strings ? strings->find(v1::STRING_KIND_PYTHON_STACK, stack) : nullptr;
    std::string site = text ? pythonSiteText(*text) : "";
    return site.empty() ? "(Python stack #" + std::to_string(stack) + ")" : site;
  }
  return strings ? strings->display(v1::STRING_KIND_CALL_SITE, uint32_t(key)) : "#" + std::to_string(key);
}

}  // namespace gapwatch
