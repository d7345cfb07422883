// reader/kineto_trace.cpp: see kineto_trace.h.
#include "reader/kineto_trace.h"

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gapwatch {
namespace {

namespace od = simdjson::ondemand;

constexpr std::size_t kBatchEvents = 4096;
// A batch never spans more than this, so that the pipeline's 2 s reorder window takes a batch's
// lists (api calls, then activities, ...) in any order.
constexpr uint64_t kBatchSpanNs = 1'000'000'000;

bool isGzip(std::span<const uint8_t> b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }

bool isSpace(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// --- bytes ---------------------------------------------------------------------------------------

// Reads everything from `source` (at most kMaxKinetoTraceBytes); an error line or nullopt.
std::optional<std::string> readAll(ByteSource& source, std::string& out) {
  std::array<uint8_t, 1 << 16> chunk;
  for (;;) {
    const std::size_t n = source.read(chunk);
    if (n == 0) break;
    if (out.size() + n > kMaxKinetoTraceBytes) {
      return "trace is over " + std::to_string(kMaxKinetoTraceBytes >> 30) + " GiB: not read";
    }
    out.append(reinterpret_cast<const char*>(chunk.data()), n);
  }
  if (!source.failure().empty()) return source.failure();
  return std::nullopt;
}

// Inflates a gzip stream (concatenated members accepted); an error line or nullopt.
std::optional<std::string> inflateGzip(const std::string& in, std::string& out) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return "gzip: cannot start zlib";
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), UINT32_MAX));
  std::array<char, 1 << 18> buffer;
  std::optional<std::string> error;
  for (;;) {
    z.next_out = reinterpret_cast<Bytef*>(buffer.data());
    z.avail_out = static_cast<uInt>(buffer.size());
    const int rc = inflate(&z, Z_NO_FLUSH);
    const std::size_t produced = buffer.size() - z.avail_out;
    if (out.size() + produced > kMaxKinetoTraceBytes) {
      error = "inflated trace is over " + std::to_string(kMaxKinetoTraceBytes >> 30) + " GiB: not read";
      break;
    }
    out.append(buffer.data(), produced);
    if (rc == Z_STREAM_END) {
      const std::size_t consumed = static_cast<std::size_t>(z.next_in - reinterpret_cast<const Bytef*>(in.data()));
      if (consumed >= in.size()) break;
      // Another member follows (or trailing garbage: then the next inflate fails).
      if (inflateReset(&z) != Z_OK) { error = "gzip: cannot restart zlib"; break; }
      z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size() - consumed, UINT32_MAX));
      continue;
    }
    if (rc == Z_OK) {
      if (z.avail_in == 0) {
        const std::size_t consumed = static_cast<std::size_t>(z.next_in - reinterpret_cast<const Bytef*>(in.data()));
        if (consumed >= in.size()) { error = "gzip stream is cut short"; break; }
        z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size() - consumed, UINT32_MAX));
      }
      continue;
    }
    if (rc == Z_BUF_ERROR) {
      error = "gzip stream is cut short";
      break;
    }
    error = std::string("gzip stream is corrupt (") + (z.msg != nullptr ? z.msg : "zlib error") + ")";
    break;
  }
  inflateEnd(&z);
  return error;
}

// --- numbers -------------------------------------------------------------------------------------

std::string_view trimRight(std::string_view s) {
  while (!s.empty() && isSpace(static_cast<uint8_t>(s.back()))) s.remove_suffix(1);
  return s;
}

// A non-negative decimal number of microseconds ("12", "68.0", "4458676522690.655") to integer
// nanoseconds, exactly (digits past the third decimal are cut). False for anything else (a sign,
// an exponent, NaN, or a value over UINT64_MAX ns).
bool microsToNs(std::string_view text, uint64_t& ns) {
  text = trimRight(text);
  std::size_t i = 0;
  uint64_t whole = 0;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (whole > (UINT64_MAX / 1000 - 9) / 10) return false;
    whole = whole * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  uint64_t frac = 0;
  int frac_digits = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (frac_digits < 3) {
        frac = frac * 10 + static_cast<uint64_t>(text[i] - '0');
        ++frac_digits;
      }
      ++i;
    }
  }
  if (i != text.size()) return false;
  while (frac_digits < 3) frac *= 10, ++frac_digits;
  ns = whole * 1000 + frac;
  return true;
}

// An integer (optionally negative); a float with no fractional part ("7.0") is accepted too.
bool parseInt(std::string_view text, int64_t& value) {
  text = trimRight(text);
  bool negative = false;
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') negative = true, ++i;
  if (i >= text.size() || text[i] < '0' || text[i] > '9') return false;
  uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (v > (uint64_t{1} << 62)) return false;
    v = v * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] == '0') ++i;
  }
  if (i != text.size()) return false;
  value = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

// --- names ---------------------------------------------------------------------------------------

// cudaLaunchKernel_v7000, cudaMemcpyAsync_ptsz, cuLaunchKernel_ptsz -> the base name.
std::string_view baseApiName(std::string_view name) {
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    const std::size_t at = name.find(suffix);
    if (at != std::string_view::npos) name = name.substr(0, at);
  }
  const std::size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(v + 2), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    name = name.substr(0, v);
  }
  return name;
}

