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

class StringInterner {
 public:
  StringInterner() {
    for (uint32_t& id : next_id_) id = 1;  // 0 always means "none"
  }
  uint32_t intern(uint32_t kind, std::string_view text);
  // Definitions made since the last call, to travel in the next batch (before their first use).
  void take_new(std::vector<StringDefinition>* out);

 private:
  std::mutex mu_;
  // Ids are scoped by kind (StringDef's rule), so one table per wire::StringKind value.
  static constexpr uint32_t kKinds = wire::StringKind::kMaxValue + 1;
  std::unordered_map<std::string, uint32_t> ids_[kKinds];
  uint32_t next_id_[kKinds];
  std::vector<StringDefinition> pending_;
};

}  // namespace gapwatch
