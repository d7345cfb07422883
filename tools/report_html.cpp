// tools/report_html.cpp: see report_html.h.
#include "tools/report_html.h"

#include "analysis/diagnosis.h"
#include "analysis/gap_histogram.h"
#include "analysis/kernel_stats.h"
#include "analysis/process_summary.h"
#include "analysis/sync_advice.h"
#include "tools/text_format.h"

#include <gapwatch/recording_format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace gapwatch::cli {
namespace {

using analysis::DeviceAnalysis;
using analysis::ProcessAnalysis;

// Okabe-Ito, in IdleCause order: host_cpu, launch_overhead, sync_copy, cuda_api, nccl_host,
// dependency. Distinct under the common colour-vision deficiencies; each is named beside it too.
constexpr const char* kCauseColour[analysis::kIdleCauseCount] = {"#E69F00", "#56B4E9", "#009E73",
                                                                  "#F0E442", "#0072B2", "#CC79A7"};
constexpr const char* kCauseText[analysis::kIdleCauseCount] = {
    "host CPU (data pipeline, framework, Python)", "launch overhead", "synchronous copies and syncs",
    "other CUDA API calls", "NCCL calls on the host", "waiting on other work"};

// Untrusted text into HTML text or an attribute: control characters escaped as the text report
// escapes them (printable), then the five characters HTML gives meaning to.
std::string esc(std::string_view text) {
  const std::string safe = printable(text);
  std::string out;
  out.reserve(safe.size());
  for (char c : safe) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", x);
  return buffer;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

std::string processLabel(const ProcessAnalysis& p) {
  return p.rank ? "rank " + std::to_string(*p.rank) : "pid " + std::to_string(p.pid);
}

const char* causeName(std::size_t c) { return analysis::idleCauseName(static_cast<analysis::IdleCause>(c)); }

std::size_t dominantCause(const analysis::IdleGap& gap) {
  std::size_t best = 0;
  for (std::size_t c = 1; c < analysis::kIdleCauseCount; ++c)
    if (gap.by_cause_ns[c] > gap.by_cause_ns[best]) best = c;
  return best;
}

const char* kStyle = R"(<style>
:root{--fg:#1b1b1b;--muted:#555;--line:#d0d0d0;--bg:#fff;--panel:#f6f6f6}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;padding:16px;max-width:1180px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.25em;margin:1.6em 0 .4em;border-bottom:2px solid var(--line)}h3{font-size:1.05em;margin:1.2em 0 .3em}
.verdict{font-size:1.15em;font-weight:600;background:var(--panel);border-left:6px solid #0072B2;padding:.6em .8em;margin:.6em 0}
.muted{color:var(--muted)}.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.grid{display:flex;flex-wrap:wrap;gap:16px}.grid>section{flex:1 1 520px;min-width:0}
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;margin:.3em 0}th,td{padding:3px 6px;border-bottom:1px solid var(--line);vertical-align:top;text-align:left}
th{font-weight:600;background:var(--panel)}td.name{word-break:break-all;min-width:14em}
.swatch{display:inline-block;width:.9em;height:.9em;border:1px solid #333;margin-right:.35em;vertical-align:-1px}
svg{width:100%;height:auto;display:block}svg text{font:11px system-ui,"DejaVu Sans",sans-serif;fill:#333}
.finding{border:1px solid var(--line);border-radius:6px;padding:.5em .8em;margin:.6em 0}
.fix{background:#eef6fb;padding:.4em .6em;border-radius:4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:.4em 0}dt{color:var(--muted)}dd{margin:0}
@media (max-width:640px){body{padding:8px;font-size:14px}.hide-narrow{display:none}}
@media print{body{max-width:none}.finding,section{break-inside:avoid}}
</style>)";

void legend(std::ostream& out, const std::array<uint64_t, analysis::kIdleCauseCount>& by_cause, uint64_t idle_ns) {
  out << "<div class=scroll><table><tr><th>cause</th><th class=num>idle</th><th class=num>of idle</th>"
         "<th class=hide-narrow>what it is</th></tr>\n";
  for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
    if (by_cause[c] == 0) continue;
    out << "<tr><td><span class=swatch style=\"background:" << kCauseColour[c] << "\"></span>" << causeName(c)
        << "</td><td class=num>" << esc(formatDuration(by_cause[c])) << "</td><td class=num>"
        << esc(formatPercent(ratio(double(by_cause[c]), double(idle_ns)))) << "</td><td class=hide-narrow>"
        << kCauseText[c] << "</td></tr>\n";
  }
  out << "</table></div>\n";
}

// One horizontal bar, the idle split by cause, each part as wide as its share.
void causeBar(std::ostream& out, const std::array<uint64_t, analysis::kIdleCauseCount>& by_cause, uint64_t idle_ns) {
  // Half a page wide (it sits in a column), so that its text stays legible when scaled.
  constexpr double kWidth = 520, kHeight = 30;
  out << "<svg viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" role=img aria-label=\"idle time by cause\">";
  double x = 0;
  for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
    const double w = kWidth * ratio(double(by_cause[c]), double(idle_ns));
    if (w <= 0) continue;
    out << "<rect x=\"" << num(x) << "\" y=\"0\" width=\"" << num(w) << "\" height=\"" << kHeight << "\" fill=\""
        << kCauseColour[c] << "\" stroke=\"#fff\"><title>" << causeName(c) << ": "
        << esc(formatDuration(by_cause[c])) << "</title></rect>";
    if (w > 90) out << "<text x=\"" << num(x + 5) << "\" y=\"19\">" << causeName(c) << "</text>";
    x += w;
  }
  out << "</svg>\n";
}

void gapHistogramPlot(std::ostream& out, const GapHistogram& gaps) {
  std::size_t first = GapHistogram::kBucketCount, last = 0;
  uint64_t most = 0;
  for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
    if (gaps.bucket(b).count == 0) continue;
    first = std::min(first, b);
    last = b;
    most = std::max(most, gaps.bucket(b).total_ns);
  }
  if (first > last) {
    out << "<p class=muted>No idle gaps.</p>\n";
    return;
  }
  const std::size_t n = last - first + 1;
  constexpr double kWidth = 520, kHeight = 200, kBottom = 40, kTop = 16;
  const double slot = kWidth / double(n);
  out << "<svg viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" role=img aria-label=\"idle time by gap length\">";
  for (std::size_t i = 0; i < n; ++i) {
    const GapHistogram::Bucket& bucket = gaps.bucket(first + i);
    const double h = (kHeight - kBottom - kTop) * ratio(double(bucket.total_ns), double(most));
    const double x = double(i) * slot;
    out << "<rect x=\"" << num(x + 2) << "\" y=\"" << num(kHeight - kBottom - h) << "\" width=\"" << num(slot - 4)
        << "\" height=\"" << num(h) << "\" fill=\"#0072B2\"><title>" << esc(formatCount(bucket.count)) << " gaps, "
        << esc(formatDuration(bucket.total_ns)) << "</title></rect>";
    if (bucket.count) {
      out << "<text x=\"" << num(x + slot / 2) << "\" y=\"" << num(kHeight - kBottom - h - 3)
          << "\" text-anchor=middle>" << esc(formatCount(bucket.count)) << "</text>";
    }
    // Every other bucket's bound when they crowd: a label is some 40 units wide.
    if (slot >= 44 || (i % 2) == 0) {
      out << "<text x=\"" << num(x + slot / 2) << "\" y=\"" << num(kHeight - kBottom + 14) << "\" text-anchor=middle>"
          << esc(formatDuration(GapHistogram::lowerNs(first + i))) << "</text>";
    }
  }
  out << "<text x=\"0\" y=\"" << num(kHeight - 4) << "\">gap length (from); height: idle time in such gaps; "
         "label: gaps</text></svg>\n";
}

void stepPlot(std::ostream& out, const analysis::StepStats& steps) {
  if (steps.timeline.size() < 2) {
    out << "<p class=muted>" << (steps.steps ? "Too few steps to draw." : "No steps found: " + esc(steps.how))
        << "</p>\n";
    return;
  }
  uint64_t most = 0;
  for (const analysis::StepPoint& p : steps.timeline) most = std::max(most, p.mean_ns);
  constexpr double kWidth = 1000, kHeight = 200, kLeft = 70, kBottom = 28, kTop = 10;
  const double plot_w = kWidth - kLeft - 10, plot_h = kHeight - kBottom - kTop;
  const std::size_t n = steps.timeline.size();
  out << "<svg viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" role=img aria-label=\"step time over the run\">";
  out << "<line x1=\"" << kLeft << "\" y1=\"" << kTop + plot_h << "\" x2=\"" << kWidth - 10 << "\" y2=\""
      << kTop + plot_h << "\" stroke=\"#999\"/>";
  for (int tick = 0; tick <= 2; ++tick) {
    const double value = double(most) * tick / 2.0;
    const double y = kTop + plot_h - plot_h * tick / 2.0;
    out << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(y + 4) << "\" text-anchor=end>"
        << esc(formatDuration(uint64_t(value))) << "</text>";
  }
  out << "<polyline fill=none stroke=\"#D55E00\" stroke-width=2 points=\"";
  for (std::size_t i = 0; i < n; ++i) {
    const double x = kLeft + plot_w * double(i) / double(n - 1);
    const double y = kTop + plot_h - plot_h * ratio(double(steps.timeline[i].mean_ns), double(most));
    out << num(x) << ',' << num(y) << ' ';
  }
  out << "\"/><text x=\"" << kLeft << "\" y=\"" << kHeight - 6 << "\">step 1</text><text x=\"" << kWidth - 10
      << "\" y=\"" << kHeight - 6 << "\" text-anchor=end>step " << steps.steps << "</text></svg>\n";
  out << "<p class=muted>" << esc(formatCount(steps.steps)) << " steps (" << esc(steps.how) << "); median "
      << esc(formatDuration(steps.median_ns)) << ", p10 " << esc(formatDuration(steps.p10_ns)) << ", p90 "
      << esc(formatDuration(steps.p90_ns));
  if (steps.timeline.front().steps > 1) out << "; each point the mean of " << steps.timeline.front().steps << " steps";
  out << ".</p>\n";
}

// The device's window as a strip, its longest gaps where they happened, coloured by their main
// cause; the table under it says each gap's causes in words.
void worstGapStrip(std::ostream& out, const DeviceAnalysis& d) {
  if (d.longest_gaps.empty() || d.window_end_ns <= d.window_start_ns) return;
  const double window = double(d.window_end_ns - d.window_start_ns);
  constexpr double kWidth = 1000, kHeight = 46;
  out << "<svg viewBox=\"0 0 " << kWidth << ' ' << kHeight << "\" role=img aria-label=\"the longest gaps in the "
         "device's window\"><rect x=0 y=8 width=\"" << kWidth << "\" height=24 fill=\"#e8e8e8\"/>";
  for (std::size_t i = 0; i < d.longest_gaps.size(); ++i) {
    const analysis::IdleGap& gap = d.longest_gaps[i];
    const double x = kWidth * double(gap.start_ns - d.window_start_ns) / window;
    const double w = std::max(3.0, kWidth * double(gap.end_ns - gap.start_ns) / window);
    const std::size_t cause = dominantCause(gap);
    out << "<rect x=\"" << num(x) << "\" y=8 width=\"" << num(w) << "\" height=24 fill=\"" << kCauseColour[cause]
        << "\" stroke=\"#333\"><title>gap " << i + 1 << ": " << esc(formatDuration(gap.end_ns - gap.start_ns)) << ", "
        << causeName(cause) << "</title></rect><text x=\"" << num(x + w / 2) << "\" y=44 text-anchor=middle>" << i + 1
        << "</text>";
  }
  out << "</svg>\n<div class=scroll><table><tr><th>#</th><th class=num>length</th><th class=num>from start</th><th>causes</th>"
         "<th class=hide-narrow>where</th></tr>\n";
  for (std::size_t i = 0; i < d.longest_gaps.size(); ++i) {
    const analysis::IdleGap& gap = d.longest_gaps[i];
    const uint64_t length = gap.end_ns - gap.start_ns;
    out << "<tr><td>" << i + 1 << "</td><td class=num>" << esc(formatDuration(length)) << "</td><td class=num>+"
        << esc(formatDuration(gap.start_ns - d.window_start_ns)) << "</td><td>";
    bool first = true;
    for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
      const double share = ratio(double(gap.by_cause_ns[c]), double(length));
      if (share < 0.01) continue;
      out << (first ? "" : ", ") << "<span class=swatch style=\"background:" << kCauseColour[c] << "\"></span>"
          << causeName(c) << ' ' << esc(formatWholePercent(share));
      first = false;
    }
    if (gap.after_sync) out << "; after a sync";
    out << "</td><td class=\"name hide-narrow\">" << (gap.call.known ? esc(analysis::gapPlace(gap)) : "") << "</td></tr>\n";
  }
  out << "</table></div>\n";
}

void syncTable(std::ostream& out, const ProcessAnalysis& p) {
  uint64_t count = 0;
  for (const analysis::SyncTypeStats& s : p.sync_points) count += s.count;
  if (count == 0) {
    out << "<p class=muted>No host call waited for the device.</p>\n";
    return;
  }
  out << "<div class=scroll><table><tr><th>type</th><th class=num>count</th><th class=num>waiting</th>"
         "<th class=num>idle after</th><th>top call sites</th></tr>\n";
  for (const analysis::SyncTypeStats& s : p.sync_points) {
    if (s.count == 0) continue;
    out << "<tr><td>" << esc(analysis::syncTypeLabel(s)) << "</td><td class=num>" << esc(formatCount(s.count))
        << "</td><td class=num>" << esc(formatDuration(s.total_ns)) << "</td><td class=num>"
        << esc(formatDuration(s.idle_after_ns)) << "</td><td class=name>";
    for (const analysis::CallSite& site : s.top_call_sites) {
      out << esc(site.name) << " <span class=muted>(" << esc(formatCount(site.count)) << ", idle after "
          << esc(formatDuration(site.idle_after_ns)) << ")</span><br>";
    }
    out << "</td></tr>\n";
  }
  out << "</table></div>\n";
}

void findingsBlock(std::ostream& out, const std::vector<analysis::Finding>& findings) {
  if (findings.empty()) {
    out << "<p class=muted>No finding: no cause explains enough of the idle time to act on.</p>\n";
    return;
  }
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const analysis::Finding& f = findings[i];
    out << "<div class=finding><h3>" << i + 1 << ". " << esc(formatPercent(f.idle_share)) << " of idle "
        << esc(f.title) << " <span class=muted>(" << esc(formatDuration(f.idle_ns)) << ")</span></h3><dl>";
    for (const auto& [name, value] : f.evidence) out << "<dt>" << esc(name) << "</dt><dd>" << esc(value) << "</dd>";
    if (!f.python_site.empty()) out << "<dt>at</dt><dd>" << esc(f.python_site) << "</dd>";
    out << "</dl><div class=fix><strong>Fix:</strong> " << esc(f.fix) << "</div></div>\n";
  }
}