struct ApiClass {
  v1::ApiKind kind = v1::API_KIND_OTHER;
  bool blocked = false;  // the call waits for the device by its nature (as the recorder flags it)
};

ApiClass classifyApi(std::string_view full_name) {
  const std::string_view n = baseApiName(full_name);
  struct Entry {
    std::string_view name;
    v1::ApiKind kind;
    bool blocked;
  };
  static constexpr Entry kTable[] = {
      {"cudaLaunchKernel", v1::API_KIND_LAUNCH, false},
      {"cudaLaunchKernelExC", v1::API_KIND_LAUNCH, false},
      {"cudaLaunchCooperativeKernel", v1::API_KIND_LAUNCH, false},
      {"cudaLaunchCooperativeKernelMultiDevice", v1::API_KIND_LAUNCH, false},
      {"cuLaunchKernel", v1::API_KIND_LAUNCH, false},
      {"cuLaunchKernelEx", v1::API_KIND_LAUNCH, false},
      {"cuLaunchCooperativeKernel", v1::API_KIND_LAUNCH, false},
      {"cudaGraphLaunch", v1::API_KIND_GRAPH_LAUNCH, false},
      {"cuGraphLaunch", v1::API_KIND_GRAPH_LAUNCH, false},
      {"cudaMemcpy", v1::API_KIND_MEMCPY, false},
      {"cudaMemcpy2D", v1::API_KIND_MEMCPY, false},
      {"cudaMemcpy3D", v1::API_KIND_MEMCPY, false},
      {"cudaMemcpyPeer", v1::API_KIND_MEMCPY, false},
      {"cudaMemcpyToSymbol", v1::API_KIND_MEMCPY, false},
      {"cudaMemcpyFromSymbol", v1::API_KIND_MEMCPY, false},
      {"cuMemcpy", v1::API_KIND_MEMCPY, false},
      {"cuMemcpyHtoD", v1::API_KIND_MEMCPY, false},
      {"cuMemcpyDtoH", v1::API_KIND_MEMCPY, false},
      {"cuMemcpyDtoD", v1::API_KIND_MEMCPY, false},
      {"cudaMemcpyAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cudaMemcpy2DAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cudaMemcpy3DAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cudaMemcpyPeerAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cudaMemcpyToSymbolAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cudaMemcpyFromSymbolAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cuMemcpyAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cuMemcpyHtoDAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cuMemcpyDtoHAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cuMemcpyDtoDAsync", v1::API_KIND_MEMCPY_ASYNC, false},
      {"cudaMemset", v1::API_KIND_MEMSET, false},
      {"cudaMemset2D", v1::API_KIND_MEMSET, false},
      {"cuMemsetD8", v1::API_KIND_MEMSET, false},
      {"cuMemsetD32", v1::API_KIND_MEMSET, false},
      {"cudaMemsetAsync", v1::API_KIND_MEMSET_ASYNC, false},
      {"cudaMemset2DAsync", v1::API_KIND_MEMSET_ASYNC, false},
      {"cuMemsetD8Async", v1::API_KIND_MEMSET_ASYNC, false},
      {"cuMemsetD32Async", v1::API_KIND_MEMSET_ASYNC, false},
      {"cudaDeviceSynchronize", v1::API_KIND_DEVICE_SYNC, true},
      {"cudaThreadSynchronize", v1::API_KIND_DEVICE_SYNC, true},
      {"cuCtxSynchronize", v1::API_KIND_DEVICE_SYNC, true},
      {"cudaStreamSynchronize", v1::API_KIND_STREAM_SYNC, true},
      {"cuStreamSynchronize", v1::API_KIND_STREAM_SYNC, true},
      {"cudaEventSynchronize", v1::API_KIND_EVENT_SYNC, true},
      {"cuEventSynchronize", v1::API_KIND_EVENT_SYNC, true},
      {"cudaEventRecord", v1::API_KIND_EVENT_RECORD, false},
      {"cudaEventRecordWithFlags", v1::API_KIND_EVENT_RECORD, false},
      {"cuEventRecord", v1::API_KIND_EVENT_RECORD, false},
      {"cuEventRecordWithFlags", v1::API_KIND_EVENT_RECORD, false},
      {"cudaStreamWaitEvent", v1::API_KIND_STREAM_WAIT_EVENT, false},
      {"cuStreamWaitEvent", v1::API_KIND_STREAM_WAIT_EVENT, false},
      {"cudaEventQuery", v1::API_KIND_QUERY, false},
      {"cudaStreamQuery", v1::API_KIND_QUERY, false},
      {"cuEventQuery", v1::API_KIND_QUERY, false},
      {"cuStreamQuery", v1::API_KIND_QUERY, false},
      {"cudaMalloc", v1::API_KIND_MALLOC, true},
      {"cudaMallocManaged", v1::API_KIND_MALLOC, true},
      {"cudaMallocAsync", v1::API_KIND_MALLOC, false},
      {"cuMemAlloc", v1::API_KIND_MALLOC, true},
      {"cudaFree", v1::API_KIND_FREE, true},
      {"cudaFreeAsync", v1::API_KIND_FREE, false},
      {"cuMemFree", v1::API_KIND_FREE, true},
      {"cudaMallocHost", v1::API_KIND_HOST_ALLOC, false},
      {"cudaHostAlloc", v1::API_KIND_HOST_ALLOC, false},
      {"cudaHostRegister", v1::API_KIND_HOST_ALLOC, false},
      {"cuMemAllocHost", v1::API_KIND_HOST_ALLOC, false},
      {"cuMemHostAlloc", v1::API_KIND_HOST_ALLOC, false},
      {"cudaFreeHost", v1::API_KIND_HOST_FREE, true},
      {"cudaHostUnregister", v1::API_KIND_HOST_FREE, false},
      {"cuMemFreeHost", v1::API_KIND_HOST_FREE, true},
      {"cuModuleLoad", v1::API_KIND_MODULE_LOAD, false},
      {"cuModuleLoadData", v1::API_KIND_MODULE_LOAD, false},
      {"cuModuleLoadDataEx", v1::API_KIND_MODULE_LOAD, false},
      {"cuLibraryLoadData", v1::API_KIND_MODULE_LOAD, false},
      {"cudaStreamBeginCapture", v1::API_KIND_CAPTURE_BEGIN, false},
      {"cuStreamBeginCapture", v1::API_KIND_CAPTURE_BEGIN, false},
      {"cudaStreamEndCapture", v1::API_KIND_CAPTURE_END, false},
      {"cuStreamEndCapture", v1::API_KIND_CAPTURE_END, false},
      {"cudaGraphInstantiate", v1::API_KIND_GRAPH_INSTANTIATE, false},
      {"cudaGraphInstantiateWithFlags", v1::API_KIND_GRAPH_INSTANTIATE, false},
      {"cudaGraphInstantiateWithParams", v1::API_KIND_GRAPH_INSTANTIATE, false},
      {"cuGraphInstantiate", v1::API_KIND_GRAPH_INSTANTIATE, false},
      {"cuGraphInstantiateWithFlags", v1::API_KIND_GRAPH_INSTANTIATE, false},
  };
  for (const Entry& e : kTable) {
    if (e.name == n) return {e.kind, e.blocked};
  }
  return {};
}

