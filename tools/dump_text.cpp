// tools/dump_text.cpp: see dump_text.h.
#include "tools/dump_text.h"

#include "reader/enum_labels.h"
#include "reader/python_stack_text.h"
#include "tools/text_format.h"

#include <iomanip>
#include <string>

namespace gapwatch::cli {
namespace {

// "+12.345678901" is 13 characters; one more keeps a space before the type.
constexpr int kTimeColumnWidth = 14;
constexpr int kTypeColumnWidth = 9;

std::string threadText(uint32_t thread_id, const StringTable& strings) {
  std::string text = std::to_string(thread_id);
  if (const std::string* name = strings.find(v1::STRING_KIND_THREAD_NAME, thread_id)) {
    text += "(" + printable(*name) + ")";
  }
  return text;
}

// " key=<id's text>" for a non-zero id, "" for none.
std::string nameField(const char* key, v1::StringKind kind, uint32_t id,
                      const StringTable& strings) {
  if (id == 0) return {};
  return std::string(" ") + key + "=" + quoteText(strings.display(kind, id));
}

// Whether NcclCall.peer means something for this operation (a root or a peer rank).
bool hasPeer(v1::NcclOp op) {
  return op == v1::NCCL_OP_BROADCAST || op == v1::NCCL_OP_REDUCE || op == v1::NCCL_OP_SEND ||
         op == v1::NCCL_OP_RECV;
}

template <typename Enum>
std::string enumField(const char* key, Enum value) {
  if (static_cast<int>(value) == 0) return {};
  return std::string(" ") + key + "=" + enumLabel(value);
}

template <typename Number>
std::string numberField(const char* key, Number value) {
  if (value == 0) return {};
  return std::string(" ") + key + "=" + std::to_string(value);
}

}  // namespace

std::ostream& TextDumpPrinter::startLine(const char* type) {
  return out_ << std::setw(kTimeColumnWidth) << "" << std::left << std::setw(kTypeColumnWidth)
              << type << std::right;
}

std::ostream& TextDumpPrinter::startLine(uint64_t time_ns, const char* type) {
  return out_ << std::setw(kTimeColumnWidth - 1) << formatRelativeSeconds(time_ns, reference_ns_)
              << ' ' << std::left << std::setw(kTypeColumnWidth) << type << std::right;
}

void TextDumpPrinter::onHello(const v1::Hello& hello, uint64_t offset) {
  std::ostream& out = startLine("hello");
  out << "pid=" << hello.pid() << " host=" << quoteText(hello.host());
  if (hello.has_rank()) out << " rank=" << hello.rank();
  if (hello.has_local_rank()) out << " local_rank=" << hello.local_rank();
  if (hello.has_world_size()) out << " world_size=" << hello.world_size();
  out << " clock=" << enumLabel(hello.clock()) << " wire=" << hello.wire_version();
  if (!hello.library_version().empty()) out << " gapwatch=" << quoteText(hello.library_version());
  out << numberField("cupti", hello.cupti_version())
      << numberField("driver", hello.cuda_driver_version());
  out << " probes=";
  for (int i = 0; i < hello.probes_size(); ++i) {
    out << (i > 0 ? "," : "") << enumLabel(hello.probes(i));
  }
  if (hello.probes_size() == 0) out << "none";
  if (!hello.cupti_unavailable().empty()) out << " cupti_unavailable=" << quoteText(hello.cupti_unavailable());
  if (hello.source() != v1::STREAM_SOURCE_UNSPECIFIED) out << " source=" << enumLabel(hello.source());
  if (hello.trace_schema_version() != 0) out << " trace_schema_version=" << hello.trace_schema_version();
  if (!hello.trace_name().empty()) out << " trace_name=" << quoteText(hello.trace_name());
  if (hello.start_time_ns() != 0) {
    out << " start=" << formatRelativeSeconds(hello.start_time_ns(), reference_ns_);
  }
  if (hello.process_start_ns() != 0) {
    out << " process_start=" << formatRelativeSeconds(hello.process_start_ns(), reference_ns_);
  }
  out << numberField("start_unix_ns", hello.start_unix_ns()) << " offset=" << offset;
  out << " cmd=";
  for (int i = 0; i < hello.command_line_size(); ++i) {
    out << (i > 0 ? " " : "") << quoteText(hello.command_line(i));
  }
  if (hello.command_line_size() == 0) out << "\"\"";
  out << '\n';
}

void TextDumpPrinter::onBatch(const DecodedBatch& batch, const StringTable& strings) {
  startLine("batch") << "seq=" << batch.sequence
                     << " base=" << formatRelativeSeconds(batch.base_time_ns, reference_ns_)
                     << " strings=" << batch.strings.size()
                     << " api_calls=" << batch.api_calls.size()
                     << " activities=" << batch.activities.size()
                     << " nccl_calls=" << batch.nccl_calls.size()
                     << " markers=" << batch.markers.size() << " drops=" << batch.drops.size()
                     << (batch.host_ranges.empty() ? std::string()
                                                   : " host_ranges=" + std::to_string(batch.host_ranges.size()))
                     << (batch.python_samples.empty()
                             ? std::string()
                             : " python_samples=" + std::to_string(batch.python_samples.size()))
                     << " offset=" << batch.frame_offset << '\n';

  for (const StringDefinition& s : batch.strings) {
    startLine("string") << enumLabel(s.kind) << " id=" << s.id << " text=" << quoteText(s.text)
                        << '\n';
  }

  for (const ApiCallEvent& e : batch.api_calls) {
    std::string name = strings.display(v1::STRING_KIND_API_NAME, e.api_name_id);
    startLine(e.start_ns, "api") << (name.empty() ? enumLabel(e.kind) : printable(name))
                                 << " kind=" << enumLabel(e.kind)
                                 << " tid=" << threadText(e.thread_id, strings)
                                 << " dur=" << formatExactMicros(e.end_ns - e.start_ns)
                                 << numberField("corr", e.correlation_id)
                                 << numberField("stream", e.stream) << " device=" << e.device
                                 << numberField("bytes", e.bytes)
                                 << enumField("copy", e.copy_kind)
                                 << enumField("src", e.src_memory)
                                 << enumField("dst", e.dst_memory)
                                 << (e.blocked ? " blocked" : "")
                                 << numberField("return", e.return_code)
                                 << nameField("site", v1::STRING_KIND_CALL_SITE, e.call_site_id,
                                              strings)
                                 << enumField("domain", e.domain) << numberField("cbid", e.cbid)
                                 << '\n';
  }

  for (const DeviceActivityEvent& e : batch.activities) {
    const std::string kind = enumLabel(e.kind);
    startLine(e.start_ns, kind.c_str())
        << "device=" << e.device << " stream=" << e.stream
        << " dur=" << formatExactMicros(e.end_ns - e.start_ns)
        << numberField("corr", e.correlation_id) << numberField("bytes", e.bytes)
        << enumField("copy", e.copy_kind) << enumField("src", e.src_memory)
        << enumField("dst", e.dst_memory) << numberField("graph", e.graph_id)
        << enumField("sync", e.sync_kind)
        << nameField("name", v1::STRING_KIND_KERNEL_NAME, e.name_id, strings) << '\n';
  }

  for (const NcclCallEvent& e : batch.nccl_calls) {
    startLine(e.start_ns, "nccl") << enumLabel(e.op) << " tid=" << threadText(e.thread_id, strings)
                                  << " dur=" << formatExactMicros(e.end_ns - e.start_ns)
                                  << nameField("comm", v1::STRING_KIND_COMM, e.comm_id, strings)
                                  << numberField("bytes", e.bytes) << numberField("count", e.count)
                                  << enumField("type", e.data_type)
                                  << (hasPeer(e.op) ? " peer=" + std::to_string(e.peer) : "")
                                  << " rank=" << e.rank << " nranks=" << e.nranks
                                  << numberField("stream", e.stream)
                                  << numberField("group_depth", e.group_depth)
                                  << numberField("return", e.return_code) << '\n';
  }

  for (const MarkerEvent& e : batch.markers) {
    startLine(e.time_ns, "marker") << enumLabel(e.kind)
                                   << " tid=" << threadText(e.thread_id, strings)
                                   << nameField("name", v1::STRING_KIND_MARKER_NAME, e.name_id,
                                                strings)
                                   << ((e.kind == v1::MARKER_KIND_STEP_BEGIN ||
                                        e.kind == v1::MARKER_KIND_STEP_END)
                                           ? " step=" + std::to_string(e.step)
                                           : std::string())
                                   << '\n';
  }

  for (const HostRangeEvent& e : batch.host_ranges) {
    startLine(e.start_ns, "host") << enumLabel(e.kind) << " tid=" << threadText(e.thread_id, strings)
                                  << " dur=" << formatExactMicros(e.end_ns - e.start_ns)
                                  << nameField("name", v1::STRING_KIND_HOST_RANGE_NAME, e.name_id, strings)
                                  << '\n';
  }

  for (const PythonSampleEvent& e : batch.python_samples) {
    // The stack is many lines: the site a report names stands for it (dump --json has every frame).
    std::string stack = " stack=unread";
    if (e.python_stack_id != 0) {
      const std::string* text = strings.find(v1::STRING_KIND_PYTHON_STACK, e.python_stack_id);
      stack = " stack_id=" + std::to_string(e.python_stack_id) +
              (text ? " site=" + quoteText(pythonSiteText(*text)) : " site=#" + std::to_string(e.python_stack_id));
    }
    startLine(e.time_ns, "sample") << "tid=" << threadText(e.thread_id, strings)
                                   << " period=" << formatExactMicros(e.period_ns) << stack << '\n';
  }

  for (const DropCount& d : batch.drops) {
    startLine("drop") << enumLabel(d.source) << " id=" << d.id << " dropped=" << d.dropped << '\n';
  }
}

void TextDumpPrinter::onHeartbeat(const v1::Heartbeat& h, uint64_t offset) {
  std::ostream& out = startLine(h.time_ns(), "heartbeat");
  out << "calls=" << h.calls_size() << " unfinished=" << h.unfinished_size() << " offset=" << offset << '\n';
  for (const v1::CallInProgress& c : h.calls())
    startLine(c.start_ns(), "  in_call") << printable(c.api_name()) << " thread=" << c.thread_id()
                                         << " correlation=" << c.correlation_id() << '\n';
  for (const v1::UnfinishedLaunch& u : h.unfinished())
    startLine(u.launch_ns(), "  unfinished") << printable(u.kernel_name()) << " thread=" << u.thread_id()
                                             << " correlation=" << u.correlation_id() << '\n';
}

void TextDumpPrinter::onGoodbye(const v1::Goodbye& g, uint64_t offset) {
  std::ostream& out = g.end_time_ns() != 0 ? startLine(g.end_time_ns(), "goodbye")
                                           : startLine("goodbye");
  out << "exit=" << enumLabel(g.exit_reason()) << (g.has_exit_status() ? " status=" + std::to_string(g.exit_status()) : std::string())
      << numberField("signal", g.signal()) << " batches=" << g.batches()
      << " api_calls=" << g.api_calls() << " activities=" << g.activities()
      << " nccl_calls=" << g.nccl_calls() << " markers=" << g.markers()
      << " events_dropped=" << g.events_dropped()
      << " cupti_records_dropped=" << g.cupti_records_dropped() << " offset=" << offset << '\n';
  for (const v1::DropCounter& d : g.drops()) {
    startLine("drop") << enumLabel(d.source()) << " id=" << d.id() << " dropped=" << d.dropped()
                      << " final\n";
  }
}

}  // namespace gapwatch::cli
