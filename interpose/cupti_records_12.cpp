// CUPTI 12.4 to 12.9's activity records, compiled against CUPTI 12.9's headers (the wheel
// nvidia-cuda-cupti-cu12; scripts/fetch-cupti12-headers.sh) in front of the toolkit's.
//
// CUPTI 12 numbers its versions 22 (12.4) to 28 (12.9 Update 1), and changed record structs within
// 12: up to 12.6 (24) it emits CUpti_ActivityMemcpy5 and CUpti_ActivitySynchronization, from 12.8
// (26) Memcpy6 and Synchronization2; the kernel record is CUpti_ActivityKernel9 throughout. The
// 12.9 headers keep the older structs in cupti_activity_deprecated.h, so both are read from here.
#include <cupti.h>

#include "cupti_record_fields.h"
#include "cupti_records.h"

static_assert(CUPTI_API_VERSION >= 26 && CUPTI_API_VERSION < 100, "cupti_records_12.cpp needs CUPTI 12.8 or 12.9 headers");

namespace gapwatch {
namespace {

constexpr uint32_t kFirst = 22;           // CUDA 12.4
constexpr uint32_t kFirstMemcpy6 = 26;    // CUDA 12.8 (25 was never released)
constexpr uint32_t kLast = 28;            // CUDA 12.9 Update 1, the last 12.x
// Ids past 12.4's last one cannot be enabled on an older 12.x; none of those gapwatch enables is
// that new (the 13-only ids are all past 12.9's), so 12.9's ends serve for every 12.x.
const CuptiRecordReader kCupti12Early = {
    "CUPTI 12.4-12.6",
    decode_record<CUpti_ActivityKernel9, CUpti_ActivityMemcpy5, CUpti_ActivityMemset4, CUpti_ActivitySynchronization>,
    CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_DRIVER_TRACE_CBID_SIZE};
const CuptiRecordReader kCupti12Late = {
    "CUPTI 12.8-12.9",
    decode_record<CUpti_ActivityKernel9, CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, CUpti_ActivitySynchronization2>,
    CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_DRIVER_TRACE_CBID_SIZE};

}  // namespace

const CuptiRecordReader* cupti12_record_reader(uint32_t version) {
  if (version < kFirst || version > kLast) return nullptr;
  return version < kFirstMemcpy6 ? &kCupti12Early : &kCupti12Late;
}

}  // namespace gapwatch
