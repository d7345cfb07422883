// reader/kineto_trace.cpp: see kineto_trace.h.
#include "reader/kineto_trace.h"

#include "reader/api_name.h"
#include "reader/gzip_source.h"
#include "reader/kineto_api_table.h"
#include "reader/kineto_call_sites.h"
#include "reader/kineto_event_fields.h"
#include "reader/kineto_event_filter.h"
#include "reader/kineto_feed.h"
#include "reader/kineto_host_ranges.h"
#include "reader/kineto_numbers.h"
#include "reader/kineto_record_names.h"
#include "reader/kineto_text.h"
#include "reader/kineto_top_level.h"
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
using namespace kineto;  // the reader's parts (kineto_event_fields.h, ...)

// traceEvents elements are parsed by simdjson this many bytes at a time.
constexpr std::size_t kParseBatchBytes = std::size_t{1} << 20;

bool isGzip(std::span<const uint8_t> b) { return b.size() >= 2 && b[0] == 0x1f && b[1] == 0x8b; }



// The pre-filter, the field walker, the top-level walker and the feed: kineto_event_filter.h,
// kineto_event_fields.h, kineto_top_level.h, kineto_feed.h.

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
