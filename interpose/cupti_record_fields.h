// cupti_record_fields.h: reading the fields gapwatch keeps from CUPTI's activity record structs.
//
// Included by each cupti_records_<major>.cpp after that version's cupti.h, and instantiated there
// with that version's structs: the field names are the same across versions, the layouts are not
// (docs/design/cupti-versions.md). Everything here has internal linkage, so the two translation
// units, compiled against different headers, never share a definition.
#pragma once

#include <cupti.h>

#include "frame_encoder.h"

namespace gapwatch {
namespace {

// MemoryKind has CUPTI's numbers (proto_schema_test checks it); newer CUPTI kinds are not known.
inline uint8_t memory_kind(uint8_t cupti_kind) { return cupti_kind <= wire::MemoryKind::kMaxValue ? cupti_kind : 0; }

inline uint8_t copy_kind_from(uint8_t k) {
  namespace copy_kind = wire::CopyKind;
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return copy_kind::kH2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return copy_kind::kD2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return copy_kind::kD2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return copy_kind::kH2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return copy_kind::kP2P;
    default: return copy_kind::kUnspecified;
  }
}

template <class Kernel>
void kernel_fields(const Kernel* k, DeviceActivityFields* e, const char** kernel_name) {
  e->kind = wire::ActivityKind::kKernel;
  e->start_ns = k->start, e->end_ns = k->end;
  e->device = k->deviceId;
  e->stream = k->streamId;
  e->correlation_id = k->correlationId;
  e->graph_id = k->graphId;
  *kernel_name = k->name ? k->name : "?";
}

template <class Memcpy>
void memcpy_fields(const Memcpy* m, DeviceActivityFields* e) {
  e->kind = wire::ActivityKind::kMemcpy;
  e->start_ns = m->start, e->end_ns = m->end;
  e->device = m->deviceId;
  e->stream = m->streamId;
  e->correlation_id = m->correlationId;
  e->bytes = m->bytes;
  e->copy_kind = copy_kind_from(m->copyKind);
  e->src_memory = memory_kind(m->srcKind);
  e->dst_memory = memory_kind(m->dstKind);
  e->graph_id = m->graphId;
}

template <class Memset>
void memset_fields(const Memset* m, DeviceActivityFields* e) {
  e->kind = wire::ActivityKind::kMemset;
  e->start_ns = m->start, e->end_ns = m->end;
  e->device = m->deviceId;
  e->stream = m->streamId;
  e->correlation_id = m->correlationId;
  e->bytes = m->bytes;
  e->dst_memory = memory_kind(uint8_t(m->memoryKind));
  e->graph_id = m->graphId;
}

template <class Sync>
void sync_fields(const Sync* y, DeviceActivityFields* e) {
  e->kind = wire::ActivityKind::kSync;
  e->start_ns = y->start, e->end_ns = y->end;
  e->stream = y->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : y->streamId;
  e->correlation_id = y->correlationId;
  e->sync_kind = uint8_t(y->type);  // SyncKind has CUPTI's numbers
}

// One version's decoder: the record structs it emits for each kind gapwatch enables.
template <class Kernel, class Memcpy, class Memset, class Sync>
bool decode_record(const void* record, DeviceActivityFields* e, const char** kernel_name) {
  *e = DeviceActivityFields{};
  auto* r = static_cast<const CUpti_Activity*>(record);
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return kernel_fields(reinterpret_cast<const Kernel*>(r), e, kernel_name), true;
    case CUPTI_ACTIVITY_KIND_MEMCPY: return memcpy_fields(reinterpret_cast<const Memcpy*>(r), e), true;
    case CUPTI_ACTIVITY_KIND_MEMSET: return memset_fields(reinterpret_cast<const Memset*>(r), e), true;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sync_fields(reinterpret_cast<const Sync*>(r), e), true;
    default: return false;
  }
}

}  // namespace
}  // namespace gapwatch