v1::MemoryKind memoryKindFromWord(std::string_view w) {
  if (w == "Pageable") return v1::MEMORY_KIND_PAGEABLE;
  if (w == "Pinned") return v1::MEMORY_KIND_PINNED;
  if (w == "Device") return v1::MEMORY_KIND_DEVICE;
  if (w == "Array") return v1::MEMORY_KIND_ARRAY;
  if (w == "Managed") return v1::MEMORY_KIND_MANAGED;
  if (w == "DeviceStatic") return v1::MEMORY_KIND_DEVICE_STATIC;
  if (w == "ManagedStatic") return v1::MEMORY_KIND_MANAGED_STATIC;
  return v1::MEMORY_KIND_UNSPECIFIED;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(static_cast<uint8_t>(s.front()))) s.remove_prefix(1);
  return trimRight(s);
}

// "Memcpy HtoD (Pageable -> Device)" -> H2D, PAGEABLE, DEVICE.
void parseMemcpyName(std::string_view name, DeviceActivityEvent& a) {
  struct Dir {
    std::string_view word;
    v1::CopyKind kind;
  };
  static constexpr Dir kDirs[] = {{"HtoD", v1::COPY_KIND_H2D}, {"DtoH", v1::COPY_KIND_D2H}, {"DtoD", v1::COPY_KIND_D2D},
                                  {"HtoH", v1::COPY_KIND_H2H}, {"PtoP", v1::COPY_KIND_P2P}};
  for (const Dir& d : kDirs) {
    if (name.find(d.word) != std::string_view::npos) a.copy_kind = d.kind;
  }
  const std::size_t open = name.find('(');
  const std::size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;
  const std::string_view inside = name.substr(open + 1, close - open - 1);
  const std::size_t arrow = inside.find("->");
  if (arrow == std::string_view::npos) return;
  a.src_memory = memoryKindFromWord(trim(inside.substr(0, arrow)));
  a.dst_memory = memoryKindFromWord(trim(inside.substr(arrow + 2)));
}

// "Memset (Device)" -> dst DEVICE.
void parseMemsetName(std::string_view name, DeviceActivityEvent& a) {
  const std::size_t open = name.find('(');
  const std::size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;
  a.dst_memory = memoryKindFromWord(trim(name.substr(open + 1, close - open - 1)));
}

v1::SyncKind syncKindFromName(std::string_view n) {
  if (n == "Stream Sync") return v1::SYNC_KIND_STREAM_SYNCHRONIZE;
  if (n == "Context Sync") return v1::SYNC_KIND_CONTEXT_SYNCHRONIZE;
  if (n == "Stream Wait Event") return v1::SYNC_KIND_STREAM_WAIT_EVENT;
  if (n == "Event Sync") return v1::SYNC_KIND_EVENT_SYNCHRONIZE;
  return v1::SYNC_KIND_UNSPECIFIED;
}

// "ProfilerStep#12" -> 12.
bool profilerStep(std::string_view name, uint64_t& step) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix || name.size() == kPrefix.size()) return false;
  int64_t value = 0;
  if (!parseInt(name.substr(kPrefix.size()), value) || value < 0) return false;
  step = static_cast<uint64_t>(value);
  return true;
}

std::string errorText(simdjson::error_code e) { return simdjson::error_message(e); }

