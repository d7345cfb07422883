// json_reader.h: strict, path-aware reading of a parsed JSON document.
//
// Scenario files are written by hand, so every mistake must come back as one line that names the
// JSON path and, for a misspelt key or enum value, the closest valid spelling. Readers throw
// InputError; main() prefixes the file name and prints it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gapwatch_sim {

// A problem with the user's input: the message is complete and fits on one line. `position` is
// "LINE:COLUMN" when the problem has one (JSON syntax), for "file:LINE:COLUMN: message".
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message, std::string position = "")
      : std::runtime_error(message), position_(std::move(position)) {}
  const std::string& position() const { return position_; }

 private:
  std::string position_;
};

// The candidate closest to `word` by edit distance, or "" when none is close enough to be a likely
// typo.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// "steps.ops[3]" style paths; the root is "".
std::string child_path(const std::string& parent, std::string_view key);
std::string index_path(const std::string& parent, size_t index);
// "at steps.ops[3]" / "at the top level": where a key was found.
std::string location(const std::string& path);

// Parses text as JSON. Syntax errors carry their LINE:COLUMN; a key repeated in one
// object is an error too (nlohmann would silently keep the last one).
nlohmann::json parse_json_text(const std::string& text);

// A JSON value and where it sits in the document.
class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string path) : value_(&value), path_(std::move(path)) {}

  const nlohmann::json& value() const { return *value_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(const std::string& problem) const;

  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_string() const { return value_->is_string(); }

  std::string as_string() const;  // non-empty
  bool as_bool() const;
  double as_number() const;       // finite
  double as_non_negative_number() const;
  int64_t as_integer() const;
  int64_t as_non_negative_integer() const;
  int64_t as_positive_integer() const;
  // One of `choices`; an unknown value names them and suggests the closest.
  size_t as_enum(const std::vector<std::string>& choices) const;
  std::vector<JsonNode> as_array() const;

 private:
  const nlohmann::json* value_;
  std::string path_;
};

// A JSON object whose keys must all come from a known set.
class JsonObject {
 public:
  // Throws on a non-object or on a key outside `allowed`.
  JsonObject(const JsonNode& node, const std::vector<std::string>& allowed);

  const std::string& path() const { return node_.path(); }
  const JsonNode& node() const { return node_; }
  bool has(const std::string& key) const;
  JsonNode get(const std::string& key) const;  // required
  std::optional<JsonNode> find(const std::string& key) const;
  std::vector<std::string> keys() const;
  [[noreturn]] void fail(const std::string& problem) const { node_.fail(problem); }

  // Throws on a key outside `allowed` (with a suggestion from `allowed`).
  static void check_keys(const JsonNode& node, const std::vector<std::string>& allowed);

 private:
  JsonNode node_;
};

// A short description of a value for error messages: `string "ten"`, `number -5`, `an object`.
std::string describe_value(const nlohmann::json& value);

}  // namespace gapwatch_sim
