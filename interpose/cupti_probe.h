// cupti_probe.h: the primary probe: CUPTI callbacks for API calls, activity records for device work.
//
// libcupti is dlopen'ed, never linked (the copy already loaded in the process, else
// GAPWATCH_CUPTI_PATH, else the toolkit's), and its version must be one gapwatch has the record
// layouts of (CUPTI 12.4-12.9 and 13: cupti_records.h), since activity records are parsed by
// their struct layout. Start is split in two because callbacks must
// find the recorder running: attach() subscribes (and learns whether CUPTI can be had at all);
// enable() turns callbacks and activity on once the recorder is up.
#pragma once

#include <cstdint>
#include <string>

#include "settings.h"

namespace gapwatch {

struct CuptiAttach {
  bool ok = false;
  uint32_t version = 0;
  std::string why_not;  // for the recording and one stderr line when !ok
};

CuptiAttach cupti_attach(const Settings& settings);
void cupti_enable();
// Hands every finished record to the recorder (at exit, and when a context is destroyed).
void cupti_flush();
bool cupti_active();

}  // namespace gapwatch