// --- the parse -----------------------------------------------------------------------------------

enum class Category { kSkip, kKernel, kMemcpy, kMemset, kSync, kRuntime, kDriver, kUserAnnotation, kCpuOp };

Category categoryOf(std::string_view cat) {
  if (cat == "kernel") return Category::kKernel;
  if (cat == "gpu_memcpy") return Category::kMemcpy;
  if (cat == "gpu_memset") return Category::kMemset;
  if (cat == "cuda_sync") return Category::kSync;
  if (cat == "cuda_runtime") return Category::kRuntime;
  if (cat == "cuda_driver") return Category::kDriver;
  if (cat == "user_annotation") return Category::kUserAnnotation;
  if (cat == "cpu_op") return Category::kCpuOp;
  return Category::kSkip;
}

// A number as found: its raw text, checked only when the event is one the import uses (the
// design skips unused events without looking at their fields).
struct RawNumber {
  bool present = false;
  bool is_number = false;
  std::string_view text;
};

// The fields of one traceEvents element that the import uses, as found.
struct RawEvent {
  std::string_view ph, cat, name;
  std::string name_text;  // a copy of name
  RawNumber ts, dur, correlation, stream, bytes, cbid, device;
  bool has_pid = false, has_tid = false;
  int64_t pid = 0, tid = 0;
  std::string tid_text;  // a tid given as a string
  bool tid_is_text = false;
  std::string sync_kind;
  std::string arg_name;  // M events: args.name
  KinetoCommsArgs comms;  // record_param_comms' args (kineto_host_events.h)
};

// One event kept for the feed, in a tagged form so that all can be sorted together.
struct HeldEvent {
  uint64_t time_ns = 0;
  uint8_t type = 0;  // 0 marker, 1 api call, 2 activity, 3 NCCL call (the order used on ties)
  uint32_t index = 0;
};

class TraceParser {
 public:
  std::optional<std::string> parse(const simdjson::padded_string& json);

  // What was found.
  std::vector<ApiCallEvent> calls;
  std::vector<DeviceActivityEvent> activities;
  std::vector<MarkerEvent> markers;
  std::vector<NcclCallEvent> nccl_calls;
  std::vector<StringDefinition> strings;
  KinetoHostEvents host_events;
  uint32_t schema_version = 0;
  std::string trace_name;
  std::optional<int32_t> rank, world_size;
  uint64_t base_time_ns = 0;
  bool has_base_time = false;
  uint32_t cpu_pid = 0;
  bool has_cpu_pid = false;
  KinetoCounts counts;

 private:
  std::optional<std::string> parseEvents(od::array events);
  std::optional<std::string> parseEvent(od::object event, uint64_t index, RawEvent& raw);
  std::optional<std::string> parseArgs(od::object args, RawEvent& raw, const std::string& where);
  std::optional<std::string> keep(RawEvent& raw, uint64_t index);
  std::optional<std::string> parseDistributedInfo(od::value value);
  uint32_t threadId(const RawEvent& raw);
  uint32_t intern(v1::StringKind kind, std::unordered_map<std::string, uint32_t>& table, const std::string& text);

  std::unordered_map<int64_t, uint32_t> threads_;
  std::unordered_map<std::string, uint32_t> text_threads_;
  std::unordered_map<int64_t, std::string> thread_names_;  // tid -> M thread_name
  std::unordered_map<std::string, uint32_t> kernel_names_, api_names_, marker_names_;
  uint32_t next_thread_ = 1;
};

#define GW_TRY(expr)                                \
  do {                                              \
    if (auto gw_error_ = (expr)) return gw_error_;  \
  } while (false)

std::optional<std::string> TraceParser::parse(const simdjson::padded_string& json) {
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(json).get(doc)) return "malformed JSON (" + errorText(e) + ")";
  od::object top;
  if (auto e = doc.get_object().get(top)) {
    return e == simdjson::INCORRECT_TYPE ? std::string("the JSON is not an object")
                                         : "malformed JSON (" + errorText(e) + ")";
  }
  bool has_events = false;
  for (auto field_result : top) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return "malformed JSON at the top level (" + errorText(e) + ")";
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return "malformed JSON key at the top level (" + errorText(e) + ")";
    if (key == "traceEvents") {
      if (has_events) return "traceEvents appears twice";
      has_events = true;
      od::array events;
      if (auto e = field.value().get_array().get(events)) {
        return e == simdjson::INCORRECT_TYPE ? std::string("traceEvents is not an array")
                                             : "malformed traceEvents (" + errorText(e) + ")";
      }
      GW_TRY(parseEvents(events));
    } else if (key == "distributedInfo") {
      GW_TRY(parseDistributedInfo(field.value()));
    } else if (key == "baseTimeNanoseconds") {
      std::string_view raw;
      od::value v = field.value();
      od::json_type type;
      if (auto e = v.type().get(type)) return "malformed baseTimeNanoseconds (" + errorText(e) + ")";
      if (type != od::json_type::number) return "baseTimeNanoseconds is not a number";
      raw = v.raw_json_token();
      int64_t base = 0;
      if (!parseInt(raw, base) || base < 0) return "baseTimeNanoseconds is not a non-negative integer";
      base_time_ns = static_cast<uint64_t>(base);
      has_base_time = true;
    } else if (key == "schemaVersion" || key == "traceName") {
      // What the trace says it is, for Hello: a value of another type is left out rather than
      // refused, as it changes no number.
      od::value v = field.value();
      int64_t version = 0;
      std::string_view name;
      if (key == "schemaVersion" && v.get_int64().get(version) == simdjson::SUCCESS && version >= 0 && version <= UINT32_MAX) {
        schema_version = static_cast<uint32_t>(version);
      } else if (key == "traceName" && v.get_string().get(name) == simdjson::SUCCESS) {
        trace_name.assign(name);
      }
    }
    // Every other key (deviceProperties, ...) is skipped.
  }
  // Past the top-level object, a location still in bounds means more tokens follow.
  const char* after = nullptr;
  if (doc.current_location().get(after) == simdjson::SUCCESS) return "trailing data after the top-level JSON object";
  if (!has_events) return "no traceEvents";
  for (const auto& [tid, id] : threads_) {
    auto name = thread_names_.find(tid);
    strings.push_back({v1::STRING_KIND_THREAD_NAME, id,
                       name != thread_names_.end() ? name->second : "tid " + std::to_string(tid)});
  }
  for (const auto& [text, id] : text_threads_) strings.push_back({v1::STRING_KIND_THREAD_NAME, id, text});
  return std::nullopt;
}

