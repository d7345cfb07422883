#include "scenario.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "idle_cause.h"
#include "json_reader.h"

namespace gapwatch_sim {

namespace {

const std::vector<std::string> kTopKeys = {
    "format", "name", "description", "seed", "processes", "launch_threshold_us", "device", "kernels",
    "streams", "events", "rank_overrides", "warmup", "steps", "recompiles", "expect"};
const std::vector<std::string> kDeviceKeys = {
    "launch_api_ns", "launch_latency_ns", "copy_api_ns", "sync_api_ns", "alloc_api_ns", "h2d_gbps",
    "d2h_gbps", "d2d_gbps", "pageable_factor", "memset_gbps", "nccl_gbps", "nccl_latency_ns"};
const std::vector<std::string> kKernelKeys = {"duration_us", "jitter_us", "launch", "mangled"};
const std::vector<std::string> kStepsKeys = {"count", "ops", "threads"};
const std::vector<std::string> kThreadKeys = {"name", "ops"};
const std::vector<std::string> kPhaseKeys = {"load", "ops"};
const std::vector<std::string> kRecompileKeys = {"at_step", "load", "ops"};
const std::vector<std::string> kRankOverrideKeys = {"rank", "host_scale"};
const std::vector<std::string> kExpectKeys = {"dominant_cause",          "rank",
                                              "idle_fraction_min",       "idle_fraction_max",
                                              "after_sync_fraction_min", "dominant_host_label"};

const std::vector<std::string> kLaunchEntries = {"chevron", "launch_kernel", "launch_kernel_ex"};
const std::vector<std::string> kDirections = {"h2d", "d2h", "d2d"};
const std::vector<std::string> kMemories = {"pinned", "pageable"};
const std::vector<std::string> kSyncKinds = {"device", "stream", "event", "item"};
const std::vector<std::string> kNcclKinds = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter",
                                             "send_recv"};

// Each op is an object with exactly one of these keys; the rest of its keys depend on which.
struct OpShape {
  std::string verb;
  OpKind kind;
  std::vector<std::string> keys;  // verb included
};
const std::vector<OpShape> kOpShapes = {
    {"host", OpKind::Host, {"host", "duration_us", "jitter_us"}},
    {"kernel", OpKind::Kernel, {"kernel", "count", "stream", "launch"}},
    {"copy", OpKind::Copy, {"copy", "bytes", "memory", "async", "stream", "count"}},
    {"memset", OpKind::Memset, {"memset", "async", "stream", "count"}},
    {"sync", OpKind::Sync, {"sync", "stream", "event", "bytes"}},
    {"record_event", OpKind::Record, {"record_event", "stream"}},
    {"wait_event", OpKind::Wait, {"wait_event", "stream"}},
    {"malloc", OpKind::Malloc, {"malloc", "count"}},
    {"free", OpKind::Free, {"free"}},
    {"nccl", OpKind::Nccl, {"nccl", "bytes", "stream", "root", "count"}},
    {"fork_workers", OpKind::ForkWorkers, {"fork_workers", "duration_us", "wait"}},
    {"repeat", OpKind::Repeat, {"repeat", "ops"}},
};
// Only ops in a step's list run at some steps and not others.
const std::vector<std::string> kStepWindowKeys = {"from_step", "until_step", "every"};

constexpr double kMaxDurationUs = 3600.0 * 1e6;  // an hour: anything longer is a unit mistake
constexpr int64_t kMaxCount = 100000000;
constexpr uint64_t kMaxBytes = uint64_t(1) << 40;

std::vector<std::string> all_op_keys(bool in_steps) {
  std::set<std::string> keys;
  for (const auto& shape : kOpShapes) keys.insert(shape.keys.begin(), shape.keys.end());
  if (in_steps) keys.insert(kStepWindowKeys.begin(), kStepWindowKeys.end());
  return {keys.begin(), keys.end()};
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) out += (i ? ", " : "") + words[i];
  return out;
}

