#include "truth_summary.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace gapwatch_sim {

using json = nlohmann::ordered_json;

namespace {

std::string duration(uint64_t ns) {
  char buf[32];
  if (ns >= 1000000000ull) std::snprintf(buf, sizeof buf, "%.3f s", double(ns) / 1e9);
  else if (ns >= 1000000ull) std::snprintf(buf, sizeof buf, "%.2f ms", double(ns) / 1e6);
  else if (ns >= 1000ull) std::snprintf(buf, sizeof buf, "%.1f us", double(ns) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu ns", static_cast<unsigned long long>(ns));
  return buf;
}

std::string percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100.0);
  return buf;
}

// "name N, name N, ..." largest first.
std::string ranked_counts(const json& counts, size_t limit) {
  std::vector<std::pair<uint64_t, std::string>> items;
  for (auto it = counts.begin(); it != counts.end(); ++it)
    if (it.value().get<uint64_t>() > 0) items.emplace_back(it.value().get<uint64_t>(), it.key());
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out;
  for (size_t i = 0; i < items.size() && i < limit; ++i)
    out += (i ? ", " : "") + items[i].second + " " + std::to_string(items[i].first);
  if (items.size() > limit) out += ", ...";
  return out.empty() ? "none" : out;
}

}  // namespace

void print_summary(std::ostream& out, const json& truth, const std::string& expected_dominant) {
  const json& scenario = truth.at("scenario");
  out << "gapwatch-sim: " << scenario.at("name").get<std::string>() << ": " << truth.at("processes").size()
      << " process(es), " << scenario.at("steps").get<int64_t>() << " steps\n";
  for (const json& p : truth.at("processes")) {
    for (const json& d : p.at("devices")) {
      uint64_t window = d.at("window").at("ns").get<uint64_t>();
      out << "rank " << p.at("rank").get<int>() << " (pid " << p.at("pid").get<int>() << ") device "
          << d.at("device").get<int>() << ": window " << duration(window) << ", busy "
          << duration(d.at("busy_ns").get<uint64_t>()) << ", idle " << duration(d.at("idle_ns").get<uint64_t>())
          << " (" << percent(d.at("idle_fraction").get<double>()) << "), leading "
          << duration(uint64_t(std::max<int64_t>(0, d.at("leading_ns").get<int64_t>()))) << "\n";
      uint64_t idle = d.at("idle_ns").get<uint64_t>();
      std::vector<std::pair<uint64_t, std::string>> causes;
      for (auto it = d.at("idle_by_cause").begin(); it != d.at("idle_by_cause").end(); ++it)
        if (it.value().get<uint64_t>() > 0) causes.emplace_back(it.value().get<uint64_t>(), it.key());
      std::sort(causes.begin(), causes.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      out << "  idle by cause:";
      if (causes.empty()) out << " none";
      for (size_t i = 0; i < causes.size(); ++i)
        out << (i ? ", " : " ") << causes[i].second << " " << duration(causes[i].first) << " ("
            << percent(idle ? double(causes[i].first) / double(idle) : 0.0) << ")";
      out << "\n  gaps: " << d.at("gap_count").get<uint64_t>() << ", after a sync: "
          << d.at("after_sync").at("gaps").get<uint64_t>() << " (" << duration(d.at("after_sync").at("ns").get<uint64_t>())
          << ")\n";
      out << "  device ops: " << ranked_counts(d.at("op_counts"), 4) << "\n";
    }
    out << "  sync points:";
    bool any = false;
    for (auto it = p.at("sync_points").begin(); it != p.at("sync_points").end(); ++it) {
      const json& s = it.value();
      if (s.at("count").get<uint64_t>() == 0) continue;
      out << (any ? "; " : " ") << it.key() << " " << s.at("count").get<uint64_t>() << " (total "
          << duration(s.at("total_ns").get<uint64_t>()) << ", p50 " << duration(s.at("p50_ns").get<uint64_t>())
          << ", p99 " << duration(s.at("p99_ns").get<uint64_t>()) << ")";
      any = true;
    }
    if (!any) out << " none";
    uint64_t calls = 0;
    for (const json& n : p.at("api_call_counts")) calls += n.get<uint64_t>();
    out << "\n  api calls: " << calls << " (" << ranked_counts(p.at("api_call_counts"), 6) << ")\n";
  }
  const json& total = truth.at("total");
  out << "total: idle " << percent(total.at("idle_fraction").get<double>()) << " of "
      << duration(total.at("window_ns").get<uint64_t>()) << ", dominant cause "
      << total.at("dominant_cause").get<std::string>();
  if (!expected_dominant.empty()) out << " (scenario expects " << expected_dominant << ")";
  out << "\n";
}

}  // namespace gapwatch_sim