void processBlock(std::ostream& out, const analysis::RunReport& content, std::size_t index) {
  const ProcessAnalysis& p = content.analysis.processes[index];
  out << "<h2 id=\"p" << index << "\">" << esc(processLabel(p)) << " <span class=muted>"
      << esc(index < content.files.size() ? content.files[index] : std::string()) << "</span></h2>\n";
  out << "<div class=verdict>" << esc(analysis::verdict(p)) << "</div>\n";
  if (!p.device_timeline) {
    out << "<p class=muted>No device timeline (symbol-only recording): host-side numbers only.</p>\n";
  }
  for (const DeviceAnalysis& d : p.devices) {
    out << "<h3>GPU " << d.device << ": idle " << esc(formatPercent(d.idle_fraction)) << " of "
        << esc(formatDuration(d.window_end_ns - d.window_start_ns)) << "</h3>\n<p class=muted>busy " << esc(formatDuration(d.busy_ns))
        << ", idle " << esc(formatDuration(d.idle_ns)) << " in " << esc(formatCount(d.gaps.count())) << " gaps; "
        << esc(formatCount(d.kernels)) << " kernels, " << esc(formatCount(d.memcpys)) << " copies.</p>\n";
    out << "<div class=grid><section><h3>Idle by cause</h3>\n";
    causeBar(out, d.idle_by_cause_ns, d.idle_ns);
    legend(out, d.idle_by_cause_ns, d.idle_ns);
    out << "</section><section><h3>Idle gaps by length</h3>\n";
    gapHistogramPlot(out, d.gaps);
    out << "</section></div>\n<h3>The longest gaps, where they happened</h3>\n";
    worstGapStrip(out, d);
  }
  out << "<h3>Step time over the run</h3>\n";
  stepPlot(out, p.steps);
  out << "<h3>Sync points</h3>\n";
  syncTable(out, p);
  out << "<h3>Findings</h3>\n";
  findingsBlock(out, p.findings);
}