// Where an op list runs, which decides what it may do.
struct ListContext {
  bool main_thread = true;   // NCCL calls and fork are made by the main thread only
  bool in_steps = false;     // from_step / until_step allowed
  int phase = -1;            // -1: a step list; 0: warmup; k >= 1: recompiles[k - 1]
  int64_t from_step = 0;     // the steps at which this list may run (step lists), for kernel loads
};

class ScenarioParser {
 public:
  ScenarioParser(Scenario& s) : s_(s) {}

  void parse(const JsonNode& root) {
    JsonObject top(root, kTopKeys);
    JsonNode format = top.get("format");
    int64_t version = format.as_integer();
    if (version > kScenarioFormat)
      format.fail("version " + std::to_string(version) + " is newer than this gapwatch-sim reads (" +
                  std::to_string(kScenarioFormat) + ")");
    if (version != kScenarioFormat)
      format.fail("version " + std::to_string(version) + " does not exist (this gapwatch-sim reads " +
                  std::to_string(kScenarioFormat) + ")");
    s_.format = int(version);
    if (auto n = top.find("name")) s_.name = n->as_string();
    if (auto d = top.find("description")) s_.description = d->as_string();
    if (auto seed = top.find("seed")) s_.seed = uint64_t(seed->as_non_negative_integer());
    if (auto p = top.find("processes")) {
      int64_t n = p->as_positive_integer();
      if (n > kMaxProcesses) p->fail("at most " + std::to_string(kMaxProcesses) + " processes");
      s_.processes = int(n);
    }
    if (auto t = top.find("launch_threshold_us")) s_.launch_threshold_us = t->as_non_negative_number();
    if (auto d = top.find("device")) parse_device(*d);
    if (auto k = top.find("kernels")) parse_kernels(*k);
    if (auto st = top.find("streams")) s_.streams = parse_names(*st, "stream", {"default"});
    if (auto ev = top.find("events")) s_.events = parse_names(*ev, "event", {});
    if (auto r = top.find("rank_overrides")) parse_rank_overrides(*r);

    JsonNode steps = top.get("steps");
    JsonObject steps_obj(steps, kStepsKeys);
    s_.steps = steps_obj.get("count").as_non_negative_integer();
    if (s_.steps > kMaxCount) steps_obj.get("count").fail("too many steps");

    // Kernel loads first: every op list checks its kernels against them.
    std::optional<JsonObject> warmup_obj;
    if (auto w = top.find("warmup")) {
      warmup_obj.emplace(*w, kPhaseKeys);
      s_.warmup.emplace();
      if (auto load = warmup_obj->find("load")) s_.warmup->load = parse_load(*load, 0);
    }
    std::vector<JsonObject> recompile_objs;
    if (auto r = top.find("recompiles")) {
      for (const JsonNode& item : r->as_array()) {
        recompile_objs.emplace_back(item, kRecompileKeys);
        Phase phase;
        JsonNode at = recompile_objs.back().get("at_step");
        phase.at_step = at.as_non_negative_integer();
        if (phase.at_step >= s_.steps)
          at.fail("step " + std::to_string(phase.at_step) + " is past the last step (" +
                  std::to_string(s_.steps - 1) + ")");
        if (auto load = recompile_objs.back().find("load"))
          phase.load = parse_load(*load, int(s_.recompiles.size()) + 1);
        s_.recompiles.push_back(std::move(phase));
      }
    }

    if (warmup_obj) {
      if (auto ops = warmup_obj->find("ops")) s_.warmup->ops = parse_ops(*ops, ListContext{true, false, 0, 0});
    }
    for (size_t k = 0; k < recompile_objs.size(); ++k) {
      if (auto ops = recompile_objs[k].find("ops"))
        s_.recompiles[k].ops = parse_ops(*ops, ListContext{true, false, int(k) + 1, s_.recompiles[k].at_step});
    }

    bool has_ops = steps_obj.has("ops"), has_threads = steps_obj.has("threads");
    if (has_ops == has_threads) steps_obj.fail("needs exactly one of \"ops\" (one thread) and \"threads\"");
    if (has_ops) {
      s_.threads.push_back(ThreadPlan{"main", parse_ops(steps_obj.get("ops"), ListContext{true, true, -1, 0})});
    } else {
      std::vector<JsonNode> threads = steps_obj.get("threads").as_array();
      if (threads.empty()) steps_obj.get("threads").fail("needs at least one thread");
      if (threads.size() > 64) steps_obj.get("threads").fail("at most 64 threads");
      std::set<std::string> names;
      for (size_t i = 0; i < threads.size(); ++i) {
        JsonObject t(threads[i], kThreadKeys);
        ThreadPlan plan;
        plan.name = t.has("name") ? t.get("name").as_string() : (i == 0 ? "main" : "thread" + std::to_string(i));
        if (!names.insert(plan.name).second) t.get("name").fail("thread name \"" + plan.name + "\" is used twice");
        plan.ops = parse_ops(t.get("ops"), ListContext{i == 0, true, -1, 0});
        s_.threads.push_back(std::move(plan));
      }
    }
    if (auto e = top.find("expect")) parse_expect(*e);
  }

