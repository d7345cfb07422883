#include "truth_json.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gapwatch_sim {

using json = nlohmann::ordered_json;

namespace {

json causes_to_json(const CauseNs& ns) {
  json out = json::object();
  for (int c = 0; c < kCauseCount; ++c) out[cause_names()[size_t(c)]] = ns[size_t(c)];
  return out;
}

// A table: column names once, then one array per row, so thousands of rows stay compact.
json table(std::vector<std::string> fields, json rows) {
  return json{{"fields", std::move(fields)}, {"rows", std::move(rows)}};
}

// What the host was doing in host work of this label, as gapwatch's host parts name it
// (docs/scenarios.md, "Ground truth"): `data` is the input pipeline, and so is a parent waiting on
// its forked workers (`fork_workers`, as a DataLoader starting them); `python` is the framework's
// work between launches; anything else (`compile`, a user's own label, `unlabeled` time outside
// every host op) is other host work.
const char* host_part_of_label(const std::string& label) {
  if (label == "data" || label == "fork_workers") return "input_pipeline";
  if (label == "python") return "framework";
  return "other";
}

json device_to_json(const DeviceTruth& d) {
  json histogram = json::array();
  for (const HistogramBucket& b : d.histogram)
    histogram.push_back({{"lo_ns", b.lo_ns}, {"hi_ns", b.hi_ns ? json(b.hi_ns) : json(nullptr)}, {"count", b.count},
                         {"total_ns", b.total_ns}});
  std::vector<std::string> gap_fields = {"start_ns", "end_ns", "next_op", "after_sync"};
  for (const auto& name : cause_names()) gap_fields.push_back(name);
  json gap_rows = json::array();
  for (const Gap& g : d.gaps) {
    json row = {g.start_ns, g.end_ns, g.next_op, g.after_sync ? 1 : 0};
    for (uint64_t ns : g.cause_ns) row.push_back(ns);
    gap_rows.push_back(std::move(row));
  }
  json idle_by_cause = causes_to_json(d.idle_by_cause);
  json labels = json::object();
  json parts = {{"input_pipeline", 0}, {"framework", 0}, {"other", 0}};
  for (const auto& [label, ns] : d.host_cpu_by_label) {
    labels[label] = ns;
    parts[host_part_of_label(label)] = parts[host_part_of_label(label)].get<uint64_t>() + ns;
  }
  return json{
      {"device", d.device},
      {"window", {{"start_ns", d.window_start_ns}, {"end_ns", d.window_end_ns},
                  {"ns", d.window_end_ns - d.window_start_ns}}},
      {"busy_ns", d.busy_ns},
      {"nccl_kernel_ns", d.nccl_kernel_ns},
      {"idle_ns", d.idle_ns},
      {"idle_fraction", d.idle_fraction},
      {"leading_ns", d.leading_ns},
      {"idle_by_cause", idle_by_cause},
      {"dominant_cause", dominant_cause(idle_by_cause)},
      {"host_cpu_by_label", labels},
      {"host_cpu_by_part", parts},
      {"after_sync", {{"ns", d.after_sync_ns}, {"gaps", d.after_sync_gaps}}},
      {"gap_count", d.gaps.size()},
      {"histogram", histogram},
      {"op_counts", d.op_counts},
      {"gaps", table(gap_fields, gap_rows)},
  };
}

json timeline_to_json(const Timeline& t) {
  json op_rows = json::array();
  for (const SimDeviceOp& o : t.ops)
    op_rows.push_back({o.index, op_kind_name(o.kind), o.device, o.stream, o.correlation_id, o.tid, o.queued_ns,
                       o.start_ns, o.end_ns, o.bytes, o.copy_kind, o.src_kind, o.dst_kind, o.is_async,
                       o.name ? o.name : ""});
  json call_rows = json::array();
  for (const SimApiCall& c : t.calls)
    call_rows.push_back({c.index, call_kind_name(c.kind), c.domain, c.cbid, c.tid, c.enter_ns, c.exit_ns,
                         c.correlation_id, c.stream, c.bytes, c.op_index, c.blocked, c.waited_until_ns,
                         c.name ? c.name : ""});
  return json{
      {"ops", table({"index", "kind", "device", "stream", "correlation_id", "tid", "queued_ns", "start_ns", "end_ns",
                     "bytes", "copy_kind", "src_kind", "dst_kind", "is_async", "name"},
                    op_rows)},
      {"api_calls", table({"index", "kind", "domain", "cbid", "tid", "enter_ns", "exit_ns", "correlation_id",
                           "stream", "bytes", "op_index", "blocked", "waited_until_ns", "name"},
                          call_rows)},
  };
}

bool is_scalar_array(const json& v) {
  return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_primitive(); });
}

