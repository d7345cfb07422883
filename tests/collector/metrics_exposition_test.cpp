// tests/collector/metrics_exposition_test.cpp: the collector's Prometheus text (metrics_exposition.h)
// from a status built by hand, and the --metrics address rules (metrics_server.h).

#include <catch2/catch.hpp>

#include "collector/metrics_exposition.h"
#include "collector/metrics_server.h"
#include "analysis/process_summary.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace gapwatch;
using namespace gapwatch::collector;

constexpr uint64_t kUs = 1'000;

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped
  std::string value;
};

// A small reader of the exposition format (what Prometheus's parser does, for the lines we write):
// families declared by HELP and TYPE, then samples name{k="v",...} value.
struct Exposition {
  std::map<std::string, std::string> types;
  std::vector<std::string> help_order;
  std::vector<Sample> samples;

  explicit Exposition(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      REQUIRE(!line.empty());
      if (line.rfind("# HELP ", 0) == 0) {
        help_order.push_back(line.substr(7, line.find(' ', 7) - 7));
        continue;
      }
      if (line.rfind("# TYPE ", 0) == 0) {
        const std::size_t space = line.find(' ', 7);
        const std::string name = line.substr(7, space - 7);
        REQUIRE(types.count(name) == 0);  // one TYPE per family
        REQUIRE(help_order.back() == name);
        types[name] = line.substr(space + 1);
        continue;
      }
      samples.push_back(parseSample(line));
    }
  }

  static Sample parseSample(const std::string& line) {
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    REQUIRE(i != std::string::npos);
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        REQUIRE(line[eq + 1] == '"');
        std::string value;
        std::size_t k = eq + 2;
        for (; line[k] != '"'; ++k) {
          if (line[k] == '\\') {
            ++k;
            value += line[k] == 'n' ? '\n' : line[k];
          } else {
            value += line[k];
          }
        }
        REQUIRE(s.labels.count(key) == 0);
        s.labels[key] = value;
        i = k + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    REQUIRE(line[i] == ' ');
    s.value = line.substr(i + 1);
    REQUIRE(!s.value.empty());
    return s;
  }

  // The family a sample belongs to: its name, or a histogram's name without _bucket, _sum, _count.
  std::string familyOf(const std::string& name) const {
    if (types.count(name)) return name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s(suffix);
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
        const std::string base = name.substr(0, name.size() - s.size());
        if (types.count(base) && types.at(base) == "histogram") return base;
      }
    }
    return "";
  }

  std::vector<Sample> find(const std::string& name, const std::map<std::string, std::string>& with = {}) const {
    std::vector<Sample> out;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : with) match = match && s.labels.count(k) && s.labels.at(k) == v;
      if (match) out.push_back(s);
    }
    return out;
  }

  std::string value(const std::string& name, const std::map<std::string, std::string>& with) const {
    const auto found = find(name, with);
    REQUIRE(found.size() == 1);
    return found.front().value;
  }
};

CollectorStatus twoProcesses() {
  CollectorStatus status;
  ProcessStatus running;
  running.connection = 1;
  running.pid = 4242;
  running.host = "node\"7\\a\nb";  // hostile: quote, backslash, newline
  running.rank = 1;
  running.file = "gapwatch-node-4242.gwt";
  running.running = true;
  running.events = 12345;
  running.drops = 3;
  analysis::DeviceAnalysis device;
  device.device = 2;
  device.window_start_ns = 1'000;
  device.window_end_ns = 5'000'001'000;  // 5 s
  device.busy_ns = 4'000'000'000;
  device.idle_ns = 1'000'000'000;
  device.idle_by_cause_ns = {600'000'000, 1, 0, 0, 399'999'999, 0};
  device.gaps.add(500);             // [0, 1 us)
  device.gaps.add(1 * kUs);         // [1, 2) us
  device.gaps.add(2 * kUs - 1);     // [1, 2) us
  device.gaps.add(2 * kUs);         // [2, 4) us: exactly on a bound
  device.gaps.add(1'500'000'000);   // [1 s, infinity)
  running.analysis.devices.push_back(device);
  analysis::SyncTypeStats stream_sync;
  stream_sync.kind = SyncPointKind::kStreamSync;
  stream_sync.count = 30;
  stream_sync.total_ns = 123'456'789;
  running.analysis.sync_points.push_back(stream_sync);
  running.analysis.launches.launches = 999;
  running.analysis.nccl.comm_ns = 77;
  analysis::NcclTypeStats all_reduce;
  all_reduce.op = "all_reduce";
  all_reduce.host_ns = 2'000'000'001;
  running.analysis.nccl.by_type.push_back(all_reduce);
  running.analysis.steps.steps = 30;
  running.analysis.steps.median_ns = 3'000'000;
  status.processes.push_back(running);

  ProcessStatus ended;  // no rank, no device timeline, no steps
  ended.connection = 2;
  ended.pid = 99;
  ended.host = "h\xff" "\xc3\xa9";  // one byte that is not UTF-8, then an e acute
  ended.file = "gapwatch-h-99.gwt";
  status.processes.push_back(ended);
  return status;
}

}  // namespace

