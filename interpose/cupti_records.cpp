#include "cupti_records.h"

namespace gapwatch {

const CuptiRecordReader* cupti_record_reader(uint32_t version) {
  if (const CuptiRecordReader* r = cupti13_record_reader(version)) return r;
#ifdef GAPWATCH_HAVE_CUPTI12
  if (const CuptiRecordReader* r = cupti12_record_reader(version)) return r;
#endif
  return nullptr;
}

const char* cupti_versions_read() {
#ifdef GAPWATCH_HAVE_CUPTI12
  return "CUPTI 12.4 to 12.9 (versions 22-28) and 13.x (13xxxx)";
#else
  return "CUPTI 13.x (13xxxx) only (built without CUPTI 12 headers)";
#endif
}

}  // namespace gapwatch
