// reader/string_table.cpp: see string_table.h.
#include "reader/string_table.h"

#include <utility>

namespace gapwatch {

void StringTable::define(v1::StringKind kind, uint32_t id, std::string text) {
  texts_.insert_or_assign(key(kind, id), std::move(text));
}

const std::string* StringTable::find(v1::StringKind kind, uint32_t id) const {
  const auto it = texts_.find(key(kind, id));
  return it == texts_.end() ? nullptr : &it->second;
}

std::string StringTable::display(v1::StringKind kind, uint32_t id) const {
  if (id == 0) return {};
  if (const std::string* text = find(kind, id)) return *text;
  return "#" + std::to_string(id);
}

}  // namespace gapwatch