 private:
  void parse_device(const JsonNode& node) {
    JsonObject d(node, kDeviceKeys);
    auto ns = [&](const char* key, int64_t& field) {
      if (auto v = d.find(key)) field = v->as_positive_integer();
    };
    auto rate = [&](const char* key, double& field) {
      if (auto v = d.find(key)) {
        field = v->as_number();
        if (field <= 0) v->fail("must be > 0, got " + v->value().dump());
      }
    };
    ns("launch_api_ns", s_.device.launch_api_ns);
    ns("launch_latency_ns", s_.device.launch_latency_ns);
    ns("copy_api_ns", s_.device.copy_api_ns);
    ns("sync_api_ns", s_.device.sync_api_ns);
    ns("alloc_api_ns", s_.device.alloc_api_ns);
    rate("h2d_gbps", s_.device.h2d_gbps);
    rate("d2h_gbps", s_.device.d2h_gbps);
    rate("d2d_gbps", s_.device.d2d_gbps);
    rate("pageable_factor", s_.device.pageable_factor);
    rate("memset_gbps", s_.device.memset_gbps);
    rate("nccl_gbps", s_.device.nccl_gbps);
    ns("nccl_latency_ns", s_.device.nccl_latency_ns);
  }

  void parse_kernels(const JsonNode& node) {
    if (!node.is_object()) node.fail("expected an object of kernel name -> definition, got " + describe_value(node.value()));
    std::set<std::string> mangled_names;
    for (const auto& item : node.value().items()) {
      JsonNode def(item.value(), child_path(node.path(), item.key()));
      JsonObject k(def, kKernelKeys);
      KernelDef kernel;
      kernel.name = item.key();
      if (kernel.name.empty()) def.fail("a kernel name must not be empty");
      kernel.duration_us = duration(k.get("duration_us"));
      if (auto j = k.find("jitter_us")) kernel.jitter_us = duration(*j);
      if (auto l = k.find("launch")) kernel.launch = LaunchEntry(l->as_enum(kLaunchEntries));
      kernel.mangled = k.has("mangled") ? k.get("mangled").as_string() : mangle(kernel.name);
      if (!mangled_names.insert(kernel.mangled).second)
        def.fail("device name \"" + kernel.mangled + "\" is used by another kernel");
      s_.kernels.push_back(std::move(kernel));
    }
    if (s_.kernels.size() > kMaxKernels) node.fail("at most " + std::to_string(kMaxKernels) + " kernels");
  }

  // A made-up Itanium-style name, as nvcc would emit for `void NAME(const float*, const float*, float*)`.
  static std::string mangle(const std::string& name) {
    std::string clean;
    for (char c : name) clean += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    return "_Z" + std::to_string(clean.size()) + clean + "PKfS0_Pf";
  }

