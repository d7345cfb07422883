// reader/string_table.h: the names a recording interns, looked up by (kind, id).
//
// Recorders send each kernel, API, communicator, marker and thread name once as a StringDef and
// refer to it by id afterwards (docs/recording-format.md, "String definitions"). Ids are scoped by
// kind. Only thread names are ever redefined; the last definition wins, which is what define()
// does for every kind.
#pragma once

#include <gapwatch/v1/events.pb.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gapwatch {

class StringTable {
 public:
  void define(v1::StringKind kind, uint32_t id, std::string text);

  // The text of (kind, id), or nullptr when no definition came (id 0 never has one).
  const std::string* find(v1::StringKind kind, uint32_t id) const;

  // The text, or "#<id>" when the definition never came, or "" for id 0 ("none"): what readers
  // show, as the format asks (a bare id rather than nothing).
  std::string display(v1::StringKind kind, uint32_t id) const;

  std::size_t size() const { return texts_.size(); }

  // Visits every definition in no particular order: fn(kind, id, text).
  template <typename Fn>
  void forEach(Fn&& fn) const {
    for (const auto& [key, text] : texts_) {
      fn(static_cast<v1::StringKind>(static_cast<int>(key >> 32)), static_cast<uint32_t>(key), text);
    }
  }

 private:
  static uint64_t key(v1::StringKind kind, uint32_t id) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(kind)) << 32) | id;
  }

  std::unordered_map<uint64_t, std::string> texts_;
};

}  // namespace gapwatch
