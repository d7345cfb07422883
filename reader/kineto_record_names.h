// reader/kineto_record_names.h: what a Kineto trace says in its records' names, which is all it
// says of some things: a copy's direction and memory kinds ("Memcpy HtoD (Pageable -> Device)"),
// a memset's memory ("Memset (Device)"), a cuda_sync record's kind ("Stream Sync"), and a step's
// number ("ProfilerStep#12").
#pragma once

#include "reader/events.h"

#include <cstdint>
#include <string_view>

namespace gapwatch {

// "Pageable", "Pinned", "Device", ... as a MemoryKind; UNSPECIFIED for any other word ("Host",
// which ROCm's copies name, says neither pinned nor pageable).
v1::MemoryKind memoryKindFromWord(std::string_view w);
// "Memcpy HtoD (Pageable -> Device)" -> copy_kind H2D, src PAGEABLE, dst DEVICE; what the name does
// not say is left as it was.
void parseMemcpyName(std::string_view name, DeviceActivityEvent& a);
// "Memset (Device)" -> dst DEVICE.
void parseMemsetName(std::string_view name, DeviceActivityEvent& a);
// A cuda_sync record's cuda_sync_kind (or name) as a SyncKind.
v1::SyncKind syncKindFromName(std::string_view n);
// "ProfilerStep#12" -> 12; false for any other name.
bool profilerStep(std::string_view name, uint64_t& step);

}  // namespace gapwatch
