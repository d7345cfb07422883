// reader/kineto_trace.cpp: see kineto_trace.h.
#include "reader/kineto_trace.h"

#include "reader/api_name.h"
#include "reader/gzip_source.h"
#include "reader/kineto_api_table.h"
#include "reader/kineto_call_sites.h"
#include "reader/kineto_event_fields.h"
#include "reader/kineto_event_filter.h"
#include "reader/kineto_event_sorter.h"
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
      : result_(result), options_(options), feed_(visitor, result, meta_) {}

  std::optional<std::string> read(ByteSource& text) {
    JsonSplitter splitter(text, JsonSplitter::Limits{});
    GW_TRY(walkTopLevel(splitter, metadata_parser_, meta_, &TraceReader::readEvents, this));
    result_.counts.max_buffered_bytes = std::max<uint64_t>(result_.counts.max_buffered_bytes, splitter.maxBuffered());
    // Every event was read and checked: the mapping sees them in time order.
    GW_TRY(sorter_.drain([this](const PendingEvent& e) { return applyEvent(e); }));
    result_.counts.sorted_events = sorter_.events();
    result_.counts.sort_runs_spilled = sorter_.runsSpilled();
    result_.counts.max_sort_held = sorter_.maxHeld();
    calls_out_.clear();
    host_events_.flushPolls(calls_out_);
    for (const ApiCallEvent& ready : calls_out_) GW_TRY(feed_.call(ready));
    holdNcclCalls();
    result_.counts.host = host_events_.counts();
    GW_TRY(feed_.finish());
    result_.counts.held_reordered += call_sites_.reordered();
    feed_.goodbye();
    return std::nullopt;
  }

 private:
  static std::optional<std::string> readEvents(void* self, JsonSplitter& s) { return static_cast<TraceReader*>(self)->events(s); }

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

  uint32_t intern(v1::StringKind kind, NameTable& table, std::string_view text) {
    auto it = table.find(text);
    if (it != table.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(table.size() + 1);
    table.emplace(std::string(text), id);
    feed_.define(kind, id, std::string(text));
    return id;
  }

  // The text of a used event's name, tid or sync kind, kept once for the sort (kineto_event_sorter.h).
  uint32_t text(std::string_view t) {
    auto it = text_ids_.find(t);
    if (it != text_ids_.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(texts_.size());
    texts_.emplace_back(t);
    text_ids_.emplace(std::string(t), id);
    return id;
  }
  std::string_view textOf(uint32_t id) const { return texts_[id]; }

  // One element, first pass: checked and read into a PendingEvent for the sort, or (metadata)
  // taken at once. Every refusal of a used event is made here, naming the element.
  std::optional<std::string> mapEvent(const TraceEventFields& raw, uint64_t index) {
    if (raw.ph == "M") {
      if (raw.name == "thread_name" && raw.has_tid && !raw.tid_is_text && !raw.arg_name.empty()) {
        thread_names_[raw.tid] = std::string(raw.arg_name);
      }
      return std::nullopt;
    }
    if (raw.ph != "X") return std::nullopt;
    const Category category = raw.category;
    if (category == Category::kSkip) return std::nullopt;
    const EventRole role = roleOf(category, raw.name);
    if (role.skip) return std::nullopt;
    // An op or annotation is evidence only: one whose times cannot be read is left out (counted),
    // not a reason to refuse the trace, as before gapwatch read them.
    if (role.evidence_only) {
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
    PendingEvent e;
    bool has = false;
    GW_TRY(intField(raw.correlation, e.correlation, has, index, "args.correlation"));
    if (has) e.flags |= PendingEvent::kHasCorrelation;
    has = false;
    GW_TRY(streamField(raw.stream, e.stream, has, index));
    if (has) e.flags |= PendingEvent::kHasStream;
    has = false;
    GW_TRY(intField(raw.bytes, e.bytes, has, index, "args.bytes"));
    if (has) e.flags |= PendingEvent::kHasBytes;
    has = false;
    GW_TRY(intField(raw.cbid, e.cbid, has, index, "args.cbid"));
    if (has) e.flags |= PendingEvent::kHasCbid;
    has = false;
    GW_TRY(intField(raw.device, e.device, has, index, "args.device"));
    if (has) e.flags |= PendingEvent::kHasDevice;
    if (category == Category::kSync) {
      // Kineto writes -1 for "not known"; a value that is not a number is refused like any field.
      GW_TRY(intField(raw.wait_on_correlation, e.wait_on_correlation, has, index, "args.wait_on_cuda_event_record_corr_id"));
      GW_TRY(intField(raw.wait_on_stream, e.wait_on_stream, has, index, "args.wait_on_stream"));
    }
    e.ts_ns = ts;
    e.end_ns = eventEnd(ts, dur);
    e.index = index;
    e.category = category;
    e.name = text(raw.name);
    if (raw.has_pid) {
      e.flags |= PendingEvent::kHasPid;
      e.pid = raw.pid;
    }
    if (raw.has_tid) {
      e.flags |= PendingEvent::kHasTid;
      if (raw.tid_is_text) {
        e.flags |= PendingEvent::kTidIsText;
        e.tid_text = text(raw.tid_text);
      } else {
        e.tid = raw.tid;
      }
    }
    if (!raw.sync_kind.empty()) e.sync_kind = text(raw.sync_kind);
    if (category == Category::kPythonFunction || category == Category::kCpuOp) {
      ++(category == Category::kPythonFunction ? meta_.python_events : meta_.cpu_ops);
      meta_.host_first_ns = std::min(meta_.host_first_ns, e.ts_ns);
      meta_.host_last_ns = std::max(meta_.host_last_ns, e.end_ns);
    }
    if (category == Category::kCpuOp && raw.name == "record_param_comms") {
      comms_args_.push_back(raw.comms);
      e.comms = static_cast<uint32_t>(comms_args_.size());
    }
    return sorter_.add(e);
  }

  // What an event is by its category and name: a step, an NCCL range, a host range of some kind.
  struct EventRole {
    bool skip = false, is_step = false, nccl_range = false, evidence_only = false;
    uint64_t step = 0;
    v1::HostRangeKind host_kind = v1::HOST_RANGE_KIND_UNSPECIFIED;
  };
  static EventRole roleOf(Category category, std::string_view name) {
    EventRole r;
    // ProfilerStep#N is a user_annotation since PyTorch 2.0, a cpu_op (Operator) before: either
    // way a step, never a host range (as an op it would hold all of the step's host time).
    r.is_step = (category == Category::kUserAnnotation || category == Category::kCpuOp) && profilerStep(name, r.step);
    // What the host was doing: every cpu_op, every other annotation, data-loading Python frames.
    r.nccl_range = category == Category::kUserAnnotation && !r.is_step && ncclOpOfAnnotation(name);
    if (category == Category::kCpuOp && !r.is_step) {
      r.host_kind = hostRangeKindOf(KinetoHostSource::kCpuOp, name);
    } else if (category == Category::kUserAnnotation && !r.is_step && !r.nccl_range) {
      r.host_kind = hostRangeKindOf(KinetoHostSource::kUserAnnotation, name);
      if (r.host_kind == v1::HOST_RANGE_KIND_UNSPECIFIED) r.skip = true;
    } else if (category == Category::kPythonFunction) {
      r.host_kind = hostRangeKindOf(KinetoHostSource::kPythonFunction, name);
    }
    r.evidence_only = (category == Category::kCpuOp && name != "record_param_comms" && !r.is_step) ||
                      (category == Category::kUserAnnotation && !r.is_step && !r.nccl_range);
    return r;
  }

  // The one total order of a trace's events (kineto_event_sorter.h): by start, the longer first
  // (a range before what it holds, an outer call before its inner one), then by what the event is
  // and its own fields, the text compared as text (ids follow the file's order); only events equal
  // in all of these keep the file's order (a strict total order: kineto_event_sorter.h sorts in place).
  bool before(const PendingEvent& a, const PendingEvent& b) const {
    if (a.ts_ns != b.ts_ns) return a.ts_ns < b.ts_ns;
    if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
    if (a.category != b.category) return a.category < b.category;
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.correlation != b.correlation) return a.correlation < b.correlation;
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.device != b.device) return a.device < b.device;
    if (a.bytes != b.bytes) return a.bytes < b.bytes;
    if (a.flags != b.flags) return a.flags < b.flags;
    if (a.tid_text != b.tid_text) return textOf(a.tid_text) < textOf(b.tid_text);
    if (a.name != b.name) return textOf(a.name) < textOf(b.name);
    return a.index < b.index;
  }

  uint32_t threadId(const PendingEvent& e) {
    if (!e.has(PendingEvent::kHasTid)) return 0;
    if (e.has(PendingEvent::kTidIsText)) {
      const std::string_view tid_text = textOf(e.tid_text);
      auto it = text_threads_.find(tid_text);
      if (it != text_threads_.end()) return it->second;
      const uint32_t id = next_thread_++;
      text_threads_.emplace(std::string(tid_text), id);
      feed_.define(v1::STRING_KIND_THREAD_NAME, id, std::string(tid_text));
      return id;
    }
    auto [it, added] = threads_.emplace(e.tid, next_thread_);
    if (added) {
      ++next_thread_;
      auto name = thread_names_.find(e.tid);
      feed_.define(v1::STRING_KIND_THREAD_NAME, it->second,
                   name != thread_names_.end() ? name->second : "tid " + std::to_string(e.tid));
    }
    return it->second;
  }

  // One event, second pass, in time order: the one place where a Kineto event becomes a
  // gapwatch one.
  std::optional<std::string> applyEvent(const PendingEvent& e) {
    const Category category = e.category;
    const std::string_view name = textOf(e.name);
    const EventRole role = roleOf(category, name);
    const uint64_t ts = e.ts_ns, end = e.end_ns;
    if (e.has(PendingEvent::kHasPid) && e.pid >= 0 && e.pid <= UINT32_MAX && !has_cpu_pid_ &&
        (category == Category::kRuntime || category == Category::kDriver || category == Category::kUserAnnotation ||
         category == Category::kCpuOp)) {
      feed_.setCpuPid(static_cast<uint32_t>(e.pid));
      has_cpu_pid_ = true;
    }
    if (role.is_step) {
      holdStep(e, name, role.step);
      return std::nullopt;
    }
    const bool has_tid_number = e.has(PendingEvent::kHasTid) && !e.has(PendingEvent::kTidIsText);

    switch (category) {
      case Category::kKernel:
      case Category::kMemcpy:
      case Category::kMemset:
      case Category::kSync: {
        DeviceActivityEvent a;
        a.device = e.has(PendingEvent::kHasDevice) && e.device >= 0 ? static_cast<uint32_t>(e.device)
                   : e.has(PendingEvent::kHasPid) && e.pid >= 0      ? static_cast<uint32_t>(e.pid)
                                                                    : 0;
        a.stream = e.has(PendingEvent::kHasStream) ? static_cast<uint64_t>(e.stream)
                   : has_tid_number                ? static_cast<uint64_t>(e.tid)
                                                   : 0;
        a.start_ns = ts;
        a.end_ns = end;
        a.correlation_id = e.has(PendingEvent::kHasCorrelation) && e.correlation > 0 ? static_cast<uint64_t>(e.correlation) : 0;
        a.bytes = e.has(PendingEvent::kHasBytes) && e.bytes > 0 ? static_cast<uint64_t>(e.bytes) : 0;
        if (category == Category::kKernel) {
          a.kind = v1::ACTIVITY_KIND_KERNEL;
          a.name_id = intern(v1::STRING_KIND_KERNEL_NAME, kernel_names_, name);
          ++result_.counts.kernels;
        } else if (category == Category::kMemcpy) {
          a.kind = v1::ACTIVITY_KIND_MEMCPY;
          parseMemcpyName(name, a);
          ++result_.counts.memcpys;
        } else if (category == Category::kMemset) {
          a.kind = v1::ACTIVITY_KIND_MEMSET;
          parseMemsetName(name, a);
          ++result_.counts.memsets;
        } else {
          a.kind = v1::ACTIVITY_KIND_SYNC;
          a.sync_kind = syncKindFromName(e.sync_kind == 0 ? name : textOf(e.sync_kind));
          // Kineto writes -1 where it does not know; CUPTI numbers streams from 1 on.
          if (e.wait_on_correlation > 0) {
            a.event_record_correlation_id = static_cast<uint64_t>(e.wait_on_correlation);
            a.event_record_stream = e.wait_on_stream > 0 ? static_cast<uint64_t>(e.wait_on_stream) : 0;
          }
          ++result_.counts.syncs;
        }
        return feed_.activity(a);
      }
      case Category::kRuntime:
      case Category::kDriver: {
        ApiCallEvent c;
        const ApiClass cls = classifyApi(name);
        c.kind = cls.kind;
        c.blocked = cls.blocked;
        c.thread_id = threadId(e);
        c.start_ns = ts;
        c.end_ns = end;
        c.correlation_id = e.has(PendingEvent::kHasCorrelation) && e.correlation > 0 ? static_cast<uint64_t>(e.correlation) : 0;
        c.domain = category == Category::kRuntime ? v1::API_DOMAIN_RUNTIME : v1::API_DOMAIN_DRIVER;
        c.cbid = e.has(PendingEvent::kHasCbid) && e.cbid >= 0 && e.cbid <= UINT32_MAX ? static_cast<uint32_t>(e.cbid) : 0;
        // A copy call's size where the writer put it on the call (ROCm); the analysis joins the
        // GPU record's otherwise (AnalysisPipeline::Fanout::onApiCall).
        if (e.has(PendingEvent::kHasBytes) && e.bytes > 0 &&
            (c.kind == v1::API_KIND_MEMCPY || c.kind == v1::API_KIND_MEMCPY_ASYNC)) {
          c.bytes = static_cast<uint64_t>(e.bytes);
        }
        c.api_name_id = intern(v1::STRING_KIND_API_NAME, api_names_, name);
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
          // c10d ranges came since the last call: they can be checked against each other (and
          // against every earlier one) and held for the feed, which hands them over by time.
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
        call_sites_.onPythonFunction(threadId(e), ts, end, name);
        holdHostRange(role.host_kind, e, name, ts, end);
        return std::nullopt;
      case Category::kCpuOp:
        if (e.comms != 0) {
          host_events_.onRecordParamComms(threadId(e), ts, end, comms_args_[e.comms - 1]);
          cpu_side_pending_ = true;
        }
        holdHostRange(role.host_kind, e, name, ts, end);
        return std::nullopt;
      case Category::kUserAnnotation: {
        if (role.nccl_range) {
          host_events_.onUserAnnotation(threadId(e), ts, end, name);
          cpu_side_pending_ = true;
          return std::nullopt;
        }
        holdHostRange(role.host_kind, e, name, ts, end);
        return std::nullopt;
      }
      case Category::kSkip: break;
    }
    return std::nullopt;
  }

  // A ProfilerStep#N range: a step's begin and end markers, CPU-side, held by the feed until the
  // device work of their time.
  void holdStep(const PendingEvent& e, std::string_view name, uint64_t step) {
    MarkerEvent m;
    m.thread_id = threadId(e);
    m.name_id = intern(v1::STRING_KIND_MARKER_NAME, marker_names_, name);
    m.step = step;
    m.kind = v1::MARKER_KIND_STEP_BEGIN;
    m.time_ns = e.ts_ns;
    feed_.hold(m);
    m.kind = v1::MARKER_KIND_STEP_END;
    m.time_ns = e.end_ns;
    feed_.hold(m);
    ++result_.counts.steps;
  }

  void holdHostRange(v1::HostRangeKind kind, const PendingEvent& e, std::string_view name, uint64_t start_ns,
                     uint64_t end_ns) {
    if (kind == v1::HOST_RANGE_KIND_UNSPECIFIED) return;
    ranges_out_.clear();
    const uint32_t thread = threadId(e);
    // The name is interned only for a range that is kept: most ops are nested in another.
    if (!host_ranges_.add(kind, thread, start_ns, end_ns, 0, ranges_out_)) {
      ++result_.counts.nested_ops;
      return;
    }
    for (HostRangeEvent& r : ranges_out_) {
      r.name_id = intern(v1::STRING_KIND_HOST_RANGE_NAME, host_range_names_, name);
      feed_.hold(r);
      ++result_.counts.host_ranges;
    }
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
  KinetoHostEvents host_events_;
  // The first pass's text (names, text tids, sync kinds), each once, and record_param_comms' args.
  std::vector<std::string> texts_{std::string()};
  NameTable text_ids_;
  std::vector<KinetoCommsArgs> comms_args_;
  KinetoEventSorter sorter_{[this](const PendingEvent& a, const PendingEvent& b) { return before(a, b); },
                            options_.sort_max_in_memory};
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
  return readKinetoTrace(source, visitor, options);
}

}  // namespace gapwatch