std::optional<std::string> TraceParser::parseDistributedInfo(od::value value) {
  od::object info;
  if (auto e = value.get_object().get(info)) {
    return e == simdjson::INCORRECT_TYPE ? std::string("distributedInfo is not an object")
                                         : "malformed distributedInfo (" + errorText(e) + ")";
  }
  for (auto field_result : info) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return "malformed distributedInfo (" + errorText(e) + ")";
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return "malformed distributedInfo (" + errorText(e) + ")";
    if (key != "rank" && key != "world_size") continue;
    int64_t v = 0;
    if (field.value().get_int64().get(v) != simdjson::SUCCESS) return "distributedInfo." + std::string(key) + " is not an integer";
    if (v < 0 || v > INT32_MAX) return "distributedInfo." + std::string(key) + " is out of range";
    (key == "rank" ? rank : world_size) = static_cast<int32_t>(v);
  }
  return std::nullopt;
}

std::optional<std::string> TraceParser::parseEvents(od::array events) {
  uint64_t index = 0;
  RawEvent raw;
  for (auto element_result : events) {
    const std::string where = "traceEvents[" + std::to_string(index) + "]";
    od::value element;
    if (auto e = std::move(element_result).get(element)) return "malformed JSON in " + where + " (" + errorText(e) + ")";
    od::object event;
    if (auto e = element.get_object().get(event)) {
      return e == simdjson::INCORRECT_TYPE ? where + " is not an object" : "malformed JSON in " + where + " (" + errorText(e) + ")";
    }
    raw = RawEvent{};
    GW_TRY(parseEvent(event, index, raw));
    GW_TRY(keep(raw, index));
    ++index;
  }
  counts.trace_events = index;
  host_events.flushPolls(calls);
  nccl_calls = host_events.takeNcclCalls();
  counts.host = host_events.counts();
  return std::nullopt;
}

// Notes a value's raw text and whether it is a number (strings, objects, ... are not).
std::optional<std::string> rawNumber(od::value v, RawNumber& out, const std::string& what) {
  od::json_type type;
  if (auto e = v.type().get(type)) return "malformed " + what + " (" + errorText(e) + ")";
  out.present = true;
  out.is_number = type == od::json_type::number;
  if (out.is_number) out.text = trimRight(v.raw_json_token());
  return std::nullopt;
}

// A used event's integer field: absent is fine (nullopt, value untouched), anything but an integer
// is refused.
std::optional<std::string> intField(const RawNumber& n, int64_t& value, bool& has, const std::string& what) {
  has = false;
  if (!n.present) return std::nullopt;
  if (!n.is_number) return what + " is not a number";
  if (!parseInt(n.text, value)) return what + " is not an integer (" + std::string(n.text.substr(0, 32)) + ")";
  has = true;
  return std::nullopt;
}

