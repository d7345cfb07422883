// gapwatch/json_text.h (common/): the one way gapwatch turns a JSON document into text (the collector's
// status stream, `gapwatch report --json`, `gapwatch dump --json`, the reports the collector writes).
//
// Strings that end up in gapwatch's JSON come from outside: paths (--output-dir, --socket, a
// recording's file name), a Hello's host, names in a recording. None of them need be UTF-8, and
// nlohmann's plain dump() throws on an invalid byte (type_error.316): that ended a collector at its
// first `gapwatch watch` client when its output directory's name was not UTF-8 (issue 21, item 5).
// Here each invalid byte becomes U+FFFD instead, so the text is always valid JSON and keeps the
// rest of every string; a reader that needs the exact bytes of a path has it from elsewhere.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gapwatch {

// `indent` as nlohmann's: -1 for one line, N for N spaces per level.
template <class Json>
std::string jsonText(const Json& document, int indent = -1) {
  return document.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gapwatch