TEST_CASE("seconds are the exact decimal of the nanoseconds, and survive Prometheus's double") {
  CHECK(secondsText(0) == "0");
  CHECK(secondsText(7) == "0.000000007");
  CHECK(secondsText(1'500'000'000) == "1.5");
  CHECK(secondsText(12'000'345'678) == "12.000345678");
  CHECK(secondsText(3'000'000'000) == "3");
  CHECK(secondsText(UINT64_MAX) == "18446744073.709551615");
  std::mt19937_64 random(10);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t ns = random() >> (13 + i % 40);  // < 2^51, every magnitude
    const double seconds = std::strtod(secondsText(ns).c_str(), nullptr);
    CAPTURE(ns);
    REQUIRE(uint64_t(std::llround(seconds * 1e9)) == ns);
  }
}

TEST_CASE("label values are escaped and made UTF-8") {
  CHECK(labelValue("plain-host_1") == "plain-host_1");
  CHECK(labelValue("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(labelValue("\xc3\xa9t\xc3\xa9") == "\xc3\xa9t\xc3\xa9");  // kept
  CHECK(labelValue("x\xffy") == "x\xEF\xBF\xBDy");
  CHECK(labelValue("\xc3") == "\xEF\xBF\xBD");                        // cut short
  CHECK(labelValue("\xed\xa0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  CHECK(labelValue("\xc0\xaf") == "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong
}

TEST_CASE("the exposition has every family once, typed, and every sample belongs to one") {
  const std::string text = metricsExposition(twoProcesses());
  const Exposition e(text);
  const std::map<std::string, std::string> expected = {
      {"gapwatch_idle_seconds_total", "counter"},   {"gapwatch_busy_seconds_total", "counter"},
      {"gapwatch_window_seconds_total", "counter"}, {"gapwatch_gap_seconds", "histogram"},
      {"gapwatch_sync_points_total", "counter"},    {"gapwatch_sync_blocked_seconds_total", "counter"},
      {"gapwatch_launches_total", "counter"},       {"gapwatch_nccl_comm_seconds_total", "counter"},
      {"gapwatch_nccl_host_seconds_total", "counter"}, {"gapwatch_events_total", "counter"},
      {"gapwatch_drops_total", "counter"},          {"gapwatch_steps_total", "counter"},
      {"gapwatch_step_seconds", "gauge"},           {"gapwatch_top_finding_idle_fraction", "gauge"},
      {"gapwatch_process_running", "gauge"},
      {"gapwatch_processes", "gauge"},
  };
  CHECK(e.types == expected);
  CHECK(e.help_order.size() == expected.size());
  std::set<std::string> seen;
  std::string current;
  for (const Sample& s : e.samples) {
    const std::string family = e.familyOf(s.name);
    CAPTURE(s.name);
    REQUIRE(!family.empty());
    // A family's samples are together (Prometheus rejects a family that comes back).
    if (family != current) {
      REQUIRE(seen.insert(family).second);
      current = family;
    }
    if (s.name != "gapwatch_processes") {
      CHECK(s.labels.count("rank"));
      CHECK(s.labels.count("pid"));
      CHECK(s.labels.count("host"));
      CHECK(s.labels.count("file"));
    }
  }
}

TEST_CASE("the exposition's numbers are the status's") {
  const Exposition e(metricsExposition(twoProcesses()));
  const std::map<std::string, std::string> dev = {{"rank", "1"}, {"pid", "4242"}, {"device", "2"}};
  CHECK(e.find("gapwatch_idle_seconds_total", dev).size() == 6);
  CHECK(e.value("gapwatch_idle_seconds_total", {{"pid", "4242"}, {"cause", "host_cpu"}}) == "0.6");
  CHECK(e.value("gapwatch_idle_seconds_total", {{"pid", "4242"}, {"cause", "launch_overhead"}}) == "0.000000001");
  CHECK(e.value("gapwatch_idle_seconds_total", {{"pid", "4242"}, {"cause", "nccl_host"}}) == "0.399999999");
  CHECK(e.value("gapwatch_idle_seconds_total", {{"pid", "4242"}, {"cause", "dependency"}}) == "0");
  CHECK(e.value("gapwatch_busy_seconds_total", dev) == "4");
  CHECK(e.value("gapwatch_window_seconds_total", dev) == "5");
  CHECK(e.value("gapwatch_sync_points_total", {{"pid", "4242"}, {"type", "stream_sync"}}) == "30");
  CHECK(e.value("gapwatch_sync_blocked_seconds_total", {{"pid", "4242"}, {"type", "stream_sync"}}) == "0.123456789");
  CHECK(e.value("gapwatch_launches_total", {{"pid", "4242"}}) == "999");
  CHECK(e.value("gapwatch_nccl_comm_seconds_total", {{"pid", "4242"}}) == "0.000000077");
  CHECK(e.value("gapwatch_nccl_host_seconds_total", {{"pid", "4242"}, {"op", "all_reduce"}}) == "2.000000001");
  CHECK(e.value("gapwatch_events_total", {{"pid", "4242"}}) == "12345");
  CHECK(e.value("gapwatch_drops_total", {{"pid", "4242"}}) == "3");
  CHECK(e.value("gapwatch_steps_total", {{"pid", "4242"}}) == "30");
  CHECK(e.value("gapwatch_step_seconds", {{"pid", "4242"}}) == "0.003");
  // The top finding is the one the process's report would name: its diagnosis's first.
  const CollectorStatus status = twoProcesses();
  const auto top = analysis::topFinding(status.processes.front().analysis);
  REQUIRE(top);
  const auto tops = e.find("gapwatch_top_finding_idle_fraction", {{"pid", "4242"}});
  REQUIRE(tops.size() == 1);
  CHECK(tops.front().labels.at("finding") == top->id);
  CHECK(tops.front().labels.at("cause") == top->cause);
  CHECK(std::stod(tops.front().value) == Approx(top->idle_share).epsilon(1e-5));
  CHECK(e.find("gapwatch_top_finding_idle_fraction", {{"pid", "99"}}).empty());  // no device timeline
  CHECK(e.value("gapwatch_process_running", {{"pid", "4242"}}) == "1");
  CHECK(e.value("gapwatch_process_running", {{"pid", "99"}}) == "0");
  CHECK(e.value("gapwatch_processes", {{"state", "running"}}) == "1");
  CHECK(e.value("gapwatch_processes", {{"state", "ended"}}) == "1");
  // The process without a rank, a device timeline or steps: labelled rank="", no device series,
  // no step time.
  CHECK(e.value("gapwatch_events_total", {{"pid", "99"}, {"rank", ""}}) == "0");
  CHECK(e.find("gapwatch_idle_seconds_total", {{"pid", "99"}}).empty());
  CHECK(e.find("gapwatch_step_seconds", {{"pid", "99"}}).empty());
  // Host names as they came, once unescaped; bytes that are not UTF-8 replaced.
  CHECK(e.find("gapwatch_events_total", {{"host", "node\"7\\a\nb"}}).size() == 1);
  CHECK(e.find("gapwatch_events_total", {{"host", "h\xEF\xBF\xBD\xc3\xa9"}}).size() == 1);
}

TEST_CASE("the gap histogram is cumulative over the log2 buckets, le inclusive at bound - 1 ns") {
  const Exposition e(metricsExposition(twoProcesses()));
  const auto buckets = e.find("gapwatch_gap_seconds_bucket", {{"pid", "4242"}, {"device", "2"}});
  REQUIRE(buckets.size() == GapHistogram::kBucketCount);
  std::map<std::string, std::string> by_le;
  for (const Sample& s : buckets) by_le[s.labels.at("le")] = s.value;
  CHECK(by_le.at("0.000000999") == "1");   // [0, 1 us): 500 ns
  CHECK(by_le.at("0.000001999") == "3");   // + [1, 2) us: 1 us and 2 us - 1 ns
  CHECK(by_le.at("0.000003999") == "4");   // + [2, 4) us: exactly 2 us
  CHECK(by_le.at("0.524287999") == "4");
  CHECK(by_le.at("0.999999999") == "4");   // bucket 20 stops at 1 s
  CHECK(by_le.at("+Inf") == "5");          // [1 s, infinity)
  // Non-decreasing, in order of le.
  uint64_t previous = 0;
  for (std::size_t b = 0; b + 1 < GapHistogram::kBucketCount; ++b) {
    CAPTURE(b);
    CHECK(buckets[b].labels.at("le") == secondsText(GapHistogram::upperNs(b) - 1));
    const uint64_t n = std::stoull(buckets[b].value);
    CHECK(n >= previous);
    previous = n;
  }
  CHECK(buckets.back().labels.at("le") == "+Inf");
  CHECK(e.value("gapwatch_gap_seconds_count", {{"pid", "4242"}}) == "5");
  CHECK(e.value("gapwatch_gap_seconds_sum", {{"pid", "4242"}}) == secondsText(500 + 1000 + 1999 + 2000 + 1'500'000'000));
}

TEST_CASE("an empty collector serves the gauges only") {
  const Exposition e(metricsExposition(CollectorStatus{}));
  CHECK(e.samples.size() == 2);
  CHECK(e.value("gapwatch_processes", {{"state", "running"}}) == "0");
}

TEST_CASE("metrics addresses: loopback unless another is given") {
  MetricsAddress a;
  std::string error;
  REQUIRE(parseMetricsAddress("9464", &a, &error));
  CHECK((a.host == "127.0.0.1" && a.port == "9464"));
  REQUIRE(parseMetricsAddress(":9464", &a, &error));
  CHECK((a.host == "127.0.0.1" && a.port == "9464"));
  REQUIRE(parseMetricsAddress("0.0.0.0:0", &a, &error));
  CHECK((a.host == "0.0.0.0" && a.port == "0"));
  REQUIRE(parseMetricsAddress("[::1]:9464", &a, &error));
  CHECK((a.host == "::1" && a.port == "9464"));
  REQUIRE(parseMetricsAddress("localhost:65535", &a, &error));
  CHECK((a.host == "127.0.0.1" && a.port == "65535"));
  for (const char* bad : {"", "abc", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:http",
                          "::1:9464", "[::1]9464", "[::1]:", "[]:9464", "1:2:3", "127.0.0.1:0000099999"}) {
    CAPTURE(bad);
    error.clear();
    CHECK_FALSE(parseMetricsAddress(bad, &a, &error));
    CHECK(!error.empty());
    CHECK(error.find('\n') == std::string::npos);
  }
}

TEST_CASE("a metrics address that cannot be bound: one line, no server") {
  std::string error;
  CHECK(MetricsServer::bind("256.1.1.1:80", &error) == nullptr);
  CHECK(error.find("256.1.1.1") != std::string::npos);
  CHECK(MetricsServer::bind("example.com:80", &error) == nullptr);  // no name is looked up
  auto first = MetricsServer::bind("127.0.0.1:0", &error);
  REQUIRE(first);
  const std::string url = first->url();
  REQUIRE(url.rfind("http://127.0.0.1:", 0) == 0);
  const std::string port = url.substr(17, url.find('/', 17) - 17);
  CHECK(port != "0");
  error.clear();
  CHECK(MetricsServer::bind("127.0.0.1:" + port, &error) == nullptr);  // in use
  CHECK(error.find("cannot listen") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}