  std::vector<std::string> parse_names(const JsonNode& node, const std::string& what,
                                       const std::set<std::string>& reserved) {
    std::vector<std::string> names;
    for (const JsonNode& item : node.as_array()) {
      std::string name = item.as_string();
      if (reserved.count(name)) item.fail("\"" + name + "\" is reserved (the legacy default stream)");
      if (std::find(names.begin(), names.end(), name) != names.end())
        item.fail(what + " \"" + name + "\" is declared twice");
      names.push_back(name);
    }
    if (names.size() > 256) node.fail("at most 256 " + what + "s");
    return names;
  }

  void parse_rank_overrides(const JsonNode& node) {
    std::set<int> seen;
    for (const JsonNode& item : node.as_array()) {
      JsonObject r(item, kRankOverrideKeys);
      RankOverride o;
      JsonNode rank = r.get("rank");
      int64_t value = rank.as_non_negative_integer();
      if (value >= s_.processes)
        rank.fail("rank " + std::to_string(value) + " does not exist (processes: " + std::to_string(s_.processes) + ")");
      o.rank = int(value);
      if (!seen.insert(o.rank).second) rank.fail("rank " + std::to_string(value) + " is overridden twice");
      if (auto h = r.find("host_scale")) o.host_scale = h->as_non_negative_number();
      s_.rank_overrides.push_back(o);
    }
  }

  std::vector<int> parse_load(const JsonNode& node, int phase) {
    std::vector<int> load;
    for (const JsonNode& item : node.as_array()) {
      int k = kernel_ref(item);
      KernelDef& kernel = s_.kernels[size_t(k)];
      if (kernel.load_phase != -1) item.fail("kernel \"" + kernel.name + "\" is already loaded by " + phase_name(kernel.load_phase));
      kernel.load_phase = phase;
      load.push_back(k);
    }
    return load;
  }

  std::string phase_name(int phase) const {
    return phase == 0 ? std::string("warmup.load") : "recompiles[" + std::to_string(phase - 1) + "].load";
  }

  void parse_expect(const JsonNode& node) {
    JsonObject e(node, kExpectKeys);
    if (auto c = e.find("dominant_cause")) {
      std::vector<std::string> names(cause_names().begin(), cause_names().end());
      s_.expect.dominant_cause = names[c->as_enum(names)];
    }
    if (auto r = e.find("rank")) {
      int64_t rank = r->as_non_negative_integer();
      if (rank >= s_.processes) r->fail("rank " + std::to_string(rank) + " does not exist");
      s_.expect.rank = int(rank);
    }
    auto fraction = [&](const char* key, std::optional<double>& field) {
      if (auto f = e.find(key)) {
        double v = f->as_non_negative_number();
        if (v > 1) f->fail("a fraction must be <= 1, got " + f->value().dump());
        field = v;
      }
    };
    fraction("idle_fraction_min", s_.expect.idle_fraction_min);
    fraction("idle_fraction_max", s_.expect.idle_fraction_max);
    fraction("after_sync_fraction_min", s_.expect.after_sync_fraction_min);
    if (auto l = e.find("dominant_host_label")) s_.expect.dominant_host_label = l->as_string();
  }

  double duration(const JsonNode& node) {
    double v = node.as_non_negative_number();
    if (v > kMaxDurationUs) node.fail("duration " + node.value().dump() + " us is longer than an hour");
    return v;
  }

  int64_t count(const JsonNode& node) {
    int64_t v = node.as_non_negative_integer();
    if (v > kMaxCount) node.fail("count " + std::to_string(v) + " is too large");
    return v;
  }

  uint64_t bytes(const JsonNode& node, bool allow_zero = false) {
    int64_t v = allow_zero ? node.as_non_negative_integer() : node.as_positive_integer();
    if (uint64_t(v) > kMaxBytes) node.fail("more than 1 TiB");
    return uint64_t(v);
  }

  int kernel_ref(const JsonNode& node) {
    std::string name = node.as_string();
    std::vector<std::string> names;
    for (size_t i = 0; i < s_.kernels.size(); ++i) {
      if (s_.kernels[i].name == name) return int(i);
      names.push_back(s_.kernels[i].name);
    }
    std::string message = "unknown kernel \"" + name + "\"";
    if (std::string near = closest_match(name, names); !near.empty()) message += " (did you mean \"" + near + "\"?)";
    else if (names.empty()) message += " (the top-level \"kernels\" object declares none)";
    node.fail(message);
  }

