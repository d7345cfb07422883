// reader/kineto_event_fields.cpp: see kineto_event_fields.h.
#include "reader/kineto_event_fields.h"

#include "reader/kineto_numbers.h"
#include "reader/kineto_text.h"

#include <cstring>
#include <utility>

namespace gapwatch::kineto {

namespace od = simdjson::ondemand;

namespace {

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
    } else if (key == "wait_on_cuda_event_record_corr_id" && raw.category == Category::kSync) {
      GW_TRY(rawNumber(v, raw.wait_on_correlation, index, "args.wait_on_cuda_event_record_corr_id"));
    } else if (key == "wait_on_stream" && raw.category == Category::kSync) {
      GW_TRY(rawNumber(v, raw.wait_on_stream, index, "args.wait_on_stream"));
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

}  // namespace

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

std::optional<std::string> streamField(const RawNumber& n, int64_t& value, bool& has, uint64_t index) {
  uint64_t pointer = 0;
  if (n.present && n.is_string && parsePointer(n.text, pointer)) {
    value = static_cast<int64_t>(pointer);
    has = true;
    return std::nullopt;
  }
  return intField(n, value, has, index, "args.stream");
}

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

}  // namespace gapwatch::kineto
