// cuda_api_map.h: what a CUDA API call is, from its CUPTI callback id and params.
//
// Shared by the CUPTI probe (which gets the params CUPTI passes) and the symbol hooks (which build
// the same params structs), so both modes classify a call identically. Must stay cheap: it runs on
// the user's thread for every recorded call (a switch and a few loads).
#pragma once

#include <cupti.h>

#include "raw_event.h"

namespace gapwatch {

// Fills kind, copy_kind, bytes and the blocked flag of `event` for a call of `cbid` in `domain`.
// Returns false for calls gapwatch does not record.
bool classify_api_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, ApiCallRecord* event);

// At the exit of a call that pins or unpins host memory (those classified kHostAlloc or kHostFree:
// cudaMallocHost, cudaHostAlloc, cudaHostRegister, cuMemAllocHost, cuMemHostAlloc,
// cuMemHostRegister and their frees and unregistrations) that returned `return_code`: the table of
// pinned host ranges (pinned_host_ranges.h) that async copies are classified by. Any other call:
// nothing. Called on the calling thread, also when its record cannot be reserved (a full ring): a
// range missed here would make its copies walk, one missed free would take pageable memory for
// pinned.
void note_host_memory(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* params, int return_code);

// The callback ids gapwatch enables, per domain (0-terminated lists).
extern const CUpti_CallbackId kRecordedRuntimeCbids[];
extern const CUpti_CallbackId kRecordedDriverCbids[];

// A poll (cudaEventQuery, cudaStreamQuery and their driver calls) and what it polls: the probe
// coalesces a thread's consecutive polls of one handle into one record (cupti_probe.cpp).
bool is_poll(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
const void* polled_handle(const void* params);  // the event or stream: the params' first field

// What a poll returns while the work is not done (cudaErrorNotReady, CUDA_ERROR_NOT_READY).
inline constexpr int kNotReady = 600;

// The runtime makes synchronous host-to-device copies of this size or less asynchronous.
inline constexpr uint64_t kSmallH2DBytes = 64 * 1024;

}  // namespace gapwatch