  int stream_ref(const JsonObject& op) {
    auto node = op.find("stream");
    if (!node) return 0;
    std::string name = node->as_string();
    if (name == "default") return 0;
    for (size_t i = 0; i < s_.streams.size(); ++i)
      if (s_.streams[i] == name) return int(i) + 1;
    std::vector<std::string> names = s_.streams;
    names.push_back("default");
    std::string message = "unknown stream \"" + name + "\" (declare it in \"streams\"";
    if (std::string near = closest_match(name, names); !near.empty()) message += "; did you mean \"" + near + "\"?";
    node->fail(message + ")");
  }

  int event_ref(const JsonNode& node) {
    std::string name = node.as_string();
    for (size_t i = 0; i < s_.events.size(); ++i)
      if (s_.events[i] == name) return int(i);
    std::string message = "unknown event \"" + name + "\" (declare it in \"events\"";
    if (std::string near = closest_match(name, s_.events); !near.empty()) message += "; did you mean \"" + near + "\"?";
    node.fail(message + ")");
  }

  std::vector<Op> parse_ops(const JsonNode& node, const ListContext& ctx) {
    std::vector<Op> ops;
    int64_t live_buffers = 0;  // a free may only free what this list allocated before it
    for (const JsonNode& item : node.as_array()) {
      Op op = parse_op(item, ctx);
      if (op.kind == OpKind::Malloc) live_buffers += op.count;
      if (op.kind == OpKind::Free) {
        if (op.count > live_buffers)
          item.fail("frees " + std::to_string(op.count) + " buffer(s), but this list allocated only " +
                    std::to_string(live_buffers) + " before it");
        live_buffers -= op.count;
      }
      ops.push_back(std::move(op));
    }
    return ops;
  }

