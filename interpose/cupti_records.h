// cupti_records.h: what the CUPTI probe needs to know per CUPTI version it reads.
//
// An activity record is read by its struct layout, and the layouts differ between CUPTI 12.x
// minor versions and 13 (docs/design/cupti-versions.md). Each version's decoding lives in its own
// translation unit compiled against that version's headers (cupti_records_13.cpp,
// cupti_records_12.cpp); this header names no CUPTI type, so both can share it. Callback ids are
// the same numbers in 12 and 13, but 13 added ids that a CUPTI 12 does not know.
#pragma once

#include <cstdint>

#include "frame_encoder.h"

namespace gapwatch {

struct CuptiRecordReader {
  const char* name;  // "CUPTI 12.4-12.6", for messages
  // Fills `out` from one activity record (a CUpti_Activity*) of this version; false for kinds
  // gapwatch does not record. A kernel's name is left in *kernel_name (CUPTI's string) for the
  // caller to intern; name_id stays 0.
  bool (*decode)(const void* record, DeviceActivityFields* out, const char** kernel_name);
  // Callback ids from these on do not exist in this version (its CUPTI_*_TRACE_CBID_SIZE).
  uint32_t runtime_cbid_end;
  uint32_t driver_cbid_end;
};

// The reader for a libcupti whose cuptiGetVersion reported `version`; nullptr when gapwatch does
// not read that version (outside 12.4..12.9 and 13.x, or CUPTI 12 when built without its headers).
const CuptiRecordReader* cupti_record_reader(uint32_t version);

// The versions this build reads, for the refusal message: "CUPTI 12.4 to 12.9 and 13".
const char* cupti_versions_read();

// Per major version, defined in that version's translation unit.
const CuptiRecordReader* cupti13_record_reader(uint32_t version);
const CuptiRecordReader* cupti12_record_reader(uint32_t version);  // only with GAPWATCH_HAVE_CUPTI12

}  // namespace gapwatch
