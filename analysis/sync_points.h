// analysis/sync_points.h: host calls that waited for the device, by type.
//
// A sync point is an API call the recorder marked `blocked`: it returned only once the device had
// caught up, so the device's queue drained while the host waited (ARCHITECTURE.md section 6). The
// recorder decides `blocked` when the API's semantics tell (a small H2D cudaMemcpy does not
// block); for an async copy only its activity record tells (pageable memory), and the report
// builder marks it after joining the two. This module only sorts blocked calls into types.
#pragma once

#include "reader/events.h"
#include "reader/python_stack_text.h"
#include "reader/string_table.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gapwatch {

enum class SyncPointKind : uint8_t {
  kDeviceSync,         // cudaDeviceSynchronize, cuCtxSynchronize
  kStreamSync,         // cudaStreamSynchronize
  kEventSync,          // cudaEventSynchronize
  kSyncCopy,           // a copy through a synchronous API
  kPageableAsyncCopy,  // an *Async copy that blocked (pageable host memory)
  kMemset,             // a memset that blocked
  kAllocFree,          // the implicit sync of malloc and free (device or pinned host memory)
  kOther,              // any other call marked blocked
  kQueryPolling,       // a loop of cudaEventQuery / cudaStreamQuery calls until the work was done
};
inline constexpr std::size_t kSyncPointKindCount = 9;

// The type of a blocked call; nullopt when the call did not block. Query calls never block one
// by one: consecutive ones of a thread make a polling loop (isPoll, and the stages that join them).
std::optional<SyncPointKind> classifySyncPoint(const ApiCallEvent& call);

// Whether a synchronous copy call (cudaMemcpy, cuMemcpyDtoH, hipMemcpy, hipMemcpyWithStream)
// waits for the device, by its direction and size (CUDA's "API synchronization behavior"): to or
// between host memory always; host to device only past 64 KiB, which the runtime stages and
// returns from early; device to device never. The recorder decides it so from the call's params
// (interpose/cuda_api_map.cpp); a trace's call gets it from its GPU record (AnalysisPipeline).
// tests/unit/api_classification_agreement_test.cpp holds the two to one rule.
bool synchronousCopyBlocks(v1::CopyKind kind, uint64_t bytes);

// A non-blocking query (cudaEventQuery, cudaStreamQuery): one poll of a polling loop. A thread's
// consecutive polls, with no other recorded call of that thread between them, are one loop that
// ends with the poll that saw the work done (the program stops polling then).
// Where a call was made, as one key: its Python stack when the recorder took one, else its native
// call site (0: neither recorded).
inline uint64_t siteKey(const ApiCallEvent& call) {
  return call.python_stack_id ? (uint64_t(1) << 32) | call.python_stack_id : call.call_site_id;
}
inline uint32_t pythonStackOfSite(uint64_t key) { return key >> 32 ? uint32_t(key) : 0; }

// The name a report gives a site key: pythonSiteText() of its stack, the native call site's text,
// or "(not recorded)".
std::string siteName(uint64_t key, const StringTable* strings);

// The frames of a stack id, innermost first (none when not defined).
std::vector<PythonFrame> stackFrames(uint32_t python_stack_id, const StringTable* strings);

inline bool isPoll(const ApiCallEvent& call) { return call.kind == v1::API_KIND_QUERY; }
// Whether a poll record ends its loop: it returned anything but "not ready" (600, cudaErrorNotReady
// and CUDA_ERROR_NOT_READY), so it saw the work done (the recorder writes a run of polls when that
// poll returns; a run cut short by another call ends at that call instead).
inline bool pollSawWorkDone(const ApiCallEvent& poll) { return poll.return_code != 600; }

// A short readable name: "stream synchronize", "synchronous copy", ...
std::string_view syncPointName(SyncPointKind kind);
// The snake_case key of a type, as the JSON report and the simulator's ground truth spell it:
// "stream_sync", "pageable_async_copy", ...
const char* syncPointKey(SyncPointKind kind);

}  // namespace gapwatch