  Op parse_op(const JsonNode& node, ListContext ctx) {
    if (!node.is_object()) node.fail("expected an op object, got " + describe_value(node.value()));
    const OpShape* shape = nullptr;
    for (const auto& candidate : kOpShapes) {
      if (!node.value().contains(candidate.verb)) continue;
      if (shape) node.fail("an op has one kind, but this one has both \"" + shape->verb + "\" and \"" + candidate.verb + "\"");
      shape = &candidate;
    }
    if (!shape) {
      JsonObject::check_keys(node, all_op_keys(ctx.in_steps));
      std::vector<std::string> verbs;
      for (const auto& candidate : kOpShapes) verbs.push_back(candidate.verb);
      node.fail("an op needs one of the keys " + join(verbs));
    }
    std::vector<std::string> allowed = shape->keys;
    if (ctx.in_steps) allowed.insert(allowed.end(), kStepWindowKeys.begin(), kStepWindowKeys.end());
    // A key that belongs to another kind of op gets a clearer message than "unknown key".
    for (const auto& item : node.value().items()) {
      if (std::find(allowed.begin(), allowed.end(), item.key()) != allowed.end()) continue;
      std::vector<std::string> everything = all_op_keys(true);
      if (std::find(everything.begin(), everything.end(), item.key()) == everything.end()) break;
      if (!ctx.in_steps && std::find(kStepWindowKeys.begin(), kStepWindowKeys.end(), item.key()) != kStepWindowKeys.end())
        node.fail("key \"" + item.key() + "\" is only allowed in the ops of \"steps\"");
      node.fail("key \"" + item.key() + "\" does not apply to a \"" + shape->verb + "\" op");
    }
    JsonObject o(node, allowed);

    Op op;
    op.kind = shape->kind;
    op.path = node.path();
    if (ctx.in_steps) parse_step_window(o, op, ctx);
    JsonNode verb = o.get(shape->verb);
    switch (op.kind) {
      case OpKind::Host:
        op.label = verb.as_string();
        op.duration_us = duration(o.get("duration_us"));
        if (auto j = o.find("jitter_us")) op.jitter_us = duration(*j);
        break;
      case OpKind::Kernel: {
        op.kernel = kernel_ref(verb);
        check_kernel_loaded(verb, op.kernel, ctx);
        op.launch = s_.kernels[size_t(op.kernel)].launch;
        if (auto l = o.find("launch")) op.launch = LaunchEntry(l->as_enum(kLaunchEntries));
        if (auto c = o.find("count")) op.count = count(*c);
        op.stream = stream_ref(o);
        break;
      }
      case OpKind::Copy: {
        op.direction = CopyDirection(verb.as_enum(kDirections));
        op.bytes = bytes(o.get("bytes"));
        if (auto a = o.find("async")) op.async = a->as_bool();
        if (auto m = o.find("memory")) {
          if (op.direction == CopyDirection::D2D) m->fail("a d2d copy has no host memory");
          op.memory = HostMemory(m->as_enum(kMemories));
        }
        if (o.has("stream") && !op.async) o.get("stream").fail("only an async copy takes a stream (add \"async\": true)");
        op.stream = stream_ref(o);
        if (auto c = o.find("count")) op.count = count(*c);
        if (op.direction == CopyDirection::D2D) {
          s_.max_device_bytes = std::max(s_.max_device_bytes, 2 * op.bytes);
        } else {
          s_.max_device_bytes = std::max(s_.max_device_bytes, op.bytes);
          uint64_t& host = op.memory == HostMemory::Pinned ? s_.max_pinned_bytes : s_.max_pageable_bytes;
          host = std::max(host, op.bytes);
        }
        break;
      }
      case OpKind::Memset:
        op.bytes = bytes(verb);
        if (auto a = o.find("async")) op.async = a->as_bool();
        if (o.has("stream") && !op.async) o.get("stream").fail("only an async memset takes a stream (add \"async\": true)");
        op.stream = stream_ref(o);
        if (auto c = o.find("count")) op.count = count(*c);
        s_.max_device_bytes = std::max(s_.max_device_bytes, op.bytes);
        break;
      case OpKind::Sync:
        op.sync = SyncKind(verb.as_enum(kSyncKinds));
        if (o.has("event") != (op.sync == SyncKind::Event)) {
          if (op.sync == SyncKind::Event) o.fail("\"sync\": \"event\" needs an \"event\"");
          o.get("event").fail("only \"sync\": \"event\" takes an event");
        }
        if (o.has("stream") && op.sync != SyncKind::Stream && op.sync != SyncKind::Item)
          o.get("stream").fail("only \"sync\": \"stream\" and \"item\" take a stream");
        if (o.has("bytes") && op.sync != SyncKind::Item) o.get("bytes").fail("only \"sync\": \"item\" takes bytes");
        op.stream = stream_ref(o);
        if (op.sync == SyncKind::Event) op.event = event_ref(o.get("event"));
        if (op.sync == SyncKind::Item) {
          op.bytes = o.has("bytes") ? bytes(o.get("bytes")) : 4;
          s_.max_device_bytes = std::max(s_.max_device_bytes, op.bytes);
          s_.max_pageable_bytes = std::max(s_.max_pageable_bytes, op.bytes);
        }
        break;
      case OpKind::Record:
      case OpKind::Wait:
        op.event = event_ref(verb);
        op.stream = stream_ref(o);
        break;
      case OpKind::Malloc:
        op.bytes = bytes(verb);
        if (auto c = o.find("count")) op.count = count(*c);
        break;
      case OpKind::Free:
        op.count = verb.as_positive_integer();
        break;
      case OpKind::Nccl: {
        if (!ctx.main_thread) verb.fail("NCCL calls are made by the main thread (threads[0]) only");
        op.nccl = NcclKind(verb.as_enum(kNcclKinds));
        JsonNode b = o.get("bytes");
        op.bytes = bytes(b);
        uint64_t unit = 4;  // float32 elements
        if (op.nccl == NcclKind::AllGather || op.nccl == NcclKind::ReduceScatter) unit *= uint64_t(s_.processes);
        if (op.bytes % unit)
          b.fail("must be a multiple of " + std::to_string(unit) +
                 (unit > 4 ? " (4-byte elements, split over every rank)" : " (4-byte elements)"));
        if (auto r = o.find("root")) {
          if (op.nccl != NcclKind::Broadcast && op.nccl != NcclKind::Reduce)
            r->fail("only broadcast and reduce take a root");
          int64_t root = r->as_non_negative_integer();
          if (root >= s_.processes) r->fail("rank " + std::to_string(root) + " does not exist");
          op.root = int(root);
        }
        op.stream = stream_ref(o);
        if (auto c = o.find("count")) op.count = count(*c);
        s_.max_device_bytes = std::max(s_.max_device_bytes, op.bytes);
        s_.uses_nccl = true;
        break;
      }
      case OpKind::ForkWorkers:
        if (!ctx.main_thread) verb.fail("workers are forked by the main thread (threads[0]) only");
        op.workers = verb.as_positive_integer();
        if (op.workers > 64) verb.fail("at most 64 workers");
        op.duration_us = duration(o.get("duration_us"));
        if (auto w = o.find("wait")) op.wait = w->as_bool();
        break;
      case OpKind::Repeat:
        op.count = count(verb);
        op.body = parse_ops(o.get("ops"), ctx);
        break;
    }
    return op;
  }

