// cupti_probe.h: the primary probe: CUPTI callbacks for API calls, activity records for device work.
//
// libcupti is dlopen'ed, never linked (the copy already loaded in the process, else
// GAPWATCH_CUPTI_PATH, else the one beside the process's libcudart or libcuda, else the toolkit's:
// open_cupti in cupti_probe.cpp), and its version must be one gapwatch has the record
// layouts of (CUPTI 12.4-12.9 and 13: cupti_records.h), since activity records are parsed by
// their struct layout. Start is split in two because callbacks must
// find the recorder running: attach() subscribes (and learns whether CUPTI can be had at all);
// enable() turns callbacks and activity on once the recorder is up.
#pragma once

#include <cstdint>
#include <string>

#include <cupti.h>

#include "settings.h"

namespace gapwatch {

struct CuptiAttach {
  bool ok = false;
  uint32_t version = 0;
  std::string why_not;  // for the recording and one stderr line when !ok
  bool already_loaded = false;  // the process had libcupti before gapwatch opened it
  std::string library;  // the libcupti opened (its real path), "" when none
  std::string how;      // why that one: "beside the process's libcudart.so.13", "GAPWATCH_CUPTI_PATH"...
};

CuptiAttach cupti_attach(const Settings& settings);
void cupti_enable();
// Hands every record to the recorder, of unfinished work too (at exit, and when a context is
// destroyed): CUPTI_ACTIVITY_FLAG_FLUSH_FORCED.
void cupti_flush();
// Hands the records of finished work to the recorder, partly filled buffers included: CUPTI's own
// flushing returns full buffers only, so a light job would stream no device record without this.
// The recorder's flusher calls it on its own schedule (never a user thread).
void cupti_flush_finished();
bool cupti_active();

// For cupti_sharing.cpp: the libcupti in use (its dlopen handle, or nullptr), gapwatch's real
// subscriber, whether CUPTI's timestamp callback is gapwatch's, and what gapwatch itself enabled.
void* cupti_library();
CUpti_SubscriberHandle cupti_subscriber();
bool cupti_owns_timestamps();
bool cupti_own_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);
bool cupti_own_kind(CUpti_ActivityKind kind);
// Whether another client's CUPTI calls reach cupti_sharing.cpp (LD_PRELOAD put gapwatch first).
bool cupti_sharing_reachable();

}  // namespace gapwatch
