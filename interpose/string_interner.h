// string_interner.h: names sent once as StringDef, then by id.
//
// Used off the user's threads only: CUPTI's buffer thread (kernel names) and the flusher (API
// names, communicators). A mutex guards it; nothing else is locked while it is held.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frame_encoder.h"

namespace gapwatch {

// gapwatch.v1.StringKind values.
namespace string_kind {
enum : uint32_t { kKernelName = 1, kThreadName = 2, kComm = 3, kCallSite = 4, kApiName = 5 };
}

class StringInterner {
 public:
  uint32_t intern(uint32_t kind, std::string_view text);
  // Definitions made since the last call, to travel in the next batch (before their first use).
  void take_new(std::vector<StringDefinition>* out);

 private:
  std::mutex mu_;
  std::unordered_map<std::string, uint32_t> ids_[8];  // per kind
  uint32_t next_id_[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<StringDefinition> pending_;
};

}  // namespace gapwatch
