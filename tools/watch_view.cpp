// tools/watch_view.cpp: see watch_view.h.
#include "tools/watch_view.h"

#include "tools/report_terminal.h"
#include "tools/text_format.h"

#include <algorithm>
#include <cstdio>

namespace gapwatch::cli {
namespace {

constexpr std::size_t kBarCells = 10;
// The node's line names this many causes, the largest; the rest are "others".
constexpr std::size_t kCausesNamed = 3;
// Lines of the terminal form besides the process rows: header, blank, column names, totals,
// and the blank line and key hint.
constexpr std::size_t kFixedLines = 6;

struct Totals {
  std::size_t running = 0, ended = 0;
  uint64_t window_ns = 0, idle_ns = 0, events = 0, drops = 0;
  std::vector<std::pair<std::string, uint64_t>> by_cause;  // in first-seen order
};

Totals totalsOf(const WatchStatus& status) {
  Totals t;
  for (const WatchProcess& p : status.processes) {
    ++(p.running ? t.running : t.ended);
    t.window_ns += p.window_ns;
    t.idle_ns += p.idle_ns;
    t.events += p.events;
    t.drops += p.drops;
    for (const auto& [name, ns] : p.idle_by_cause_ns) {
      auto it = std::find_if(t.by_cause.begin(), t.by_cause.end(), [&](const auto& c) { return c.first == name; });
      if (it == t.by_cause.end()) t.by_cause.emplace_back(name, ns);
      else it->second += ns;
    }
  }
  return t;
}

std::string idleText(uint64_t window_ns, double fraction) {
  return window_ns == 0 ? "-" : formatPercent(fraction);
}

std::string rankText(const WatchProcess& p) { return p.rank ? std::to_string(*p.rank) : "-"; }

std::string topFindingText(const WatchProcess& p) { return p.top_finding ? printable(*p.top_finding) : "-"; }
// The plain view's: the finding, and the Python line it points at when there is one.
std::string topFindingWithSite(const WatchProcess& p) {
  return topFindingText(p) + (p.top_finding_site ? " at " + printable(*p.top_finding_site) : "");
}

std::string stepText(const WatchProcess& p) { return p.step_median_ns ? formatDuration(p.step_median_ns) : "-"; }

std::string syncsPerStepText(const WatchProcess& p) {
  if (p.steps == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", p.syncs_per_step);
  return text;
}

// "nccl_host 80%, host_cpu 15%": the causes with idle time, the largest first; "-" without idle.
std::string causeSharesText(const Totals& t) {
  std::vector<std::pair<std::string, uint64_t>> causes;
  for (const auto& c : t.by_cause) {
    if (c.second > 0) causes.push_back(c);
  }
  if (causes.empty() || t.idle_ns == 0) return "-";
  std::stable_sort(causes.begin(), causes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  const auto share = [&](uint64_t ns) { return formatWholePercent(static_cast<double>(ns) / static_cast<double>(t.idle_ns)); };
  std::string text;
  uint64_t rest_ns = 0;
  for (std::size_t i = 0; i < causes.size(); ++i) {
    if (i >= kCausesNamed) {
      rest_ns += causes[i].second;
      continue;
    }
    if (!text.empty()) text += ", ";
    text += printable(causes[i].first) + " " + share(causes[i].second);
  }
  if (rest_ns > 0) text += ", others " + share(rest_ns);
  return text;
}

std::string processesText(const Totals& t) {
  const std::size_t n = t.running + t.ended;
  return formatCount(n) + (n == 1 ? " process" : " processes") + " (" + formatCount(t.running) + " running, " +
         formatCount(t.ended) + " ended)";
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text + ' ';
}

std::string padLeft(std::string text, std::size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text + ' ';
}

std::string trimmed(std::string text) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

// "[####      ]", the share of kBarCells cells, rounded.
std::string bar(uint64_t window_ns, double fraction) {
  const double clamped = std::clamp(fraction, 0.0, 1.0);
  const std::size_t filled = window_ns == 0 ? 0 : static_cast<std::size_t>(clamped * kBarCells + 0.5);
  return "[" + std::string(filled, '#') + std::string(kBarCells - filled, ' ') + "]";
}

// Cuts a line to `width` visible columns, escape sequences (colour) not counted; a cut line
// ends with a reset, so no colour runs on.
std::string cutToWidth(const std::string& line, std::size_t width, bool colour) {
  if (width == 0) return line;
  std::size_t visible = 0;
  for (std::size_t i = 0; i < line.size();) {
    if (line[i] == '\x1b') {
      const std::size_t end = line.find('m', i);
      i = end == std::string::npos ? line.size() : end + 1;
      continue;
    }
    if (visible == width) return line.substr(0, i) + (colour ? "\x1b[0m" : "");
    ++visible;
    ++i;
    while (i < line.size() && (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80) ++i;  // UTF-8 continuation
  }
  return line;
}

std::vector<std::string> plainView(const WatchStatus& status, const WatchViewOptions& options) {
  const Totals t = totalsOf(status);
  std::vector<std::string> lines;
  lines.push_back(options.timestamp + " collector " + printable(status.socket) + ": up " +
                  formatDuration(status.uptime_ns) + ", " + processesText(t));
  if (status.processes.empty()) lines.push_back("  no process has connected yet");
  for (const WatchProcess& p : status.processes) {
    lines.push_back("  rank " + rankText(p) + "  pid " + std::to_string(p.pid) + "  " +
                    (p.running ? "running" : "ended") + "  idle " + idleText(p.window_ns, p.idle_fraction) +
                    "  top " + topFindingWithSite(p) + "  step " + stepText(p) + "  syncs/step " + syncsPerStepText(p) +
                    "  launches " + formatCount(p.launches) + "  nccl " + formatDuration(p.nccl_comm_ns) +
                    "  events " + formatCount(p.events) + "  drops " + formatCount(p.drops));
  }
  const double fraction = t.window_ns ? static_cast<double>(t.idle_ns) / static_cast<double>(t.window_ns) : 0.0;
  lines.push_back("  node  idle " + idleText(t.window_ns, fraction) + "  by cause " + causeSharesText(t) +
                  "  events " + formatCount(t.events) + "  drops " + formatCount(t.drops));
  return lines;
}

// Column widths of the table; a value wider than its column pushes the rest of its row right.
constexpr std::size_t kRank = 5, kPid = 8, kState = 8, kIdle = 6, kFinding = 16, kStep = 10, kSyncs = 10,
                      kLaunches = 10, kNccl = 10, kEvents = 12, kDrops = 8;

std::vector<std::string> terminalView(const WatchStatus& status, const WatchViewOptions& options) {
  const TerminalStyle style{options.colour};
  const Totals t = totalsOf(status);
  std::vector<std::string> lines;
  lines.push_back(style.bold("gapwatch watch") + "  collector " + printable(status.socket) + "  up " +
                  formatDuration(status.uptime_ns) + "  " + processesText(t));
  lines.emplace_back();
  const std::string idle_heading = padLeft("IDLE", kIdle) + std::string(kBarCells + 2, ' ') + ' ';
  lines.push_back(style.bold(trimmed(pad("RANK", kRank) + pad("PID", kPid) + pad("STATE", kState) + idle_heading +
                                     pad("TOP FINDING", kFinding) + padLeft("STEP", kStep) + padLeft("SYNC/STEP", kSyncs) +
                                     padLeft("LAUNCHES", kLaunches) + padLeft("NCCL", kNccl) +
                                     padLeft("EVENTS", kEvents) + padLeft("DROPS", kDrops))));
  std::size_t rows = status.processes.size();
  std::size_t shown = rows;
  if (options.height > 0) {
    const std::size_t room = options.height > kFixedLines ? options.height - kFixedLines : 1;
    if (rows > room) shown = room > 1 ? room - 1 : 0;  // the last line says how many are left out
  }
  if (status.processes.empty()) lines.push_back(style.dim("no process has connected yet"));
  for (std::size_t i = 0; i < shown; ++i) {
    const WatchProcess& p = status.processes[i];
    const std::string drops = trimmed(padLeft(formatCount(p.drops), kDrops));
    lines.push_back(pad(rankText(p), kRank) + pad(std::to_string(p.pid), kPid) +
                    pad(p.running ? "running" : "ended", kState) +
                    padLeft(idleText(p.window_ns, p.idle_fraction), kIdle) +
                    style.bar(bar(p.window_ns, p.idle_fraction)) + ' ' + pad(topFindingText(p), kFinding) +
                    padLeft(stepText(p), kStep) + padLeft(syncsPerStepText(p), kSyncs) +
                    padLeft(formatCount(p.launches), kLaunches) + padLeft(formatDuration(p.nccl_comm_ns), kNccl) +
                    padLeft(formatCount(p.events), kEvents) + (p.drops ? style.warn(drops) : drops));
  }
  if (shown < rows) lines.push_back(style.dim("... and " + formatCount(rows - shown) + " more (a taller terminal shows them)"));
  const double fraction = t.window_ns ? static_cast<double>(t.idle_ns) / static_cast<double>(t.window_ns) : 0.0;
  const std::string drops = "drops " + formatCount(t.drops);
  lines.push_back(style.bold(pad("node", kRank + kPid + kState + 2)) + padLeft(idleText(t.window_ns, fraction), kIdle) +
                  style.bar(bar(t.window_ns, fraction)) + ' ' + "by cause " + causeSharesText(t) + "  events " +
                  formatCount(t.events) + "  " + (t.drops ? style.warn(drops) : drops));
  if (options.key_hint) {
    lines.emplace_back();
    lines.push_back(style.dim("q or Ctrl-C: quit"));
  }
  for (std::string& line : lines) line = cutToWidth(line, options.width, options.colour);
  return lines;
}

}  // namespace

std::vector<std::string> renderWatchView(const WatchStatus& status, const WatchViewOptions& options) {
  return options.terminal ? terminalView(status, options) : plainView(status, options);
}

}  // namespace gapwatch::cli
