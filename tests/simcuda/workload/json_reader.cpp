#include "json_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

namespace gapwatch_sim {

using nlohmann::json;

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string quoted_list(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += ", ";
    out += words[i];
  }
  return out;
}

// Tracks where the parser is so a repeated key can be reported with its path.
class DuplicateKeyGuard {
 public:
  bool on_event(json::parse_event_t event, const json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        frames_.emplace_back().is_array = false;
        break;
      case json::parse_event_t::array_start:
        frames_.emplace_back().is_array = true;
        break;
      case json::parse_event_t::key: {
        Frame& top = frames_.back();
        top.key = parsed.get<std::string>();
        if (!top.seen.insert(top.key).second)
          throw InputError("duplicate key \"" + top.key + "\" " + location(path_of_top()));
        break;
      }
      case json::parse_event_t::value:
        element_done();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        frames_.pop_back();
        element_done();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_array = false;
    size_t count = 0;
    std::string key;
    std::set<std::string> seen;
  };

  void element_done() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().count;
  }

  std::string path_of_top() const {
    std::string path;
    for (size_t i = 0; i + 1 < frames_.size(); ++i)
      path = frames_[i].is_array ? index_path(path, frames_[i].count) : child_path(path, frames_[i].key);
    return path;
  }

  std::vector<Frame> frames_;
};

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  // A truncated word ("host" for "host_cpu") is a likelier mistake than any other.
  if (word.size() >= 3) {
    for (const auto& candidate : candidates)
      if (candidate.size() > word.size() && candidate.compare(0, word.size(), word) == 0) return candidate;
  }
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const auto& candidate : candidates) {
    size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  // A third of the word's length catches swapped and dropped letters without proposing unrelated
  // short keys.
  size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : std::string();
}

std::string child_path(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

std::string index_path(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string location(const std::string& path) { return path.empty() ? "at the top level" : "at " + path; }

json parse_json_text(const std::string& text) {
  DuplicateKeyGuard guard;
  json::parser_callback_t callback = [&guard](int, json::parse_event_t event, json& parsed) {
    return guard.on_event(event, parsed);
  };
  try {
    return json::parse(text, callback);
  } catch (const json::parse_error& e) {
    std::string message = e.what();
    static const std::regex where(R"(parse error at line (\d+), column (\d+): )");
    std::smatch m;
    if (std::regex_search(message, m, where)) {
      throw InputError("invalid JSON: " + m.suffix().str(), m[1].str() + ":" + m[2].str());
    }
    // No position in the message: count lines up to the failing byte ourselves.
    size_t byte = std::min<size_t>(e.byte, text.size());
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < byte; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string detail = message;
    if (auto colon = message.find("]"); colon != std::string::npos) detail = message.substr(colon + 2);
    throw InputError("invalid JSON: " + detail, std::to_string(line) + ":" + std::to_string(column));
  } catch (const json::out_of_range& e) {
    // A number no double holds ("1e400"): nlohmann throws this rather than a parse_error, and
    // with no position. Not caught, it ended gapwatch-sim with std::terminate (found by
    // tests/fuzz/scenario_parser_fuzz.cpp).
    std::string message = e.what();
    if (auto bracket = message.find("] "); bracket != std::string::npos) message = message.substr(bracket + 2);
    throw InputError("invalid JSON: " + message);
  }
}

std::string describe_value(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return std::string("boolean ") + (value.get<bool>() ? "true" : "false");
    case json::value_t::string: {
      std::string text = value.dump();
      if (text.size() > 42) text = text.substr(0, 40) + "...\"";
      return "string " + text;
    }
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float: return "number " + value.dump();
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    default: return "a value of another kind";
  }
}

void JsonNode::fail(const std::string& problem) const {
  throw InputError((path_.empty() ? std::string("top level") : path_) + ": " + problem);
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string, got " + describe_value(*value_));
  std::string text = value_->get<std::string>();
  if (text.empty()) fail("must not be empty");
  return text;
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false, got " + describe_value(*value_));
  return value_->get<bool>();
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail("expected a number, got " + describe_value(*value_));
  double v = value_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number");
  return v;
}

double JsonNode::as_non_negative_number() const {
  double v = as_number();
  if (v < 0) fail("must be >= 0, got " + value_->dump());
  return v;
}

int64_t JsonNode::as_integer() const {
  if (value_->is_number_unsigned()) {
    uint64_t u = value_->get<uint64_t>();
    if (u > uint64_t(INT64_MAX)) fail("number " + value_->dump() + " is too large");
    return int64_t(u);
  }
  if (value_->is_number_integer()) return value_->get<int64_t>();
  fail("expected an integer, got " + describe_value(*value_));
}

int64_t JsonNode::as_non_negative_integer() const {
  int64_t v = as_integer();
  if (v < 0) fail("must be >= 0, got " + std::to_string(v));
  return v;
}

int64_t JsonNode::as_positive_integer() const {
  int64_t v = as_integer();
  if (v <= 0) fail("must be >= 1, got " + std::to_string(v));
  return v;
}

size_t JsonNode::as_enum(const std::vector<std::string>& choices) const {
  if (!value_->is_string()) fail("expected one of " + quoted_list(choices) + ", got " + describe_value(*value_));
  std::string text = value_->get<std::string>();
  for (size_t i = 0; i < choices.size(); ++i)
    if (choices[i] == text) return i;
  std::string message = "unknown value \"" + text + "\" (expected one of " + quoted_list(choices);
  if (std::string near = closest_match(text, choices); !near.empty()) message += "; did you mean \"" + near + "\"?";
  fail(message + ")");
}

std::vector<JsonNode> JsonNode::as_array() const {
  if (!value_->is_array()) fail("expected an array, got " + describe_value(*value_));
  std::vector<JsonNode> items;
  for (size_t i = 0; i < value_->size(); ++i) items.emplace_back((*value_)[i], index_path(path_, i));
  return items;
}

void JsonObject::check_keys(const JsonNode& node, const std::vector<std::string>& allowed) {
  if (!node.is_object()) node.fail("expected an object, got " + describe_value(node.value()));
  for (const auto& item : node.value().items()) {
    if (std::find(allowed.begin(), allowed.end(), item.key()) != allowed.end()) continue;
    std::string message = "unknown key \"" + item.key() + "\" " + location(node.path());
    if (std::string near = closest_match(item.key(), allowed); !near.empty())
      message += " (did you mean \"" + near + "\"?)";
    throw InputError(message);
  }
}

JsonObject::JsonObject(const JsonNode& node, const std::vector<std::string>& allowed) : node_(node) {
  check_keys(node, allowed);
}

bool JsonObject::has(const std::string& key) const { return node_.value().contains(key); }

JsonNode JsonObject::get(const std::string& key) const {
  if (!has(key)) fail("missing required key \"" + key + "\"");
  return JsonNode(node_.value().at(key), child_path(node_.path(), key));
}

std::optional<JsonNode> JsonObject::find(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return JsonNode(node_.value().at(key), child_path(node_.path(), key));
}

std::vector<std::string> JsonObject::keys() const {
  std::vector<std::string> out;
  for (const auto& item : node_.value().items()) out.push_back(item.key());
  return out;
}

}  // namespace gapwatch_sim
