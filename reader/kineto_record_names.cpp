// reader/kineto_record_names.cpp: see kineto_record_names.h.
#include "reader/kineto_record_names.h"

#include "reader/json_text.h"
#include "reader/kineto_numbers.h"

namespace gapwatch {

v1::MemoryKind memoryKindFromWord(std::string_view w) {
  if (w == "Pageable") return v1::MEMORY_KIND_PAGEABLE;
  if (w == "Pinned") return v1::MEMORY_KIND_PINNED;
  if (w == "Device") return v1::MEMORY_KIND_DEVICE;
  if (w == "Array") return v1::MEMORY_KIND_ARRAY;
  if (w == "Managed") return v1::MEMORY_KIND_MANAGED;
  if (w == "DeviceStatic") return v1::MEMORY_KIND_DEVICE_STATIC;
  if (w == "ManagedStatic") return v1::MEMORY_KIND_MANAGED_STATIC;
  return v1::MEMORY_KIND_UNSPECIFIED;
}

// "Memcpy HtoD (Pageable -> Device)" -> H2D, PAGEABLE, DEVICE.
void parseMemcpyName(std::string_view name, DeviceActivityEvent& a) {
  struct Dir {
    std::string_view word;
    v1::CopyKind kind;
  };
  static constexpr Dir kDirs[] = {{"HtoD", v1::COPY_KIND_H2D}, {"DtoH", v1::COPY_KIND_D2H}, {"DtoD", v1::COPY_KIND_D2D},
                                  {"HtoH", v1::COPY_KIND_H2H}, {"PtoP", v1::COPY_KIND_P2P}};
  for (const Dir& d : kDirs) {
    if (name.find(d.word) != std::string_view::npos) a.copy_kind = d.kind;
  }
  const std::size_t open = name.find('(');
  const std::size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;
  const std::string_view inside = name.substr(open + 1, close - open - 1);
  const std::size_t arrow = inside.find("->");
  if (arrow == std::string_view::npos) return;
  a.src_memory = memoryKindFromWord(trimJsonSpace(inside.substr(0, arrow)));
  a.dst_memory = memoryKindFromWord(trimJsonSpace(inside.substr(arrow + 2)));
}

// "Memset (Device)" -> dst DEVICE.
void parseMemsetName(std::string_view name, DeviceActivityEvent& a) {
  const std::size_t open = name.find('(');
  const std::size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;
  a.dst_memory = memoryKindFromWord(trimJsonSpace(name.substr(open + 1, close - open - 1)));
}

v1::SyncKind syncKindFromName(std::string_view n) {
  if (n == "Stream Sync") return v1::SYNC_KIND_STREAM_SYNCHRONIZE;
  if (n == "Context Sync") return v1::SYNC_KIND_CONTEXT_SYNCHRONIZE;
  if (n == "Stream Wait Event") return v1::SYNC_KIND_STREAM_WAIT_EVENT;
  if (n == "Event Sync") return v1::SYNC_KIND_EVENT_SYNCHRONIZE;
  return v1::SYNC_KIND_UNSPECIFIED;
}

// "ProfilerStep#12" -> 12.
bool profilerStep(std::string_view name, uint64_t& step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix || name.size() == kPrefix.size()) return false;
  int64_t value = 0;
  if (!parseInt(name.substr(kPrefix.size()), value) || value < 0) return false;
  step = static_cast<uint64_t>(value);
  return true;
}

}  // namespace gapwatch