void write_pretty(std::ostream& out, const json& v, int indent) {
  std::string pad(size_t(indent) * 2, ' ');
  std::string inner(size_t(indent + 1) * 2, ' ');
  if (v.is_object()) {
    if (v.empty()) {
      out << "{}";
      return;
    }
    out << "{\n";
    size_t i = 0;
    for (auto it = v.begin(); it != v.end(); ++it, ++i) {
      out << inner << json(it.key()).dump() << ": ";
      write_pretty(out, it.value(), indent + 1);
      out << (i + 1 < v.size() ? ",\n" : "\n");
    }
    out << pad << "}";
  } else if (v.is_array() && !v.empty() && !is_scalar_array(v)) {
    out << "[\n";
    for (size_t i = 0; i < v.size(); ++i) {
      out << inner;
      if (is_scalar_array(v[i]) || v[i].is_primitive()) out << v[i].dump();
      else write_pretty(out, v[i], indent + 1);
      out << (i + 1 < v.size() ? ",\n" : "\n");
    }
    out << pad << "]";
  } else {
    out << v.dump();
  }
}

}  // namespace

std::string dominant_cause(const json& idle_by_cause) {
  std::string best = "none";
  uint64_t best_ns = 0;
  for (const auto& name : cause_names()) {
    uint64_t ns = idle_by_cause.value(name, uint64_t(0));
    if (ns > best_ns) {
      best_ns = ns;
      best = name;
    }
  }
  return best;
}

json process_to_json(const ProcessIdentity& who, const ProcessTruth& truth, const Timeline& timeline,
                     const RunRecord& run) {
  json threads = json::array();
  for (const ThreadInfo& t : run.threads) threads.push_back({{"name", t.name}, {"tid", t.tid}});
  json sync_points = json::object();
  for (const auto& [type, s] : truth.sync_points)
    sync_points[type] = {{"count", s.count}, {"total_ns", s.total_ns}, {"p50_ns", s.p50_ns}, {"p99_ns", s.p99_ns}};
  json devices = json::array();
  for (const DeviceTruth& d : truth.devices) devices.push_back(device_to_json(d));
  json spans = json::array();
  for (const HostSpan& s : run.host_spans) spans.push_back({s.tid, s.label, s.start_ns, s.end_ns, s.requested_ns});
  return json{
      {"rank", who.rank.rank},
      {"local_rank", who.rank.local_rank},
      {"world_size", who.rank.world_size},
      {"pid", who.pid},
      {"host", who.host},
      {"main_start_ns", who.main_start_ns},
      {"sim_init_ns", who.sim_init_ns},
      {"threads", threads},
      {"workers_forked", run.workers_forked},
      {"step_starts_ns", run.step_starts_ns},
      {"api_call_counts", truth.api_call_counts},
      {"sync_points", sync_points},
      {"devices", devices},
      {"host_work", table({"tid", "label", "start_ns", "end_ns", "requested_ns"}, spans)},
      {"timeline", timeline_to_json(timeline)},
  };
}

json truth_document(const Scenario& s, std::vector<json> processes) {
  std::sort(processes.begin(), processes.end(),
            [](const json& a, const json& b) { return a.at("rank").get<int>() < b.at("rank").get<int>(); });
  uint64_t window = 0, busy = 0, idle = 0;
  CauseNs causes{};
  for (const json& p : processes) {
    for (const json& d : p.at("devices")) {
      window += d.at("window").at("ns").get<uint64_t>();
      busy += d.at("busy_ns").get<uint64_t>();
      idle += d.at("idle_ns").get<uint64_t>();
      for (int c = 0; c < kCauseCount; ++c)
        causes[size_t(c)] += d.at("idle_by_cause").at(cause_names()[size_t(c)]).get<uint64_t>();
    }
  }
  json idle_by_cause = causes_to_json(causes);
  std::vector<std::string> cause_list(cause_names().begin(), cause_names().end());
  return json{
      {"format", kTruthFormat},
      {"generator", "gapwatch-sim"},
      {"scenario", {{"file", s.file}, {"name", s.name}, {"description", s.description}, {"format", s.format},
                    {"processes", s.processes}, {"steps", s.steps}}},
      {"definitions", {{"launch_threshold_ns", uint64_t(std::llround(s.launch_threshold_us * 1000.0))},
                       {"causes", cause_list},
                       {"sync_point_types", sync_point_types()},
                       {"clock", "CLOCK_MONOTONIC"}}},
      {"processes", processes},
      {"total", {{"window_ns", window}, {"busy_ns", busy}, {"idle_ns", idle},
                 {"idle_fraction", window ? double(idle) / double(window) : 0.0},
                 {"idle_by_cause", idle_by_cause}, {"dominant_cause", dominant_cause(idle_by_cause)}}},
  };
}

void write_json_file(const std::string& path, const json& value) {
  std::ostringstream text;
  write_pretty(text, value, 0);
  text << "\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  out << text.str();
  out.flush();
  if (!out) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace gapwatch_sim