void rankTable(std::ostream& out, const analysis::AnalysisReport& report) {
  out << "<h2>Ranks</h2>\n<div class=scroll><table><tr><th>rank</th><th class=num>idle</th><th>top finding</th>"
         "<th class=num>step</th><th class=num>NCCL wait</th><th class=num>others waited for it</th></tr>\n";
  for (std::size_t i = 0; i < report.processes.size(); ++i) {
    const ProcessAnalysis& p = report.processes[i];
    const analysis::ProcessSummary s = analysis::summarizeProcess(p);
    const std::optional<analysis::TopFinding> top = analysis::topFindingOf(p.findings);
    const int32_t rank = p.rank ? *p.rank : static_cast<int32_t>(i);
    const analysis::RankWait* wait = nullptr;
    for (const analysis::RankWait& w : report.rank_waits)
      if (w.rank == rank) wait = &w;
    out << "<tr><td><a href=\"#p" << i << "\">" << esc(processLabel(p)) << "</a></td><td class=num>"
        << (p.device_timeline ? esc(formatPercent(s.idle_fraction)) : "-") << "</td><td>"
        << (top ? esc(top->id) : "-") << "</td><td class=num>"
        << (s.step_median_ns ? esc(formatDuration(s.step_median_ns)) : "-") << "</td><td class=num>"
        << (wait ? esc(formatDuration(wait->waited_ns)) : "-") << "</td><td class=num>"
        << (wait ? esc(formatDuration(wait->waited_for_ns)) : "-") << "</td></tr>\n";
  }
  out << "</table></div>\n";
  if (!report.findings.empty()) {
    out << "<h3>Across ranks</h3>\n";
    findingsBlock(out, report.findings);
  }
}

}  // namespace

void writeHtmlReport(const analysis::RunReport& content, std::ostream& out) {
  const analysis::AnalysisReport& report = content.analysis;
  out << "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
         "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
         "<title>gapwatch report</title>\n"
      << kStyle << "</head><body>\n<h1>gapwatch report</h1>\n<p class=muted>gapwatch " << kLibraryVersion << ", "
      << report.processes.size() << (report.processes.size() == 1 ? " process" : " processes")
      << ". Every idle microsecond of each GPU's window is put to one cause (docs/analysis.md).</p>\n";
  if (report.processes.empty()) out << "<p>No recording could be read.</p>\n";
  if (report.processes.size() > 1) rankTable(out, report);
  for (std::size_t i = 0; i < report.processes.size(); ++i) processBlock(out, content, i);
  out << "</body></html>\n";
}

}  // namespace gapwatch::cli
