// reader/kineto_top_level.cpp: see kineto_top_level.h.
#include "reader/kineto_top_level.h"

#include "reader/kineto_numbers.h"
#include "reader/kineto_text.h"

#include <algorithm>

namespace gapwatch::kineto {

namespace od = simdjson::ondemand;

namespace {

// A top-level value that is parsed (distributedInfo, baseTimeNanoseconds) is at most this long.
constexpr std::size_t kMaxMetadataBytes = std::size_t{16} << 20;

}  // namespace

std::optional<std::string> MetadataParser::parse(std::string_view key, std::string_view text, TraceMetadata& meta) {
  if (text.size() > kMaxMetadataBytes) return std::string(key) + " is over " + std::to_string(kMaxMetadataBytes >> 20) + " MiB";
  const simdjson::padded_string json(text);
  od::document doc;
  if (auto e = parser_.iterate(json).get(doc)) return malformed(e, std::string(key));
  if (key == "schemaVersion" || key == "traceName") {
    // What the trace says it is, for Hello: a value of another type is left out rather than
    // refused, as it changes no number.
    int64_t version = 0;
    std::string_view name;
    if (key == "schemaVersion" && doc.get_int64().get(version) == simdjson::SUCCESS && version >= 0 &&
        version <= UINT32_MAX) {
      meta.schema_version = static_cast<uint32_t>(version);
    } else if (key == "traceName" && doc.get_string().get(name) == simdjson::SUCCESS) {
      meta.trace_name.assign(name);
    }
    return std::nullopt;
  }
  if (key == "baseTimeNanoseconds") {
    od::json_type type;
    if (auto e = doc.type().get(type)) return malformed(e, std::string(key));
    if (type != od::json_type::number) return std::string("baseTimeNanoseconds is not a number");
    std::string_view raw;
    if (auto e = doc.raw_json_token().get(raw)) return malformed(e, std::string(key));
    int64_t base = 0;
    if (!parseInt(raw, base) || base < 0) return std::string("baseTimeNanoseconds is not a non-negative integer");
    meta.base_time_ns = static_cast<uint64_t>(base);
    meta.has_base_time = true;
    return std::nullopt;
  }
  od::object info;
  if (auto e = doc.get_object().get(info)) {
    return e == simdjson::INCORRECT_TYPE ? std::string("distributedInfo is not an object") : malformed(e, "distributedInfo");
  }
  meta.has_distributed_info = true;
  for (auto field_result : info) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return malformed(e, "distributedInfo");
    std::string_view name;
    if (auto e = field.unescaped_key().get(name)) return malformed(e, "distributedInfo");
    if (name != "rank" && name != "world_size") continue;
    const std::string which(name);
    int64_t v = 0;
    if (field.value().get_int64().get(v) != simdjson::SUCCESS) return "distributedInfo." + which + " is not an integer";
    if (v < 0 || v > INT32_MAX) return "distributedInfo." + which + " is out of range";
    (which == "rank" ? meta.rank : meta.world_size) = static_cast<int32_t>(v);
  }
  return std::nullopt;
}

std::string scanError(JsonSplitter::Scan scan, const JsonSplitter& s, const std::string& what) {
  switch (scan) {
    case JsonSplitter::Scan::kCutShort:
      if (!s.failure().empty()) return s.failure();
      return "the trace is cut short inside " + what + (s.endedInString() ? ", in a string" : "") + " (" +
             byteText(s.offset()) + ")";
    case JsonSplitter::Scan::kTooDeep:
      return what + " is nested deeper than " + std::to_string(JsonSplitter::Limits{}.max_depth) + " levels (" +
             byteText(s.offset()) + ")";
    case JsonSplitter::Scan::kTooLong:
      return what + " is longer than " + std::to_string(JsonSplitter::Limits{}.max_value_bytes >> 20) +
             " MiB (" + byteText(s.offset()) + "): not read";
    case JsonSplitter::Scan::kUnexpected:
      return "unexpected character in " + what + " (" + byteText(s.offset()) + ")";
    case JsonSplitter::Scan::kDone: break;
  }
  return what + ": no error";
}

std::string cutShort(const JsonSplitter& s, const std::string& where) {
  if (!s.failure().empty()) return s.failure();
  return "the trace is cut short " + where + " (" + byteText(s.offset()) + ")";
}

// Walks the top-level object: metadata keys into `meta`; traceEvents (at its '[') handed to
// `read_events`, or skipped when that is null. Checks that nothing but whitespace follows.
std::optional<std::string> walkTopLevel(JsonSplitter& s, MetadataParser& parser, TraceMetadata& meta,
                                        EventsReader read_events, void* context) {
  int c = s.peek();
  if (c != '{') return c < 0 ? cutShort(s, "before the top-level object") : std::string("the JSON is not an object");
  s.take();
  bool has_events = false;
  bool first = true;
  for (;;) {
    s.keepFrom(s.offset());
    c = s.peek();
    if (c < 0) return cutShort(s, "in the top-level object");
    if (first && c == '}') {
      s.take();
      break;
    }
    if (c != '"') return "expected a key in the top-level object (" + byteText(s.offset()) + ")";
    std::string_view key_text;
    if (auto scan = s.scanValue(true, &key_text); scan != JsonSplitter::Scan::kDone) {
      return scanError(scan, s, "a top-level key");
    }
    // Raw, escapes kept: a key written with escapes is one the import does not know.
    // A copy (the view dies with the next read), long enough to tell the keys used apart.
    const std::string raw_key(key_text.substr(1, std::min<std::size_t>(key_text.size() - 2, 65)));
    const std::string key = quoted(raw_key, 64);
    c = s.peek();
    if (c != ':') return c < 0 ? cutShort(s, "after the key " + key) : "expected ':' after the key " + key + " (" + byteText(s.offset()) + ")";
    s.take();
    if (raw_key == "traceEvents") {
      if (has_events) return std::string("traceEvents appears twice");
      has_events = true;
      c = s.peek();
      if (c < 0) return cutShort(s, "after traceEvents");
      if (c != '[') return std::string("traceEvents is not an array");
      if (read_events != nullptr) {
        GW_TRY(read_events(context, s));
      } else if (auto scan = s.scanValue(false); scan != JsonSplitter::Scan::kDone) {
        return scanError(scan, s, "traceEvents");
      }
    } else if (raw_key == "distributedInfo" || raw_key == "baseTimeNanoseconds" || raw_key == "schemaVersion" ||
               raw_key == "traceName") {
      std::string_view value;
      if (auto scan = s.scanValue(true, &value); scan != JsonSplitter::Scan::kDone) return scanError(scan, s, key);
      GW_TRY(parser.parse(key, value, meta));
    } else if (auto scan = s.scanValue(false); scan != JsonSplitter::Scan::kDone) {
      // Every other key (deviceProperties, ...) is skipped.
      return scanError(scan, s, "the value of " + key);
    }
    first = false;
    c = s.peek();
    if (c == ',') {
      s.take();
      continue;
    }
    if (c == '}') {
      s.take();
      break;
    }
    if (c < 0) return cutShort(s, "in the top-level object");
    return "expected ',' or '}' after the value of " + key + " (" + byteText(s.offset()) + ")";
  }
  s.keepFrom(s.offset());
  if (s.peek() >= 0) return "trailing data after the top-level JSON object (" + byteText(s.offset()) + ")";
  if (!s.failure().empty()) return s.failure();
  if (!has_events) return std::string("no traceEvents");
  return std::nullopt;
}

}  // namespace gapwatch::kineto