  // from_step / until_step / every: this op (and what it contains) runs at steps
  // from, from + every, ... below until only.
  void parse_step_window(const JsonObject& o, Op& op, ListContext& ctx) {
    int64_t from = 0, until = s_.steps;
    if (auto f = o.find("from_step")) from = f->as_non_negative_integer();
    if (auto u = o.find("until_step")) until = u->as_non_negative_integer();
    if (from > until) o.fail("from_step " + std::to_string(from) + " is after until_step " + std::to_string(until));
    if (auto e = o.find("every")) op.every = e->as_positive_integer();
    op.from_step = from;
    op.until_step = until;
    ctx.from_step = std::max(ctx.from_step, from);
  }

  void check_kernel_loaded(const JsonNode& where, int kernel, const ListContext& ctx) {
    const KernelDef& k = s_.kernels[size_t(kernel)];
    if (k.load_phase <= 0) return;  // start-up and warm-up loads come before every other list
    int64_t load_step = s_.recompiles[size_t(k.load_phase - 1)].at_step;
    bool ok;
    if (ctx.phase == 0) {
      ok = false;
    } else if (ctx.phase == -1) {
      ok = ctx.from_step >= load_step;  // a step's recompiles run before its ops
    } else {
      int64_t here = s_.recompiles[size_t(ctx.phase - 1)].at_step;
      ok = here > load_step || (here == load_step && ctx.phase >= k.load_phase);
    }
    if (!ok)
      where.fail("kernel \"" + k.name + "\" is first loaded at step " + std::to_string(load_step) + " by " +
                 phase_name(k.load_phase) +
                 (ctx.phase == -1 ? " (add \"from_step\": " + std::to_string(load_step) + ")" : ""));
  }

  Scenario& s_;
};

}  // namespace

double Scenario::host_scale(int rank) const {
  for (const auto& o : rank_overrides)
    if (o.rank == rank) return o.host_scale;
  return 1.0;
}

Scenario parse_scenario(const std::string& text, const std::string& file) {
  bool blank = std::all_of(text.begin(), text.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  if (blank) throw InputError("file is empty");
  nlohmann::json root = parse_json_text(text);
  Scenario s;
  s.file = file;
  ScenarioParser(s).parse(JsonNode(root, ""));
  if (s.name.empty()) {
    std::string base = file.substr(file.find_last_of('/') + 1);
    s.name = base.substr(0, base.rfind(".json"));
  }
  return s;
}

Scenario load_scenario(const std::string& file) {
  struct stat info {};
  if (stat(file.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) throw InputError("is a directory, not a scenario file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(std::string("cannot read: ") + std::strerror(errno));
  return parse_scenario(text.str(), file);
}

}  // namespace gapwatch_sim
