// reader/kineto_trace.cpp: see kineto_trace.h.
#include "reader/kineto_trace.h"

#include "reader/api_name.h"
#include "reader/gzip_source.h"
#include "reader/kineto_api_table.h"
#include "reader/kineto_call_sites.h"
#include "reader/kineto_host_ranges.h"
#include "reader/kineto_numbers.h"
#include "reader/kineto_record_names.h"
#include "reader/ordered_appends.h"
#include "reader/json_splitter.h"
#include "reader/json_text.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gapwatch {
namespace {

namespace od = simdjson::ondemand;

constexpr std::size_t kBatchEvents = 4096;
// A batch handed over never spans more than this, so that the pipeline's 2 s reorder window takes
// a batch's lists (api calls, then activities, ...) in any order.
constexpr uint64_t kBatchSpanNs = 1'000'000'000;
// traceEvents elements are parsed by simdjson this many bytes at a time.
constexpr std::size_t kParseBatchBytes = std::size_t{1} << 20;
// A top-level value that is parsed (distributedInfo, baseTimeNanoseconds) is at most this long.
constexpr std::size_t kMaxMetadataBytes = std::size_t{16} << 20;
// Times below this (µs since the Unix epoch: September 2001) are relative to baseTimeNanoseconds.
constexpr uint64_t kEpochTimesFromNs = uint64_t{1'000'000'000'000'000'000};

bool isGzip(std::span<const uint8_t> b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }


std::string errorText(simdjson::error_code e) { return simdjson::error_message(e); }

// --- one event -----------------------------------------------------------------------------------

enum class Category { kSkip, kKernel, kMemcpy, kMemset, kSync, kRuntime, kDriver, kUserAnnotation, kCpuOp, kPythonFunction };

Category categoryOf(std::string_view cat) {
  if (cat == "kernel") return Category::kKernel;
  if (cat == "gpu_memcpy") return Category::kMemcpy;
  if (cat == "gpu_memset") return Category::kMemset;
  if (cat == "cuda_sync") return Category::kSync;
  if (cat == "cuda_runtime") return Category::kRuntime;
  if (cat == "cuda_driver") return Category::kDriver;
  if (cat == "user_annotation") return Category::kUserAnnotation;
  if (cat == "cpu_op") return Category::kCpuOp;  // only record_param_comms is used
  if (cat == "python_function") return Category::kPythonFunction;  // call sites (with_stack=True)
  return Category::kSkip;
}

// Whether an element with this ph and cat is read past them. Kineto writes ph and cat first, so
// the many events the import does not use (cpu_op, flows, instants) cost two fields each.
bool isWanted(std::string_view ph, Category category) {
  return ph == "M" || (ph == "X" && category != Category::kSkip);
}

// Whether an element is plainly one the import does not use, told from its first bytes when they
// are written as Kineto writes them (`{"ph": "X", "cat": "cpu_op", ...`, or `{"ph": "f", ...`);
// false whenever unsure (other key order, an escape), and then simdjson reads ph and cat. Such
// elements are blanked to `{}` before the batch is parsed, so they cost simdjson nearly nothing
// (they are most of a trace: cpu_op, flows). The same isWanted() decides both ways: an event the
// mapping starts to use must be wanted there.
bool plainlyUnused(std::string_view e) {
  std::size_t i = 0;
  const auto space = [&] {
    while (i < e.size() && isJsonSpace(e[i])) ++i;
  };
  const auto take = [&](std::string_view text) {
    space();
    if (e.substr(i, text.size()) != text) return false;
    i += text.size();
    return true;
  };
  // The string value at i, if short and without escapes.
  const auto value = [&](std::size_t max, std::string_view& out) {
    if (!take("\"")) return false;
    const std::size_t end = e.find('"', i);
    if (end == std::string_view::npos || end - i > max) return false;
    out = e.substr(i, end - i);
    i = end + 1;
    return out.find('\\') == std::string_view::npos;
  };
  std::string_view ph, cat;
  if (!take("{") || !take("\"ph\"") || !take(":") || !value(8, ph)) return false;
  if (ph != "X") return !isWanted(ph, Category::kSkip);
  if (!take(",") || !take("\"cat\"") || !take(":") || !value(64, cat)) return false;
  const Category category = categoryOf(cat);
  // Every cpu_op is used (host ranges: kineto_host_ranges.h); parseEvent stops before their args
  // unless the op is record_param_comms.
  return !isWanted(ph, category);
}

// A number as found: its raw text, checked only when the event is one the import uses (the
// design skips unused events without looking at their fields).
struct RawNumber {
  bool present = false;
  bool is_number = false;
  bool is_string = false;  // a number written as a string ("bytes": "4096"): its unescaped text
  std::string_view text;
};

// The fields of one traceEvents element that the import uses, as found. The views point into the
// simdjson parser's buffers and live until the next batch. (Not interpose/raw_event.h's RawEvent,
// the recorder's ring slot: this was called that too until issue 20.)
struct TraceEventFields {
  std::string_view ph, cat, name;
  bool has_ph = false, has_cat = false;
  Category category = Category::kSkip;
  RawNumber ts, dur, correlation, stream, bytes, cbid, device;
  bool has_pid = false, has_tid = false;
  int64_t pid = 0, tid = 0;
  std::string_view tid_text;  // a tid given as a string
  bool tid_is_text = false;
  std::string_view sync_kind;
  std::string_view arg_name;  // M events: args.name
  KinetoCommsArgs comms;      // record_param_comms' args (kineto_host_events.h)
};

// "traceEvents[12].args.stream": error messages only, so built only for them.
std::string at(uint64_t index, std::string_view field = {}) {
  std::string s = "traceEvents[" + std::to_string(index) + "]";
  if (!field.empty()) s.append(".").append(field);
  return s;
}

std::string byteText(uint64_t offset) { return "byte " + std::to_string(offset); }

// Text from the trace as a message may quote it: at most `max` bytes, anything but printable
// ASCII as '?', so that a message stays one readable line whatever the bytes were.
std::string quoted(std::string_view text, std::size_t max = 32) {
  std::string out(text.substr(0, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  if (text.size() > max) out += "...";
  return out;
}

std::optional<std::string> malformed(simdjson::error_code e, const std::string& where) {
  return "malformed JSON in " + where + " (" + errorText(e) + ")";
}

std::optional<std::string> stringValue(od::value& v, std::string_view& out, uint64_t index, std::string_view field) {
  if (auto e = v.get_string().get(out)) {
    return e == simdjson::INCORRECT_TYPE ? at(index, field) + " is not a string" : malformed(e, at(index, field));
  }
  return std::nullopt;
}

// Notes a value's raw text and whether it is a number (objects, arrays, ... are not). A string is
// kept too: ROCm's writers (Kineto's roctracer and rocprofiler back ends) give some args' numbers
// as strings, which intField() reads where the field may be one.
std::optional<std::string> rawNumber(od::value& v, RawNumber& out, uint64_t index, std::string_view field) {
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e, at(index, field));
  out.present = true;
  out.is_number = type == od::json_type::number;
  out.is_string = type == od::json_type::string;
  if (out.is_number) out.text = trimRight(v.raw_json_token());
  if (out.is_string) return stringValue(v, out.text, index, field);
  return std::nullopt;
}


// A string field where any other type is ignored (what older exporters sometimes wrote).
std::optional<std::string> optionalString(od::value& v, std::string_view& out, uint64_t index, std::string_view field) {
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e, at(index, field));
  if (type == od::json_type::string) return stringValue(v, out, index, field);
  return std::nullopt;
}

// A used event's integer field (all are args): absent is fine (value untouched); a number, or a
// string that holds one ("4096": ROCm's writers), is read; anything else is refused.
std::optional<std::string> intField(const RawNumber& n, int64_t& value, bool& has, uint64_t index, std::string_view field) {
  has = false;
  if (!n.present) return std::nullopt;
  if (n.is_string) {
    if (!parseInt(n.text, value)) return at(index, field) + " is not a number (\"" + quoted(n.text) + "\")";
    has = true;
    return std::nullopt;
  }
  if (!n.is_number) return at(index, field) + " is not a number";
  if (!parseInt(n.text, value)) return at(index, field) + " is not an integer (" + quoted(n.text) + ")";
  has = true;
  return std::nullopt;
}

// args.stream: an integer as intField() reads it, or, as Kineto's ROCm back ends write a HIP
// call's stream, a pointer ("0x55d3c8a0e000"), whose bits are the stream's id.
std::optional<std::string> streamField(const RawNumber& n, int64_t& value, bool& has, uint64_t index) {
  uint64_t pointer = 0;
  if (n.present && n.is_string && parsePointer(n.text, pointer)) {
    value = static_cast<int64_t>(pointer);
    has = true;
    return std::nullopt;
  }
  return intField(n, value, has, index, "args.stream");
}

// A key's text up to its closing quote, so that one length switch picks the few keys used (a key
// with an escape in it matches none of them). The closing quote is there: simdjson's stage 1
// checked the strings, and its padding follows the text.
std::string_view keyText(const od::raw_json_string& key) {
  const char* p = key.raw();
  const void* q = std::memchr(p, '"', 64);
  return q == nullptr ? std::string_view() : std::string_view(p, static_cast<std::size_t>(static_cast<const char*>(q) - p));
}

// ph and cat, on every event: their raw text without unescaping it (a value with an escape, or
// over 63 bytes, matches none of the names used, and is not copied).
std::optional<std::string> shortString(od::value& v, std::string_view& out, uint64_t index, std::string_view field) {
  od::raw_json_string text;
  if (auto e = v.get_raw_json_string().get(text)) {
    return e == simdjson::INCORRECT_TYPE ? at(index, field) + " is not a string" : malformed(e, at(index, field));
  }
  out = keyText(text);
  return std::nullopt;
}

#define GW_TRY(expr)                                \
  do {                                              \
    if (auto gw_error_ = (expr)) return gw_error_;  \
  } while (false)

std::optional<std::string> parseArgs(od::object args, TraceEventFields& raw, uint64_t index) {
  for (auto field_result : args) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return malformed(e, at(index, "args"));
    const std::string_view key = keyText(field.key());
    od::value v = field.value();
    if (key == "correlation") {
      GW_TRY(rawNumber(v, raw.correlation, index, "args.correlation"));
    } else if (key == "stream") {
      GW_TRY(rawNumber(v, raw.stream, index, "args.stream"));
    } else if (key == "bytes") {
      GW_TRY(rawNumber(v, raw.bytes, index, "args.bytes"));
    } else if (key == "size" && raw.category == Category::kRuntime) {
      // A HIP copy call's size as Kineto's roctracer back end writes it ("size": "4096"), whose
      // GPU record carries none; its rocprofiler back end calls it "bytes".
      GW_TRY(rawNumber(v, raw.bytes, index, "args.size"));
    } else if (key == "cbid") {
      GW_TRY(rawNumber(v, raw.cbid, index, "args.cbid"));
    } else if (key == "device") {
      GW_TRY(rawNumber(v, raw.device, index, "args.device"));
    } else if (key == "cuda_sync_kind") {
      GW_TRY(optionalString(v, raw.sync_kind, index, "args.cuda_sync_kind"));
    } else if (key == "name") {
      GW_TRY(optionalString(v, raw.arg_name, index, "args.name"));
    } else if (raw.category == Category::kCpuOp && isKinetoCommsArgKey(key)) {
      // record_param_comms' collective and sizes, kept as found; a value of another type is left
      // out (noteKinetoCommsArg), as it changes no time.
      od::json_type type;
      if (auto e = v.type().get(type)) return malformed(e, at(index, "args"));
      std::string_view text;
      int64_t number = 0;
      if (type == od::json_type::string) {
        GW_TRY(optionalString(v, text, index, "args"));
        noteKinetoCommsArg(raw.comms, key, text);
      } else if (type == od::json_type::number) {
        if (parseInt(trimRight(v.raw_json_token()), number)) noteKinetoCommsArg(raw.comms, key, number);
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> parsePidOrTid(od::value& v, TraceEventFields& raw, uint64_t index, bool is_pid) {
  od::json_type type;
  if (auto e = v.type().get(type)) return malformed(e, at(index, is_pid ? "pid" : "tid"));
  if (type == od::json_type::string) {
    std::string_view text;
    GW_TRY(stringValue(v, text, index, is_pid ? "pid" : "tid"));
    // A pid given as text (some exporters write names) is ignored.
    if (!is_pid) raw.tid_text = text, raw.tid_is_text = true, raw.has_tid = true;
  } else if (type == od::json_type::number) {
    int64_t value = 0;
    if (parseInt(trimRight(v.raw_json_token()), value)) {
      (is_pid ? raw.pid : raw.tid) = value;
      (is_pid ? raw.has_pid : raw.has_tid) = true;
    }
  }
  return std::nullopt;
}

// Reads the fields of one element; stops once ph and cat say the import does not use it.
std::optional<std::string> parseEvent(od::object event, uint64_t index, TraceEventFields& raw) {
  for (auto field_result : event) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return malformed(e, at(index));
    const std::string_view key = keyText(field.key());
    od::value v = field.value();
    // std::string_view == compares lengths first: most keys are told apart without a memcmp.
    if (key == "ph") {
      GW_TRY(shortString(v, raw.ph, index, "ph"));
      raw.has_ph = true;
    } else if (key == "cat") {
      GW_TRY(shortString(v, raw.cat, index, "cat"));
      raw.has_cat = true;
      raw.category = categoryOf(raw.cat);
    } else if (key == "ts") {
      GW_TRY(rawNumber(v, raw.ts, index, "ts"));
    } else if (key == "dur") {
      GW_TRY(rawNumber(v, raw.dur, index, "dur"));
    } else if (key == "name") {
      GW_TRY(stringValue(v, raw.name, index, "name"));
    } else if (key == "pid" || key == "tid") {
      GW_TRY(parsePidOrTid(v, raw, index, key == "pid"));
    } else if (key == "args") {
      od::object args;
      if (auto e = v.get_object().get(args)) {
        return e == simdjson::INCORRECT_TYPE ? at(index, "args") + " is not an object" : malformed(e, at(index, "args"));
      }
      GW_TRY(parseArgs(args, raw, index));
    }
    if (raw.has_ph && raw.has_cat && !isWanted(raw.ph, raw.category)) break;
    // A cpu_op's args (shapes, types: most of its bytes) are read only for record_param_comms.
    if (raw.category == Category::kCpuOp && !raw.name.empty() && raw.name != "record_param_comms" && raw.ts.present &&
        raw.dur.present && raw.has_tid) {
      break;
    }
  }
  return std::nullopt;
}

// --- the top level -------------------------------------------------------------------------------

// What the trace says about itself, outside traceEvents.
struct TraceMetadata {
  std::optional<int32_t> rank, world_size;
  bool has_distributed_info = false;
  uint64_t base_time_ns = 0;
  bool has_base_time = false;
  uint32_t schema_version = 0;  // schemaVersion and traceName: what the trace says it is (Hello)
  std::string trace_name;
};

// One top-level value (distributedInfo, baseTimeNanoseconds), parsed whole.
class MetadataParser {
 public:
  std::optional<std::string> parse(std::string_view key, std::string_view text, TraceMetadata& meta) {
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

 private:
  od::parser parser_;
};

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

using EventsReader = std::optional<std::string> (*)(void* context, JsonSplitter& s);

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

// --- the feed to the visitor ---------------------------------------------------------------------

// Hands events to the visitor as they come: device-block events in batches (the pipeline's
// reorder window puts them in order: within a CUPTI buffer's lag), held CPU-side events (steps)
// merged by time in front of the first batch that reaches them.
class Feed {
 public:
  // `before_hello` completes the metadata Hello needs (it may read the trace a second time).
  using BeforeHello = std::optional<std::string> (*)(void* context, uint64_t first_time_ns);
  Feed(RecordingVisitor& visitor, KinetoReadResult& result, const TraceMetadata& meta, BeforeHello before_hello, void* context)
      : visitor_(visitor), result_(result), meta_(meta), before_hello_(before_hello), context_(context),
        table_(std::make_shared<StringTable>()) {
    result_.strings = table_;
  }

  std::optional<std::string> call(const ApiCallEvent& c) {
    GW_TRY(room(c.start_ns));
    batch_.api_calls.push_back(c);
    added(c.start_ns, c.end_ns);
    ++api_calls_;
    return std::nullopt;
  }
  std::optional<std::string> activity(const DeviceActivityEvent& a) {
    GW_TRY(room(a.start_ns));
    batch_.activities.push_back(a);
    added(a.start_ns, a.end_ns);
    ++activities_;
    return std::nullopt;
  }
  // A CPU-side event: held until the feed reaches its time.
  void hold(const MarkerEvent& m) {
    held_.push_back(m);
    noteAppended(held_, held_in_order_, markerBefore);
    last_ns_ = std::max(last_ns_, m.time_ns);
    ++markers_;
    noteHeld();
  }
  // Host ranges (ops, data loading, annotations): CPU-side, held like markers.
  void hold(const HostRangeEvent& r) {
    held_host_.push_back(r);
    noteAppended(held_host_, held_host_in_order_, hostRangeBefore);
    last_ns_ = std::max(last_ns_, r.end_ns);
    noteHeld();
  }
  // A c10d NCCL range: CPU-side too, held like a marker.
  void hold(const NcclCallEvent& n) {
    held_nccl_.push_back(n);
    noteAppended(held_nccl_, held_nccl_in_order_, ncclCallBefore);
    last_ns_ = std::max(last_ns_, n.end_ns);
    ++nccl_calls_;
    noteHeld();
  }
  void define(v1::StringKind kind, uint32_t id, std::string text) { strings_.push_back({kind, id, std::move(text)}); }
  void setCpuPid(uint32_t pid) { cpu_pid_ = pid; }
  bool helloSent() const { return hello_sent_; }
  bool helloHadRank() const { return hello_had_rank_; }

  // The end of traceEvents: everything still held goes out.
  std::optional<std::string> finish() {
    GW_TRY(flush());
    if (!hello_sent_) GW_TRY(sendHello(anyHeld() ? earliestHeld() : 0));
    sortHeld();
    deliverHeld(held_.size(), held_nccl_.size(), held_host_.size());
    if (!strings_.empty()) deliver(batch_);
    return std::nullopt;
  }
  // After the whole trace was read and checked.
  void goodbye() {
    v1::Goodbye goodbye;
    goodbye.set_end_time_ns(last_ns_);
    // The trace ends with the profiler's window: how and when the process ended is not in it.
    goodbye.set_exit_reason(v1::EXIT_REASON_UNSPECIFIED);
    goodbye.set_batches(result_.health.batches);
    goodbye.set_api_calls(api_calls_);
    goodbye.set_activities(activities_);
    goodbye.set_markers(markers_);
    goodbye.set_nccl_calls(nccl_calls_);
    visitor_.onGoodbye(goodbye, 0);
    result_.read.summary.frames += 1;
    result_.health.has_goodbye = true;
  }

 private:
  // Flushes the batch first when this event would make it too long or span too much time.
  std::optional<std::string> room(uint64_t time_ns) {
    if (in_batch_ == 0) return std::nullopt;
    if (in_batch_ >= kBatchEvents || std::max(batch_max_, time_ns) - std::min(batch_min_, time_ns) > kBatchSpanNs) {
      return flush();
    }
    return std::nullopt;
  }
  void added(uint64_t start_ns, uint64_t end_ns) {
    if (in_batch_ == 0) batch_min_ = batch_max_ = start_ns;
    batch_min_ = std::min(batch_min_, start_ns);
    batch_max_ = std::max(batch_max_, start_ns);
    last_ns_ = std::max(last_ns_, end_ns);
    ++in_batch_;
    noteHeld();
  }
  void noteHeld() {
    result_.counts.max_held_events =
        std::max<uint64_t>(result_.counts.max_held_events, held_.size() + held_nccl_.size() + in_batch_);
    result_.counts.max_held_host_ranges = std::max<uint64_t>(result_.counts.max_held_host_ranges, held_host_.size());
  }
  static bool markerBefore(const MarkerEvent& a, const MarkerEvent& b) { return a.time_ns < b.time_ns; }
  static bool ncclCallBefore(const NcclCallEvent& a, const NcclCallEvent& b) { return a.start_ns < b.start_ns; }
  static bool hostRangeBefore(const HostRangeEvent& a, const HostRangeEvent& b) { return a.start_ns < b.start_ns; }
  // Each held list by time, file order kept among equal times; what was in order is not sorted
  // again (this runs at every batch).
  void sortHeld() {
    result_.counts.held_reordered += putInOrder(held_, held_in_order_, markerBefore);
    result_.counts.held_reordered += putInOrder(held_nccl_, held_nccl_in_order_, ncclCallBefore);
    result_.counts.held_reordered += putInOrder(held_host_, held_host_in_order_, hostRangeBefore);
  }
  bool anyHeld() const { return !held_.empty() || !held_nccl_.empty() || !held_host_.empty(); }
  uint64_t earliestHeld() {
    sortHeld();
    uint64_t t = UINT64_MAX;
    if (!held_.empty()) t = held_.front().time_ns;
    if (!held_nccl_.empty()) t = std::min(t, held_nccl_.front().start_ns);
    if (!held_host_.empty()) t = std::min(t, held_host_.front().start_ns);
    return t;
  }
  std::optional<std::string> flush() {
    if (in_batch_ == 0) return std::nullopt;
    if (!hello_sent_) GW_TRY(sendHello(anyHeld() ? std::min(batch_min_, earliestHeld()) : batch_min_));
    // Held events up to this batch's latest time go first, in a batch of their own, so that they
    // come after nothing later than the window allows.
    sortHeld();
    const auto due = std::upper_bound(held_.begin(), held_.end(), batch_max_,
                                      [](uint64_t t, const MarkerEvent& m) { return t < m.time_ns; });
    const auto due_nccl = std::upper_bound(held_nccl_.begin(), held_nccl_.end(), batch_max_,
                                           [](uint64_t t, const NcclCallEvent& n) { return t < n.start_ns; });
    const auto due_host = std::upper_bound(held_host_.begin(), held_host_.end(), batch_max_,
                                           [](uint64_t t, const HostRangeEvent& r) { return t < r.start_ns; });
    deliverHeld(static_cast<std::size_t>(due - held_.begin()), static_cast<std::size_t>(due_nccl - held_nccl_.begin()),
                static_cast<std::size_t>(due_host - held_host_.begin()));
    batch_.base_time_ns = batch_min_;
    deliver(batch_);
    in_batch_ = 0;
    return std::nullopt;
  }
  // Hands over the first `markers`, `nccl_calls` and `host_ranges` held events, merged by time in
  // batches of at most kBatchEvents, earliest first (a batch delivered after a later one could
  // come later than the reorder window allows).
  void deliverHeld(std::size_t markers, std::size_t nccl_calls, std::size_t host_ranges) {
    std::size_t m = 0, n = 0, h = 0;
    while (m < markers || n < nccl_calls || h < host_ranges) {
      DecodedBatch held;
      held.base_time_ns = UINT64_MAX;
      for (std::size_t count = 0; count < kBatchEvents && (m < markers || n < nccl_calls || h < host_ranges); ++count) {
        const uint64_t tm = m < markers ? held_[m].time_ns : UINT64_MAX;
        const uint64_t tn = n < nccl_calls ? held_nccl_[n].start_ns : UINT64_MAX;
        const uint64_t th = h < host_ranges ? held_host_[h].start_ns : UINT64_MAX;
        if (tm <= tn && tm <= th) {
          held.markers.push_back(held_[m++]);
        } else if (tn <= th) {
          held.nccl_calls.push_back(held_nccl_[n++]);
        } else {
          held.host_ranges.push_back(held_host_[h++]);
        }
        held.base_time_ns = std::min(held.base_time_ns, std::min(tm, std::min(tn, th)));
      }
      deliver(held);
    }
    held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(markers));
    held_nccl_.erase(held_nccl_.begin(), held_nccl_.begin() + static_cast<std::ptrdiff_t>(nccl_calls));
    held_host_.erase(held_host_.begin(), held_host_.begin() + static_cast<std::ptrdiff_t>(host_ranges));
    notePoppedFront(held_in_order_, markers);
    notePoppedFront(held_nccl_in_order_, nccl_calls);
    notePoppedFront(held_host_in_order_, host_ranges);
  }
  void deliver(DecodedBatch& batch) {
    batch.sequence = sequence_++;
    batch.strings.swap(strings_);
    for (const StringDefinition& s : batch.strings) table_->define(s.kind, s.id, s.text);
    visitor_.onBatch(batch, *table_);
    result_.read.summary.frames += 1;
    result_.health.batches += 1;
    batch.strings.clear();
    batch.api_calls.clear();
    batch.activities.clear();
    batch.markers.clear();
    batch.nccl_calls.clear();
    batch.host_ranges.clear();
  }
  std::optional<std::string> sendHello(uint64_t first_ns) {
    if (before_hello_ != nullptr) GW_TRY(before_hello_(context_, first_ns));
    v1::Hello hello;
    hello.set_wire_version(1);
    hello.set_pid(cpu_pid_);
    hello.set_host("");
    if (meta_.rank) hello.set_rank(*meta_.rank);
    hello_had_rank_ = meta_.rank.has_value();
    if (meta_.world_size) hello.set_world_size(*meta_.world_size);
    hello.add_probes(v1::PROBE_CUPTI_ACTIVITY);
    hello.set_clock(v1::CLOCK_DOMAIN_KINETO_US);
    hello.set_source(v1::STREAM_SOURCE_KINETO_TRACE);
    hello.set_trace_schema_version(meta_.schema_version);
    hello.set_trace_name(meta_.trace_name);
    hello.set_start_time_ns(first_ns);
    // Relative times without their base (not looked for: KinetoReadOptions::wall_clock) leave
    // the wall clock unknown (0) rather than a date in 1970.
    hello.set_start_unix_ns(meta_.has_base_time            ? meta_.base_time_ns + first_ns
                            : first_ns >= kEpochTimesFromNs ? first_ns
                                                            : 0);
    visitor_.onHello(hello, 0);
    hello_sent_ = true;
    result_.read.summary.frames += 1;
    result_.health.has_hello = true;
    return std::nullopt;
  }

  RecordingVisitor& visitor_;
  KinetoReadResult& result_;
  const TraceMetadata& meta_;
  BeforeHello before_hello_;
  void* context_;
  DecodedBatch batch_;
  std::size_t in_batch_ = 0;
  uint64_t batch_min_ = 0, batch_max_ = 0, last_ns_ = 0;
  std::vector<MarkerEvent> held_;
  std::vector<NcclCallEvent> held_nccl_;
  // A deque: a trace's CPU block can hold a million of them, handed over from the front a batch
  // at a time, which a vector would pay for by moving the rest each time.
  std::deque<HostRangeEvent> held_host_;
  // How many at the front of each held list are in order (reader/ordered_appends.h).
  std::size_t held_in_order_ = 0, held_nccl_in_order_ = 0, held_host_in_order_ = 0;
  std::vector<StringDefinition> strings_;
  std::shared_ptr<StringTable> table_;
  uint64_t sequence_ = 0;
  uint64_t api_calls_ = 0, activities_ = 0, markers_ = 0, nccl_calls_ = 0;
  uint32_t cpu_pid_ = 0;
  bool hello_sent_ = false;
  bool hello_had_rank_ = false;
};

// --- the reader ----------------------------------------------------------------------------------

// A hash that finds std::string keys by string_view, so that a name already interned costs no copy.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using NameTable = std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>>;

class TraceReader {
 public:
  TraceReader(RecordingVisitor& visitor, KinetoReadResult& result, const KinetoReadOptions& options)
      : result_(result), options_(options), feed_(visitor, result, meta_, &TraceReader::beforeHello, this) {}

  std::optional<std::string> read(ByteSource& text) {
    JsonSplitter splitter(text, JsonSplitter::Limits{});
    GW_TRY(walkTopLevel(splitter, metadata_parser_, meta_, &TraceReader::readEvents, this));
    result_.counts.max_buffered_bytes = std::max<uint64_t>(result_.counts.max_buffered_bytes, splitter.maxBuffered());
    calls_out_.clear();
    host_events_.flushPolls(calls_out_);
    for (const ApiCallEvent& ready : calls_out_) GW_TRY(feed_.call(ready));
    holdNcclCalls();
    result_.counts.host = host_events_.counts();
    GW_TRY(feed_.finish());
    result_.counts.held_reordered += call_sites_.reordered();
    if (options_.rank_at_end && !feed_.helloHadRank() && meta_.rank) {
      result_.late_rank = meta_.rank;
      result_.late_world_size = meta_.world_size;
    }
    feed_.goodbye();
    return std::nullopt;
  }

 private:
  static std::optional<std::string> readEvents(void* self, JsonSplitter& s) { return static_cast<TraceReader*>(self)->events(s); }
  static std::optional<std::string> beforeHello(void* self, uint64_t first_ns) {
    return static_cast<TraceReader*>(self)->completeMetadata(first_ns);
  }

  // traceEvents, at its '[': cut into elements, parsed a batch of about kParseBatchBytes at a time.
  std::optional<std::string> events(JsonSplitter& s) {
    s.take();
    uint64_t index = 0;
    if (s.peek() == ']') {
      s.take();
      return std::nullopt;
    }
    uint64_t from = 0, first = 0, count = 0;
    for (;;) {
      if (count == 0) {
        if (s.peek() < 0) return cutShort(s, "in traceEvents, before element " + std::to_string(index));
        from = s.offset();
        s.keepFrom(from - 1);  // the byte before becomes the batch's '['
        first = index;
      }
      const uint64_t element = s.offset();
      if (auto scan = s.scanValue(true); scan != JsonSplitter::Scan::kDone) return scanError(scan, s, at(index));
      const std::span<char> bytes = s.bytes(element, s.offset());
      if (plainlyUnused(std::string_view(bytes.data(), std::min<std::size_t>(bytes.size(), 1100)))) {
        std::memset(bytes.data(), ' ', bytes.size());
        bytes[0] = '{';
        bytes[1] = '}';
      }
      ++count;
      ++index;
      if (s.offset() - from >= kParseBatchBytes) {
        GW_TRY(parseBatch(s, from, s.offset(), first, count));
        count = 0;
      }
      const uint64_t end = s.offset();
      const int c = s.peek();
      if (c == ',') {
        s.take();
        continue;
      }
      if (c == ']') {
        if (count > 0) GW_TRY(parseBatch(s, from, end, first, count));
        s.take();
        break;
      }
      if (c < 0) return cutShort(s, "in traceEvents, after " + at(index - 1));
      return "expected ',' or ']' after " + at(index - 1) + " (" + byteText(s.offset()) + ")";
    }
    result_.counts.trace_events = index;
    return std::nullopt;
  }

  // Elements [from, to) of traceEvents, `count` of them from index `first`, parsed in place.
  std::optional<std::string> parseBatch(JsonSplitter& s, uint64_t from, uint64_t to, uint64_t first, uint64_t count) {
    const std::string_view json = s.frameArray(from, to);
    auto error = parseFramed(json, first, count);
    s.unframe();
    return error;
  }

  std::optional<std::string> parseFramed(std::string_view json, uint64_t first, uint64_t count) {
    static_assert(JsonSplitter::kPaddingAfterFrame >= simdjson::SIMDJSON_PADDING);
    const auto range = [&] { return count == 1 ? at(first) : at(first) + " to " + at(first + count - 1); };
    od::document doc;
    if (auto e = parser_.iterate(json.data(), json.size(), json.size() + simdjson::SIMDJSON_PADDING).get(doc)) {
      return malformed(e, range());
    }
    od::array elements;
    if (auto e = doc.get_array().get(elements)) return malformed(e, range());
    uint64_t index = first;
    TraceEventFields raw;
    for (auto element_result : elements) {
      od::value element;
      if (auto e = std::move(element_result).get(element)) return malformed(e, at(index));
      od::object event;
      if (auto e = element.get_object().get(event)) {
        return e == simdjson::INCORRECT_TYPE ? at(index) + " is not an object" : malformed(e, at(index));
      }
      raw = TraceEventFields{};
      GW_TRY(parseEvent(event, index, raw));
      GW_TRY(mapEvent(raw, index));
      ++index;
    }
    // The splitter balanced brackets of either kind: a '{' closed by ']' shows up here.
    const char* after = nullptr;
    if (index - first != count || doc.current_location().get(after) == simdjson::SUCCESS) {
      return "malformed JSON in " + range() + " (brackets do not match)";
    }
    return std::nullopt;
  }

  void holdNcclCalls() {
    for (const NcclCallEvent& call : host_events_.takeNcclCalls()) feed_.hold(call);
  }

  uint32_t threadId(const TraceEventFields& raw) {
    if (!raw.has_tid) return 0;
    if (raw.tid_is_text) {
      auto it = text_threads_.find(raw.tid_text);
      if (it != text_threads_.end()) return it->second;
      const uint32_t id = next_thread_++;
      text_threads_.emplace(std::string(raw.tid_text), id);
      feed_.define(v1::STRING_KIND_THREAD_NAME, id, std::string(raw.tid_text));
      return id;
    }
    auto [it, added] = threads_.emplace(raw.tid, next_thread_);
    if (added) {
      ++next_thread_;
      auto name = thread_names_.find(raw.tid);
      feed_.define(v1::STRING_KIND_THREAD_NAME, it->second,
                   name != thread_names_.end() ? name->second : "tid " + std::to_string(raw.tid));
    }
    return it->second;
  }

  uint32_t intern(v1::StringKind kind, NameTable& table, std::string_view text) {
    auto it = table.find(text);
    if (it != table.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(table.size() + 1);
    table.emplace(std::string(text), id);
    feed_.define(kind, id, std::string(text));
    return id;
  }

  // One element to gapwatch's events: the one place where a Kineto event becomes a gapwatch one.
  std::optional<std::string> mapEvent(const TraceEventFields& raw, uint64_t index) {
    if (raw.ph == "M") {
      if (raw.name == "thread_name" && raw.has_tid && !raw.tid_is_text && !raw.arg_name.empty()) {
        thread_names_[raw.tid] = std::string(raw.arg_name);
        auto known = threads_.find(raw.tid);
        if (known != threads_.end()) feed_.define(v1::STRING_KIND_THREAD_NAME, known->second, std::string(raw.arg_name));
      }
      return std::nullopt;
    }
    if (raw.ph != "X") return std::nullopt;
    const Category category = raw.category;
    if (category == Category::kSkip) return std::nullopt;
    uint64_t step = 0;
    const bool is_step = category == Category::kUserAnnotation && profilerStep(raw.name, step);
    // What the host was doing: every cpu_op, every other annotation, data-loading Python frames.
    const bool nccl_range = category == Category::kUserAnnotation && !is_step && ncclOpOfAnnotation(raw.name);
    v1::HostRangeKind host_kind = v1::HOST_RANGE_KIND_UNSPECIFIED;
    if (category == Category::kCpuOp) {
      host_kind = hostRangeKindOf(KinetoHostSource::kCpuOp, raw.name);
    } else if (category == Category::kUserAnnotation && !is_step && !nccl_range) {
      host_kind = hostRangeKindOf(KinetoHostSource::kUserAnnotation, raw.name);
      if (host_kind == v1::HOST_RANGE_KIND_UNSPECIFIED) return std::nullopt;
    } else if (category == Category::kPythonFunction) {
      host_kind = hostRangeKindOf(KinetoHostSource::kPythonFunction, raw.name);
    }
    // An op or annotation is evidence only: one whose times cannot be read is left out (counted),
    // not a reason to refuse the trace, as before gapwatch read them.
    const bool evidence_only = (category == Category::kCpuOp && raw.name != "record_param_comms") ||
                               (category == Category::kUserAnnotation && !is_step && !nccl_range);
    if (evidence_only) {
      uint64_t start = 0, length = 0;
      if (!raw.ts.present || !raw.ts.is_number || !microsToNs(raw.ts.text, start) ||
          (raw.dur.present && (!raw.dur.is_number || !microsToNs(raw.dur.text, length)))) {
        ++result_.counts.host_ranges_unreadable;
        return std::nullopt;
      }
    }

    if (!raw.ts.present) return at(index) + " (" + quoted(raw.cat) + ") has no ts";
    if (!raw.ts.is_number) return at(index, "ts") + " is not a number";
    if (raw.dur.present && !raw.dur.is_number) return at(index, "dur") + " is not a number";
    uint64_t ts = 0, dur = 0;
    if (!microsToNs(raw.ts.text, ts)) {
      return at(index, "ts") + " is not a non-negative decimal number (" + quoted(raw.ts.text) + ")";
    }
    if (raw.dur.present && !microsToNs(raw.dur.text, dur)) {
      return at(index, "dur") + " is not a non-negative decimal number (" + quoted(raw.dur.text) + ")";
    }
    int64_t correlation = 0, stream = 0, bytes = 0, cbid = 0, device = 0;
    bool has_correlation = false, has_stream = false, has_bytes = false, has_cbid = false, has_device = false;
    GW_TRY(intField(raw.correlation, correlation, has_correlation, index, "args.correlation"));
    GW_TRY(streamField(raw.stream, stream, has_stream, index));
    GW_TRY(intField(raw.bytes, bytes, has_bytes, index, "args.bytes"));
    GW_TRY(intField(raw.cbid, cbid, has_cbid, index, "args.cbid"));
    GW_TRY(intField(raw.device, device, has_device, index, "args.device"));
    const uint64_t end = eventEnd(ts, dur);
    if (raw.has_pid && raw.pid >= 0 && raw.pid <= UINT32_MAX && !has_cpu_pid_ &&
        (category == Category::kRuntime || category == Category::kDriver || category == Category::kUserAnnotation ||
         category == Category::kCpuOp)) {
      feed_.setCpuPid(static_cast<uint32_t>(raw.pid));
      has_cpu_pid_ = true;
    }
    first_used_ns_ = std::min(first_used_ns_, ts);

    switch (category) {
      case Category::kKernel:
      case Category::kMemcpy:
      case Category::kMemset:
      case Category::kSync: {
        DeviceActivityEvent a;
        a.device = has_device && device >= 0 ? static_cast<uint32_t>(device)
                   : raw.has_pid && raw.pid >= 0     ? static_cast<uint32_t>(raw.pid)
                                                     : 0;
        a.stream = has_stream ? static_cast<uint64_t>(stream)
                   : (raw.has_tid && !raw.tid_is_text) ? static_cast<uint64_t>(raw.tid)
                                                       : 0;
        a.start_ns = ts;
        a.end_ns = end;
        a.correlation_id = has_correlation && correlation > 0 ? static_cast<uint64_t>(correlation) : 0;
        a.bytes = has_bytes && bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
        if (category == Category::kKernel) {
          a.kind = v1::ACTIVITY_KIND_KERNEL;
          a.name_id = intern(v1::STRING_KIND_KERNEL_NAME, kernel_names_, raw.name);
          ++result_.counts.kernels;
        } else if (category == Category::kMemcpy) {
          a.kind = v1::ACTIVITY_KIND_MEMCPY;
          parseMemcpyName(raw.name, a);
          ++result_.counts.memcpys;
        } else if (category == Category::kMemset) {
          a.kind = v1::ACTIVITY_KIND_MEMSET;
          parseMemsetName(raw.name, a);
          ++result_.counts.memsets;
        } else {
          a.kind = v1::ACTIVITY_KIND_SYNC;
          a.sync_kind = syncKindFromName(raw.sync_kind.empty() ? raw.name : raw.sync_kind);
          ++result_.counts.syncs;
        }
        return feed_.activity(a);
      }
      case Category::kRuntime:
      case Category::kDriver: {
        ApiCallEvent c;
        const ApiClass cls = classifyApi(raw.name);
        c.kind = cls.kind;
        c.blocked = cls.blocked;
        c.thread_id = threadId(raw);
        c.start_ns = ts;
        c.end_ns = end;
        c.correlation_id = has_correlation && correlation > 0 ? static_cast<uint64_t>(correlation) : 0;
        c.domain = category == Category::kRuntime ? v1::API_DOMAIN_RUNTIME : v1::API_DOMAIN_DRIVER;
        c.cbid = has_cbid && cbid >= 0 && cbid <= UINT32_MAX ? static_cast<uint32_t>(cbid) : 0;
        // A copy call's size where the writer put it on the call (ROCm); the analysis joins the
        // GPU record's otherwise (AnalysisPipeline::Fanout::onApiCall).
        if (has_bytes && bytes > 0 && (c.kind == v1::API_KIND_MEMCPY || c.kind == v1::API_KIND_MEMCPY_ASYNC)) {
          c.bytes = static_cast<uint64_t>(bytes);
        }
        c.api_name_id = intern(v1::STRING_KIND_API_NAME, api_names_, raw.name);
        // Where in Python it was made: the innermost python_function around it on its thread.
        if (const std::string* site = call_sites_.siteOf(c.thread_id, c.start_ns, c.end_ns)) {
          c.call_site_id = intern(v1::STRING_KIND_CALL_SITE, call_site_names_, *site);
          // And the whole stack, so that reports name the user's line as they do a recording's.
          c.python_stack_id = intern(v1::STRING_KIND_PYTHON_STACK, python_stack_names_,
                                     call_sites_.stackOf(c.thread_id, c.start_ns, c.end_ns));
        }
        ++result_.counts.api_calls;
        if (c.kind == v1::API_KIND_LAUNCH) ++result_.counts.launches;
        if (cpu_side_pending_) {
          // A CPU block is over (a trace has one; traces joined end to end have several): its
          // c10d ranges are all in, so the NCCL calls can be checked against each other and held
          // for the feed, which hands them over by time.
          cpu_side_pending_ = false;
          holdNcclCalls();
        }
        // A thread's polls are merged into one call (kineto_host_events.h): what is ready goes on.
        calls_out_.clear();
        host_events_.onApiCall(c, calls_out_);
        for (const ApiCallEvent& ready : calls_out_) GW_TRY(feed_.call(ready));
        return std::nullopt;
      }
      case Category::kPythonFunction:
        call_sites_.onPythonFunction(threadId(raw), ts, end, raw.name);
        holdHostRange(host_kind, raw, ts, end);
        return std::nullopt;
      case Category::kCpuOp:
        if (raw.name == "record_param_comms") {
          host_events_.onRecordParamComms(threadId(raw), ts, end, raw.comms);
          cpu_side_pending_ = true;
        }
        holdHostRange(host_kind, raw, ts, end);
        return std::nullopt;
      case Category::kUserAnnotation: {
        if (nccl_range) {
          host_events_.onUserAnnotation(threadId(raw), ts, end, raw.name);
          cpu_side_pending_ = true;
          return std::nullopt;
        }
        if (!is_step) {
          holdHostRange(host_kind, raw, ts, end);
          return std::nullopt;
        }
        // CPU-side: the trace holds these first, long before the device work of their time.
        MarkerEvent m;
        m.thread_id = threadId(raw);
        m.name_id = intern(v1::STRING_KIND_MARKER_NAME, marker_names_, raw.name);
        m.step = step;
        m.kind = v1::MARKER_KIND_STEP_BEGIN;
        m.time_ns = ts;
        feed_.hold(m);
        m.kind = v1::MARKER_KIND_STEP_END;
        m.time_ns = end;
        feed_.hold(m);
        ++result_.counts.steps;
        return std::nullopt;
      }
      case Category::kSkip: break;
    }
    return std::nullopt;
  }

  void holdHostRange(v1::HostRangeKind kind, const TraceEventFields& raw, uint64_t start_ns, uint64_t end_ns) {
    if (kind == v1::HOST_RANGE_KIND_UNSPECIFIED) return;
    ranges_out_.clear();
    const uint32_t thread = threadId(raw);
    // The name is interned only for a range that is kept: most ops are nested in another.
    if (!host_ranges_.add(kind, thread, start_ns, end_ns, 0, ranges_out_)) {
      ++result_.counts.nested_ops;
      return;
    }
    for (HostRangeEvent& r : ranges_out_) {
      r.name_id = intern(v1::STRING_KIND_HOST_RANGE_NAME, host_range_names_, raw.name);
      feed_.hold(r);
      ++result_.counts.host_ranges;
    }
  }

  // Before the Hello: the metadata it needs may come after traceEvents (nccl_rank-0 has
  // baseTimeNanoseconds last). Then, if the trace can be read again, a second pass that only
  // walks the top level (traceEvents skipped by the splitter) finds it.
  std::optional<std::string> completeMetadata(uint64_t first_ns) {
    const bool relative = std::min(first_used_ns_, first_ns) < kEpochTimesFromNs;
    const bool missing = (!meta_.has_distributed_info && !options_.rank_at_end) ||
                         (relative && !meta_.has_base_time && options_.wall_clock);
    if (!missing || !options_.reopen) return std::nullopt;
    std::unique_ptr<ByteSource> again = options_.reopen();
    if (!again) return std::nullopt;
    TraceMetadata found;
    MetadataParser parser;
    std::unique_ptr<ByteSource> text;
    GW_TRY(openText(*again, text));
    JsonSplitter splitter(*text, JsonSplitter::Limits{});
    if (auto error = walkTopLevel(splitter, parser, found, nullptr, nullptr)) return *error;
    if (found.has_distributed_info) {
      meta_.has_distributed_info = true;
      meta_.rank = found.rank;
      meta_.world_size = found.world_size;
    }
    if (found.has_base_time) {
      meta_.has_base_time = true;
      meta_.base_time_ns = found.base_time_ns;
    }
    if (meta_.schema_version == 0) meta_.schema_version = found.schema_version;
    if (meta_.trace_name.empty()) meta_.trace_name = found.trace_name;
    result_.counts.metadata_passes = 2;
    return std::nullopt;
  }

 public:
  // The JSON text of a trace source: itself, or inflated when it starts with the gzip magic.
  static std::optional<std::string> openText(ByteSource& raw, std::unique_ptr<ByteSource>& text);

 private:
  KinetoReadResult& result_;
  const KinetoReadOptions& options_;
  TraceMetadata meta_;
  MetadataParser metadata_parser_;
  Feed feed_;
  od::parser parser_;
  bool has_cpu_pid_ = false;
  uint64_t first_used_ns_ = UINT64_MAX;
  KinetoHostEvents host_events_;
  KinetoCallSites call_sites_;
  NameTable call_site_names_;
  NameTable python_stack_names_;
  KinetoHostRanges host_ranges_;
  std::vector<HostRangeEvent> ranges_out_;  // what host_ranges_ kept of one event, reused
  NameTable host_range_names_;
  std::vector<ApiCallEvent> calls_out_;  // calls handed on by host_events_, reused
  bool cpu_side_pending_ = false;        // c10d ranges given to host_events_ since the last take
  std::unordered_map<int64_t, uint32_t> threads_;
  NameTable text_threads_;
  std::unordered_map<int64_t, std::string> thread_names_;  // tid -> M thread_name
  NameTable kernel_names_, api_names_, marker_names_;
  uint32_t next_thread_ = 1;
};

#undef GW_TRY

// The first bytes of a source, kept so that they can be sniffed and then still read.
class PrefixedSource final : public ByteSource {
 public:
  PrefixedSource(ByteSource& inner, std::vector<uint8_t> head) : inner_(inner), head_(std::move(head)) {}
  std::size_t read(std::span<uint8_t> buffer) override {
    if (at_ < head_.size()) {
      const std::size_t n = std::min(buffer.size(), head_.size() - at_);
      std::memcpy(buffer.data(), head_.data() + at_, n);
      at_ += n;
      return n;
    }
    return inner_.read(buffer);
  }
  const std::string& failure() const override { return inner_.failure(); }

 private:
  ByteSource& inner_;
  std::vector<uint8_t> head_;
  std::size_t at_ = 0;
};

// Counts the bytes read from the file (ReadSummary.bytes_read) and owns what wraps it.
class CountingSource final : public ByteSource {
 public:
  explicit CountingSource(ByteSource& inner) : inner_(inner) {}
  std::size_t read(std::span<uint8_t> buffer) override {
    const std::size_t n = inner_.read(buffer);
    count += n;
    return n;
  }
  const std::string& failure() const override { return inner_.failure(); }
  uint64_t count = 0;

 private:
  ByteSource& inner_;
};

std::optional<std::string> TraceReader::openText(ByteSource& raw, std::unique_ptr<ByteSource>& text) {
  std::vector<uint8_t> head(2);
  std::size_t have = 0;
  while (have < head.size()) {
    const std::size_t n = raw.read(std::span<uint8_t>(head).subspan(have));
    if (n == 0) break;
    have += n;
  }
  if (have == 0 && !raw.failure().empty()) return raw.failure();
  head.resize(have);
  if (isGzip(head)) {
    // The gzip source reads the rest of `raw` after these two bytes.
    struct Inflated final : ByteSource {
      Inflated(ByteSource& raw, std::span<const uint8_t> head) : gzip(raw, head) {}
      std::size_t read(std::span<uint8_t> b) override { return gzip.read(b); }
      const std::string& failure() const override { return gzip.failure(); }
      GzipByteSource gzip;
    };
    text = std::make_unique<Inflated>(raw, head);
  } else {
    struct Owned final : ByteSource {
      Owned(ByteSource& raw, std::vector<uint8_t> head) : source(raw, std::move(head)) {}
      std::size_t read(std::span<uint8_t> b) override { return source.read(b); }
      const std::string& failure() const override { return source.failure(); }
      PrefixedSource source;
    };
    text = std::make_unique<Owned>(raw, std::move(head));
  }
  return std::nullopt;
}

KinetoReadResult refused(KinetoReadResult result, ReadErrorKind kind, std::string message) {
  result.read.error = ReadError{kind, "Kineto trace: " + std::move(message), 0};
  result.read.summary.frames = 0;
  const uint64_t max_held = result.counts.max_held_events;
  result.counts = {};
  result.counts.max_held_events = max_held;
  return result;
}

}  // namespace

bool looksLikeKinetoTrace(std::span<const uint8_t> first_bytes) {
  if (isGzip(first_bytes)) return true;
  for (uint8_t c : first_bytes) {
    if (isJsonSpace(static_cast<char>(c))) continue;
    return c == '{';
  }
  return false;
}

bool fileLooksLikeKinetoTrace(const std::string& path) {
  FileByteSource source(path);
  if (!source.isOpen()) return false;
  std::array<uint8_t, 256> head{};
  std::size_t have = 0;
  while (have < head.size()) {
    const std::size_t n = source.read(std::span<uint8_t>(head).subspan(have));
    if (n == 0) break;
    have += n;
  }
  return looksLikeKinetoTrace(std::span<const uint8_t>(head.data(), have));
}

KinetoReadResult readKinetoTrace(ByteSource& source, RecordingVisitor& visitor, const KinetoReadOptions& options) {
  KinetoReadResult result;
  CountingSource counted(source);
  // Sniff the start: gzip, or JSON that opens an object (after whitespace).
  std::vector<uint8_t> head(256);
  std::size_t have = 0;
  while (have < head.size()) {
    const std::size_t n = counted.read(std::span<uint8_t>(head).subspan(have));
    if (n == 0) break;
    have += n;
  }
  head.resize(have);
  if (have == 0 && !counted.failure().empty()) return refused(std::move(result), ReadErrorKind::kCannotRead, counted.failure());
  if (have == 0) return refused(std::move(result), ReadErrorKind::kEmpty, "the file is empty");
  if (!looksLikeKinetoTrace(head)) return refused(std::move(result), ReadErrorKind::kNotRecording, "not gzip or a JSON object");
  const bool gzip = isGzip(head);
  PrefixedSource raw(counted, std::move(head));
  std::unique_ptr<ByteSource> text;
  if (auto error = TraceReader::openText(raw, text)) return refused(std::move(result), ReadErrorKind::kCannotRead, *error);
  if (gzip) {
    // The inflated data must itself be a JSON object, not (say) a gzipped recording.
    std::vector<uint8_t> inner(256);
    std::size_t got = 0;
    while (got < inner.size()) {
      const std::size_t n = text->read(std::span<uint8_t>(inner).subspan(got));
      if (n == 0) break;
      got += n;
    }
    inner.resize(got);
    if (got == 0 && !text->failure().empty()) return refused(std::move(result), ReadErrorKind::kCorrupt, text->failure());
    if (!looksLikeKinetoTrace(inner) || isGzip(inner)) {
      return refused(std::move(result), ReadErrorKind::kNotRecording, "the gzip data is not a JSON object");
    }
    struct Rejoined final : ByteSource {
      Rejoined(std::unique_ptr<ByteSource> inflated, std::vector<uint8_t> head)
          : owned(std::move(inflated)), source(*owned, std::move(head)) {}
      std::size_t read(std::span<uint8_t> b) override { return source.read(b); }
      const std::string& failure() const override { return source.failure(); }
      std::unique_ptr<ByteSource> owned;
      PrefixedSource source;
    };
    text = std::make_unique<Rejoined>(std::move(text), std::move(inner));
  }
  TraceReader reader(visitor, result, options);
  const std::optional<std::string> error = reader.read(*text);
  result.read.summary.bytes_read = counted.count;
  if (error) return refused(std::move(result), ReadErrorKind::kCorrupt, *error);
  return result;
}

KinetoReadResult readKinetoTrace(ByteSource& source, RecordingVisitor& visitor) {
  return readKinetoTrace(source, visitor, KinetoReadOptions{});
}

KinetoReadResult readKinetoTraceFile(const std::string& path, RecordingVisitor& visitor) {
  return readKinetoTraceFile(path, visitor, KinetoReadOptions{});
}

KinetoReadResult readKinetoTraceFile(const std::string& path, RecordingVisitor& visitor, KinetoReadOptions options) {
  FileByteSource source(path);
  if (!source.isOpen()) {
    KinetoReadResult result;
    result.read.error = ReadError{ReadErrorKind::kCannotRead, source.failure(), 0};
    return result;
  }
  // A file can be opened again: metadata after traceEvents then costs a second, top-level pass.
  options.reopen = [path]() -> std::unique_ptr<ByteSource> {
    auto again = std::make_unique<FileByteSource>(path);
    if (!again->isOpen()) return nullptr;
    return again;
  };
  return readKinetoTrace(source, visitor, options);
}

}  // namespace gapwatch