std::optional<std::string> stringValue(od::value v, std::string_view& out, const std::string& what) {
  if (auto e = v.get_string().get(out)) {
    return e == simdjson::INCORRECT_TYPE ? what + " is not a string" : "malformed " + what + " (" + errorText(e) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> TraceParser::parseEvent(od::object event, uint64_t index, RawEvent& raw) {
  const std::string where = "traceEvents[" + std::to_string(index) + "]";
  for (auto field_result : event) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return "malformed JSON in " + where + " (" + errorText(e) + ")";
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return "malformed JSON key in " + where + " (" + errorText(e) + ")";
    od::value v = field.value();
    if (key == "ph") {
      GW_TRY(stringValue(v, raw.ph, where + ".ph"));
    } else if (key == "cat") {
      GW_TRY(stringValue(v, raw.cat, where + ".cat"));
    } else if (key == "name") {
      GW_TRY(stringValue(v, raw.name, where + ".name"));
      raw.name_text.assign(raw.name);
    } else if (key == "ts") {
      GW_TRY(rawNumber(v, raw.ts, where + ".ts"));
    } else if (key == "dur") {
      GW_TRY(rawNumber(v, raw.dur, where + ".dur"));
    } else if (key == "pid" || key == "tid") {
      od::json_type type;
      if (auto e = v.type().get(type)) return "malformed " + where + "." + std::string(key) + " (" + errorText(e) + ")";
      const bool is_pid = key == "pid";
      if (type == od::json_type::string) {
        std::string_view text;
        GW_TRY(stringValue(v, text, where + "." + std::string(key)));
        if (!is_pid) raw.tid_text.assign(text), raw.tid_is_text = true, raw.has_tid = true;
        // a pid given as text (some exporters write names): ignored
      } else if (type == od::json_type::number) {
        int64_t value = 0;
        if (parseInt(trimRight(v.raw_json_token()), value)) {
          (is_pid ? raw.pid : raw.tid) = value;
          (is_pid ? raw.has_pid : raw.has_tid) = true;
        }
      }
    } else if (key == "args") {
      od::object args;
      if (auto e = v.get_object().get(args)) {
        return e == simdjson::INCORRECT_TYPE ? where + ".args is not an object"
                                             : "malformed JSON in " + where + ".args (" + errorText(e) + ")";
      }
      GW_TRY(parseArgs(args, raw, where + ".args"));
    }
  }
  return std::nullopt;
}

std::optional<std::string> TraceParser::parseArgs(od::object args, RawEvent& raw, const std::string& where) {
  for (auto field_result : args) {
    od::field field;
    if (auto e = std::move(field_result).get(field)) return "malformed JSON in " + where + " (" + errorText(e) + ")";
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return "malformed JSON key in " + where + " (" + errorText(e) + ")";
    od::value v = field.value();
    const std::string what = where + "." + std::string(key);
    if (key == "correlation") {
      GW_TRY(rawNumber(v, raw.correlation, what));
    } else if (key == "stream") {
      GW_TRY(rawNumber(v, raw.stream, what));
    } else if (key == "bytes") {
      GW_TRY(rawNumber(v, raw.bytes, what));
    } else if (key == "cbid") {
      GW_TRY(rawNumber(v, raw.cbid, what));
    } else if (key == "device") {
      GW_TRY(rawNumber(v, raw.device, what));
    } else if (key == "cuda_sync_kind") {
      od::json_type type;
      if (auto e = v.type().get(type)) return "malformed " + what + " (" + errorText(e) + ")";
      if (type == od::json_type::string) {
        std::string_view text;
        GW_TRY(stringValue(v, text, what));
        raw.sync_kind.assign(text);
      }
    } else if (key == "name") {
      od::json_type type;
      if (auto e = v.type().get(type)) return "malformed " + what + " (" + errorText(e) + ")";
      if (type == od::json_type::string) {
        std::string_view text;
        GW_TRY(stringValue(v, text, what));
        raw.arg_name.assign(text);
      }
    } else if (isKinetoCommsArgKey(key)) {
      // record_param_comms' collective and sizes: kept as found, used only for that cpu_op.
      od::json_type type;
      if (auto e = v.type().get(type)) return "malformed " + what + " (" + errorText(e) + ")";
      int64_t number = 0;
      std::string_view text;
      if (type == od::json_type::string) {
        GW_TRY(stringValue(v, text, what));
        noteKinetoCommsArg(raw.comms, key, text);
      } else if (type == od::json_type::number && parseInt(trimRight(v.raw_json_token()), number)) {
        noteKinetoCommsArg(raw.comms, key, number);
      }
    }
  }
  return std::nullopt;
}

uint32_t TraceParser::threadId(const RawEvent& raw) {
  if (!raw.has_tid) return 0;
  if (raw.tid_is_text) {
    auto [it, added] = text_threads_.emplace(raw.tid_text, next_thread_);
    if (added) ++next_thread_;
    return it->second;
  }
  auto [it, added] = threads_.emplace(raw.tid, next_thread_);
  if (added) ++next_thread_;
  return it->second;
}

uint32_t TraceParser::intern(v1::StringKind kind, std::unordered_map<std::string, uint32_t>& table, const std::string& text) {
  auto [it, added] = table.emplace(text, static_cast<uint32_t>(table.size() + 1));
  if (added) strings.push_back({kind, it->second, text});
  return it->second;
}

std::optional<std::string> TraceParser::keep(RawEvent& raw, uint64_t index) {
  const std::string where = "traceEvents[" + std::to_string(index) + "]";
  if (raw.ph == "M") {
    if (raw.name == "thread_name" && raw.has_tid && !raw.tid_is_text && !raw.arg_name.empty()) {
      thread_names_[raw.tid] = raw.arg_name;
    }
    return std::nullopt;
  }
  if (raw.ph != "X") return std::nullopt;
  const Category category = categoryOf(raw.cat);
  if (category == Category::kSkip) return std::nullopt;
  uint64_t step = 0;
  const bool is_step = category == Category::kUserAnnotation && profilerStep(raw.name, step);
  if (category == Category::kUserAnnotation && !is_step && !ncclOpOfAnnotation(raw.name)) return std::nullopt;
  if (category == Category::kCpuOp && raw.name != "record_param_comms") return std::nullopt;

  if (!raw.ts.present) return where + " (" + std::string(raw.cat) + ") has no ts";
  if (!raw.ts.is_number) return where + ".ts is not a number";
  if (raw.dur.present && !raw.dur.is_number) return where + ".dur is not a number";
  uint64_t ts = 0, dur = 0;
  if (!microsToNs(raw.ts.text, ts)) {
    return where + ".ts is not a non-negative decimal number (" + std::string(raw.ts.text.substr(0, 32)) + ")";
  }
  if (raw.dur.present && !microsToNs(raw.dur.text, dur)) {
    return where + ".dur is not a non-negative decimal number (" + std::string(raw.dur.text.substr(0, 32)) + ")";
  }
  int64_t correlation = 0, stream = 0, bytes = 0, cbid = 0, device = 0;
  bool has_correlation = false, has_stream = false, has_bytes = false, has_cbid = false, has_device = false;
  if (auto e = intField(raw.correlation, correlation, has_correlation, where + ".args.correlation")) return e;
  if (auto e = intField(raw.stream, stream, has_stream, where + ".args.stream")) return e;
  if (auto e = intField(raw.bytes, bytes, has_bytes, where + ".args.bytes")) return e;
  if (auto e = intField(raw.cbid, cbid, has_cbid, where + ".args.cbid")) return e;
  if (auto e = intField(raw.device, device, has_device, where + ".args.device")) return e;
  const uint64_t end = eventEnd(ts, dur);
  if (raw.has_pid && raw.pid >= 0 && raw.pid <= UINT32_MAX && !has_cpu_pid &&
      (category == Category::kRuntime || category == Category::kDriver || category == Category::kUserAnnotation ||
       category == Category::kCpuOp)) {
    cpu_pid = static_cast<uint32_t>(raw.pid);
    has_cpu_pid = true;
  }

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
        a.name_id = intern(v1::STRING_KIND_KERNEL_NAME, kernel_names_, raw.name_text);
        ++counts.kernels;
      } else if (category == Category::kMemcpy) {
        a.kind = v1::ACTIVITY_KIND_MEMCPY;
        parseMemcpyName(raw.name, a);
        ++counts.memcpys;
      } else if (category == Category::kMemset) {
        a.kind = v1::ACTIVITY_KIND_MEMSET;
        parseMemsetName(raw.name, a);
        ++counts.memsets;
      } else {
        a.kind = v1::ACTIVITY_KIND_SYNC;
        a.sync_kind = syncKindFromName(raw.sync_kind.empty() ? raw.name : std::string_view(raw.sync_kind));
        ++counts.syncs;
      }
      activities.push_back(a);
      return std::nullopt;
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
      c.api_name_id = intern(v1::STRING_KIND_API_NAME, api_names_, raw.name_text);
      ++counts.api_calls;
      if (c.kind == v1::API_KIND_LAUNCH) ++counts.launches;
      host_events.onApiCall(c, calls);  // merges a thread's polls (kineto_host_events.h)
      return std::nullopt;
    }
    case Category::kCpuOp:
      host_events.onRecordParamComms(threadId(raw), ts, end, raw.comms);
      return std::nullopt;
    case Category::kUserAnnotation: {
      if (!is_step) {
        host_events.onUserAnnotation(threadId(raw), ts, end, raw.name);
        return std::nullopt;
      }
      MarkerEvent m;
      m.thread_id = threadId(raw);
      m.name_id = intern(v1::STRING_KIND_MARKER_NAME, marker_names_, raw.name_text);
      m.step = step;
      m.kind = v1::MARKER_KIND_STEP_BEGIN;
      m.time_ns = ts;
      markers.push_back(m);
      m.kind = v1::MARKER_KIND_STEP_END;
      m.time_ns = end;
      markers.push_back(m);
      ++counts.steps;
      return std::nullopt;
    }
    case Category::kSkip: break;
  }
  return std::nullopt;
}

