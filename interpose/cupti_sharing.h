// cupti_sharing.h: CUPTI shared with another client in the same process, such as torch.profiler.
//
// CUDA 13.0 allows one CUPTI subscriber, and CUPTI's activity API (buffer callbacks, enabled
// kinds, the timestamp callback) is process-wide: current Kineto calls it directly when a
// torch.profiler session starts, which would take gapwatch's buffers and clock and switch its kinds
// off when the session stops; older Kineto subscribes and, refused, traces CPU only
// (cupti-field-notes.md 3). When LD_PRELOAD puts libgapwatch.so in front of libcupti, the other
// client's calls to those functions reach the definitions in cupti_sharing.cpp instead, and
// gapwatch serves both from its one real registration:
//  - callbacks: the other client gets a subscription of its own; gapwatch's real subscriber enables
//    the union of what both want and forwards each callback the other enabled, with its own
//    correlation-data slot;
//  - activity: CUPTI has the union of both clients' kinds; every record the other client's kinds
//    cover is copied from gapwatch's buffers into buffers the other client's request callback gives,
//    handed back to its completion callback when full or when it flushes, and read back by its
//    cuptiActivityGetNextRecord, which knows those buffers by their first bytes;
//  - clock: CUPTI's one timestamp callback is gapwatch's until the other client registers one,
//    then the other client's for the rest of the process (its records must be in the clock it
//    asked for, in every later session too); gapwatch maps records that are not in CLOCK_MONOTONIC
//    back through readings of both clocks taken on every device pull.
// Without LD_PRELOAD none of this is reachable, and the recorder detects instead that device
// records stopped arriving (recorder.cpp, "blind").
//
// Threads: the exported functions run on the other client's threads; copy_record() and
// pass_foreign_buffer() on whichever thread CUPTI hands a buffer back on; calibrate() on the
// flusher. Lock order: CUPTI's own locks (a flush delivers under them), then g_out_mu here; no
// function here calls into CUPTI, or calls the other client's buffer callbacks (which may call
// into CUPTI), while holding g_out_mu.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <cupti.h>

namespace gapwatch {
namespace cupti_sharing {

// The other client's subscription, when it has one: forwarded callbacks (user's threads). The
// check is inline: every callback of every launch makes it.
extern std::atomic<bool> g_foreign_subscribed;
inline bool has_foreign_subscriber() { return g_foreign_subscribed.load(std::memory_order_relaxed); }
void forward_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);

// Activity records for the other client (the thread CUPTI hands a buffer back on).
bool foreign_wants(CUpti_ActivityKind kind);
void copy_record(const CUpti_Activity* record, size_t bytes);
// A buffer the other client had given CUPTI before gapwatch took the registration over: its own.
void pass_foreign_buffer(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);

// CUPTI's timestamp callback while gapwatch holds the activity API and no other client has asked
// for a clock of its own: CLOCK_MONOTONIC.
uint64_t CUPTIAPI timestamp();
// A record's time in CLOCK_MONOTONIC: unchanged when it already is (plausibly), else mapped from
// the other client's clock. False when it is neither (the record cannot be placed).
bool to_monotonic(uint64_t* t);
// Flusher, before each device pull: a reading of both clocks for to_monotonic().
void calibrate();

}  // namespace cupti_sharing
}  // namespace gapwatch
