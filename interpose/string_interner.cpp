#include "string_interner.h"

namespace gapwatch {

uint32_t StringInterner::intern(uint32_t kind, std::string_view text) {
  if (kind >= kKinds) kind = wire::StringKind::kUnspecified;
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = ids_[kind].try_emplace(std::string(text), next_id_[kind]);
  if (inserted) {
    ++next_id_[kind];
    pending_.push_back({it->second, kind, it->first});
  }
  return it->second;
}

void StringInterner::take_new(std::vector<StringDefinition>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& d : pending_) out->push_back(std::move(d));
  pending_.clear();
}

}  // namespace gapwatch