#undef GW_TRY

KinetoReadResult refused(KinetoReadResult result, ReadErrorKind kind, std::string message) {
  result.read.error = ReadError{kind, "Kineto trace: " + std::move(message), 0};
  result.read.summary.frames = 0;
  result.counts = {};
  return result;
}

}  // namespace

bool looksLikeKinetoTrace(std::span<const uint8_t> first_bytes) {
  if (isGzip(first_bytes)) return true;
  for (uint8_t c : first_bytes) {
    if (isSpace(c)) continue;
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

KinetoReadResult readKinetoTrace(ByteSource& source, RecordingVisitor& visitor) {
  KinetoReadResult result;
  std::string bytes;
  if (auto error = readAll(source, bytes)) return refused(std::move(result), ReadErrorKind::kCannotRead, *error);
  result.read.summary.bytes_read = bytes.size();
  if (bytes.empty()) return refused(std::move(result), ReadErrorKind::kEmpty, "the file is empty");
  const auto head = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (!looksLikeKinetoTrace(head)) return refused(std::move(result), ReadErrorKind::kNotRecording, "not gzip or a JSON object");
  if (isGzip(head)) {
    std::string inflated;
    if (auto error = inflateGzip(bytes, inflated)) return refused(std::move(result), ReadErrorKind::kCorrupt, *error);
    bytes = std::move(inflated);
    const auto inner = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (!looksLikeKinetoTrace(inner) || isGzip(inner)) {
      return refused(std::move(result), ReadErrorKind::kNotRecording, "the gzip data is not a JSON object");
    }
  }

  TraceParser parser;
  {
    const simdjson::padded_string json(bytes);
    std::string().swap(bytes);
    if (auto error = parser.parse(json)) return refused(std::move(result), ReadErrorKind::kCorrupt, *error);
  }
  result.counts = parser.counts;

  // Everything held, sorted by time (ties: markers, calls, activities, as the reorder window does).
  std::vector<HeldEvent> order;
  order.reserve(parser.calls.size() + parser.activities.size() + parser.markers.size() + parser.nccl_calls.size());
  for (uint32_t i = 0; i < parser.markers.size(); ++i) order.push_back({parser.markers[i].time_ns, 0, i});
  for (uint32_t i = 0; i < parser.calls.size(); ++i) order.push_back({parser.calls[i].start_ns, 1, i});
  for (uint32_t i = 0; i < parser.activities.size(); ++i) order.push_back({parser.activities[i].start_ns, 2, i});
  for (uint32_t i = 0; i < parser.nccl_calls.size(); ++i) order.push_back({parser.nccl_calls[i].start_ns, 3, i});
  std::stable_sort(order.begin(), order.end(), [](const HeldEvent& a, const HeldEvent& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.type < b.type;
  });
  uint64_t first_ns = order.empty() ? 0 : order.front().time_ns;
  uint64_t last_ns = first_ns;
  for (const ApiCallEvent& c : parser.calls) last_ns = std::max(last_ns, c.end_ns);
  for (const DeviceActivityEvent& a : parser.activities) last_ns = std::max(last_ns, a.end_ns);
  for (const MarkerEvent& m : parser.markers) last_ns = std::max(last_ns, m.time_ns);
  for (const NcclCallEvent& c : parser.nccl_calls) last_ns = std::max(last_ns, c.end_ns);

  v1::Hello hello;
  hello.set_wire_version(1);
  hello.set_pid(parser.cpu_pid);
  hello.set_host("");
  if (parser.rank) hello.set_rank(*parser.rank);
  if (parser.world_size) hello.set_world_size(*parser.world_size);
  hello.add_probes(v1::PROBE_CUPTI_ACTIVITY);
  hello.set_clock(v1::CLOCK_DOMAIN_KINETO_US);
  hello.set_source(v1::STREAM_SOURCE_KINETO_TRACE);
  hello.set_trace_schema_version(parser.schema_version);
  hello.set_trace_name(parser.trace_name);
  hello.set_start_time_ns(first_ns);
  hello.set_start_unix_ns(parser.has_base_time ? parser.base_time_ns + first_ns : first_ns);
  visitor.onHello(hello, 0);
  result.read.summary.frames = 1;
  result.health.has_hello = true;

  StringTable& strings = *result.strings;
  DecodedBatch batch;
  batch.strings = std::move(parser.strings);
  uint64_t sequence = 0;
  auto flush = [&]() {
    batch.sequence = sequence++;
    for (const StringDefinition& s : batch.strings) strings.define(s.kind, s.id, s.text);
    visitor.onBatch(batch, strings);
    result.read.summary.frames += 1;
    result.health.batches += 1;
    batch.strings.clear();
    batch.api_calls.clear();
    batch.activities.clear();
    batch.markers.clear();
    batch.nccl_calls.clear();
  };
  std::size_t in_batch = 0;
  uint64_t batch_start = first_ns;
  for (const HeldEvent& e : order) {
    if (in_batch > 0 && (in_batch >= kBatchEvents || e.time_ns - batch_start > kBatchSpanNs)) {
      flush();
      in_batch = 0;
    }
    if (in_batch == 0) {
      batch_start = e.time_ns;
      batch.base_time_ns = e.time_ns;
    }
    switch (e.type) {
      case 0: batch.markers.push_back(parser.markers[e.index]); break;
      case 1: batch.api_calls.push_back(parser.calls[e.index]); break;
      case 3: batch.nccl_calls.push_back(parser.nccl_calls[e.index]); break;
      default: batch.activities.push_back(parser.activities[e.index]); break;
    }
    ++in_batch;
  }
  if (in_batch > 0 || !batch.strings.empty()) flush();

  v1::Goodbye goodbye;
  goodbye.set_end_time_ns(last_ns);
  // The trace ends with the profiler's window: how and when the process ended is not in it.
  goodbye.set_exit_reason(v1::EXIT_REASON_UNSPECIFIED);
  goodbye.set_batches(result.health.batches);
  goodbye.set_api_calls(parser.calls.size());
  goodbye.set_activities(parser.activities.size());
  goodbye.set_markers(parser.markers.size());
  goodbye.set_nccl_calls(parser.nccl_calls.size());
  visitor.onGoodbye(goodbye, 0);
  result.read.summary.frames += 1;
  result.health.has_goodbye = true;
  return result;
}

KinetoReadResult readKinetoTraceFile(const std::string& path, RecordingVisitor& visitor) {
  FileByteSource source(path);
  if (!source.isOpen()) {
    KinetoReadResult result;
    result.read.error = ReadError{ReadErrorKind::kCannotRead, source.failure(), 0};
    return result;
  }
  return readKinetoTrace(source, visitor);
}

}  // namespace gapwatch
