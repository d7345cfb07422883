// tools/watch_status.cpp: see watch_status.h.
#include "tools/watch_status.h"

#include <nlohmann/json.hpp>

namespace gapwatch::cli {
namespace {

// Ordered: the causes keep the collector's order (it writes with ordered_json).
using json = nlohmann::ordered_json;

// What went wrong, as the phrase the user reads: "processes[1].idle_ns is not a whole number".
struct Bad {
  std::string what;
};

const json& member(const json& object, const std::string& where, const char* name) {
  const auto it = object.find(name);
  if (it == object.end()) throw Bad{where + name + " is missing"};
  return *it;
}

uint64_t unsignedField(const json& object, const std::string& where, const char* name) {
  const json& v = member(object, where, name);
  if (!v.is_number_unsigned()) throw Bad{where + name + " is not a whole number >= 0"};
  return v.get<uint64_t>();
}

int64_t integerField(const json& object, const std::string& where, const char* name) {
  const json& v = member(object, where, name);
  if (!v.is_number_integer()) throw Bad{where + name + " is not a whole number"};
  return v.get<int64_t>();
}

double numberField(const json& object, const std::string& where, const char* name) {
  const json& v = member(object, where, name);
  if (!v.is_number()) throw Bad{where + name + " is not a number"};
  return v.get<double>();
}

std::string stringField(const json& object, const std::string& where, const char* name) {
  const json& v = member(object, where, name);
  if (!v.is_string()) throw Bad{where + name + " is not a string"};
  return v.get<std::string>();
}

WatchProcess readProcess(const json& p, const std::string& where) {
  if (!p.is_object()) throw Bad{where.substr(0, where.size() - 1) + " is not an object"};
  WatchProcess out;
  out.connection = integerField(p, where, "connection");
  out.pid = unsignedField(p, where, "pid");
  out.host = stringField(p, where, "host");
  const json& rank = member(p, where, "rank");
  if (!rank.is_null()) out.rank = integerField(p, where, "rank");
  out.file = stringField(p, where, "file");
  const std::string state = stringField(p, where, "state");
  if (state != "running" && state != "ended") throw Bad{where + "state is neither \"running\" nor \"ended\""};
  out.running = state == "running";
  out.events = unsignedField(p, where, "events");
  out.drops = unsignedField(p, where, "drops");
  out.bytes = unsignedField(p, where, "bytes");
  out.window_ns = unsignedField(p, where, "window_ns");
  out.idle_ns = unsignedField(p, where, "idle_ns");
  out.idle_fraction = numberField(p, where, "idle_fraction");
  const json& causes = member(p, where, "idle_by_cause_ns");
  if (!causes.is_object()) throw Bad{where + "idle_by_cause_ns is not an object"};
  for (const auto& [name, ns] : causes.items()) {
    if (!ns.is_number_unsigned()) throw Bad{where + "idle_by_cause_ns." + name + " is not a whole number >= 0"};
    out.idle_by_cause_ns.emplace_back(name, ns.get<uint64_t>());
  }
  const json& top = member(p, where, "top_finding");
  if (!top.is_null()) {
    if (!top.is_object()) throw Bad{where + "top_finding is neither an object nor null"};
    out.top_finding = stringField(top, where + "top_finding.", "id");
    out.top_finding_title = stringField(top, where + "top_finding.", "title");
    // Optional: a collector older than Python stacks does not send it.
    if (top.contains("python_site") && !top["python_site"].is_null())
      out.top_finding_site = stringField(top, where + "top_finding.", "python_site");
  }
  out.steps = unsignedField(p, where, "steps");
  out.step_median_ns = unsignedField(p, where, "step_median_ns");
  out.sync_points = unsignedField(p, where, "sync_points");
  out.syncs_per_step = numberField(p, where, "syncs_per_step");
  out.launches = unsignedField(p, where, "launches");
  out.nccl_comm_ns = unsignedField(p, where, "nccl_comm_ns");
  return out;
}

}  // namespace

std::optional<WatchStatus> parseWatchStatus(std::string_view line, std::string* error) {
  const json doc = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    *error = "not JSON";
    return std::nullopt;
  }
  try {
    if (!doc.is_object()) throw Bad{"not a JSON object"};
    WatchStatus status;
    status.version = integerField(doc, "", "version");
    if (status.version < 1) throw Bad{"version " + std::to_string(status.version) + " is not a status version"};
    status.uptime_ns = unsignedField(doc, "", "uptime_ns");
    status.socket = stringField(doc, "", "socket");
    status.output_dir = stringField(doc, "", "output_dir");
    const json& processes = member(doc, "", "processes");
    if (!processes.is_array()) throw Bad{"processes is not an array"};
    for (std::size_t i = 0; i < processes.size(); ++i) {
      status.processes.push_back(readProcess(processes[i], "processes[" + std::to_string(i) + "]."));
    }
    return status;
  } catch (const Bad& bad) {
    *error = bad.what;
    return std::nullopt;
  }
}

}  // namespace gapwatch::cli
