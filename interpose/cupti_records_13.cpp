// CUPTI 13.x's activity records (compiled against the toolkit's CUDA 13 headers).
#include <cupti.h>

#include "cupti_record_fields.h"
#include "cupti_records.h"

static_assert(CUPTI_API_VERSION >= 130000 && CUPTI_API_VERSION < 140000, "cupti_records_13.cpp needs CUPTI 13 headers");

namespace gapwatch {
namespace {

const CuptiRecordReader kCupti13 = {
    "CUPTI 13",
    decode_record<CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, CUpti_ActivitySynchronization2>,
    CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_DRIVER_TRACE_CBID_SIZE};

}  // namespace

// 13.x versions are 13MMPP (13.0 reports 130001).
const CuptiRecordReader* cupti13_record_reader(uint32_t version) {
  return version / 10000 == 13 ? &kCupti13 : nullptr;
}

}  // namespace gapwatch
