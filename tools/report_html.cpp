// tools/report_html.cpp: see report_html.h.
#include "tools/report_html.h"

#include "analysis/diagnosis.h"
#include "analysis/gap_histogram.h"
#include "analysis/kernel_stats.h"
#include "analysis/process_summary.h"
#include "analysis/sync_advice.h"
#include "tools/html_page.h"
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



void legend(std::ostream& out, const std::array<uint64_t, analysis::kIdleCauseCount>& by_cause, uint64_t idle_ns) {
  out << "<div class=scroll><table><tr><th>cause</th><th class=num>idle</th><th class=num>of idle</th>"
         "<th class=hide-narrow>what it is</th></tr>\n";
  for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
    if (by_cause[c] == 0) continue;
    out << "<tr><td><span class=swatch style=\"background:" << kCauseColour[c] << "\"></span>" << causeName(c)
        << "</td><td class=num>" << htmlText(formatDuration(by_cause[c])) << "</td><td class=num>"
        << htmlText(formatPercent(ratio(double(by_cause[c]), double(idle_ns)))) << "</td><td class=hide-narrow>"
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
    out << "<rect x=\"" << svgNumber(x) << "\" y=\"0\" width=\"" << svgNumber(w) << "\" height=\"" << kHeight << "\" fill=\""
        << kCauseColour[c] << "\" stroke=\"#fff\"><title>" << causeName(c) << ": "
        << htmlText(formatDuration(by_cause[c])) << "</title></rect>";
    if (w > 90) out << "<text x=\"" << svgNumber(x + 5) << "\" y=\"19\">" << causeName(c) << "</text>";
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
    out << "<rect x=\"" << svgNumber(x + 2) << "\" y=\"" << svgNumber(kHeight - kBottom - h) << "\" width=\"" << svgNumber(slot - 4)
        << "\" height=\"" << svgNumber(h) << "\" fill=\"#0072B2\"><title>" << htmlText(formatCount(bucket.count)) << " gaps, "
        << htmlText(formatDuration(bucket.total_ns)) << "</title></rect>";
    if (bucket.count) {
      out << "<text x=\"" << svgNumber(x + slot / 2) << "\" y=\"" << svgNumber(kHeight - kBottom - h - 3)
          << "\" text-anchor=middle>" << htmlText(formatCount(bucket.count)) << "</text>";
    }
    // Every other bucket's bound when they crowd: a label is some 40 units wide.
    if (slot >= 44 || (i % 2) == 0) {
      out << "<text x=\"" << svgNumber(x + slot / 2) << "\" y=\"" << svgNumber(kHeight - kBottom + 14) << "\" text-anchor=middle>"
          << htmlText(formatDuration(GapHistogram::lowerNs(first + i))) << "</text>";
    }
  }
  out << "<text x=\"0\" y=\"" << svgNumber(kHeight - 4) << "\">gap length (from); height: idle time in such gaps; "
         "label: gaps</text></svg>\n";
}

void stepPlot(std::ostream& out, const analysis::StepStats& steps) {
  if (steps.timeline.size() < 2) {
    out << "<p class=muted>" << (steps.steps ? "Too few steps to draw." : "No steps found: " + htmlText(steps.how))
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
    out << "<text x=\"" << kLeft - 6 << "\" y=\"" << svgNumber(y + 4) << "\" text-anchor=end>"
        << htmlText(formatDuration(uint64_t(value))) << "</text>";
  }
  out << "<polyline fill=none stroke=\"#D55E00\" stroke-width=2 points=\"";
  for (std::size_t i = 0; i < n; ++i) {
    const double x = kLeft + plot_w * double(i) / double(n - 1);
    const double y = kTop + plot_h - plot_h * ratio(double(steps.timeline[i].mean_ns), double(most));
    out << svgNumber(x) << ',' << svgNumber(y) << ' ';
  }
  out << "\"/><text x=\"" << kLeft << "\" y=\"" << kHeight - 6 << "\">step 1</text><text x=\"" << kWidth - 10
      << "\" y=\"" << kHeight - 6 << "\" text-anchor=end>step " << steps.steps << "</text></svg>\n";
  out << "<p class=muted>" << htmlText(formatCount(steps.steps)) << " steps (" << htmlText(steps.how) << "); median "
      << htmlText(formatDuration(steps.median_ns)) << ", p10 " << htmlText(formatDuration(steps.p10_ns)) << ", p90 "
      << htmlText(formatDuration(steps.p90_ns));
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
    out << "<rect x=\"" << svgNumber(x) << "\" y=8 width=\"" << svgNumber(w) << "\" height=24 fill=\"" << kCauseColour[cause]
        << "\" stroke=\"#333\"><title>gap " << i + 1 << ": " << htmlText(formatDuration(gap.end_ns - gap.start_ns)) << ", "
        << causeName(cause) << "</title></rect><text x=\"" << svgNumber(x + w / 2) << "\" y=44 text-anchor=middle>" << i + 1
        << "</text>";
  }
  out << "</svg>\n<div class=scroll><table><tr><th>#</th><th class=num>length</th><th class=num>from start</th><th>causes</th>"
         "<th class=hide-narrow>where</th></tr>\n";
  for (std::size_t i = 0; i < d.longest_gaps.size(); ++i) {
    const analysis::IdleGap& gap = d.longest_gaps[i];
    const uint64_t length = gap.end_ns - gap.start_ns;
    out << "<tr><td>" << i + 1 << "</td><td class=num>" << htmlText(formatDuration(length)) << "</td><td class=num>+"
        << htmlText(formatDuration(gap.start_ns - d.window_start_ns)) << "</td><td>";
    bool first = true;
    for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
      const double share = ratio(double(gap.by_cause_ns[c]), double(length));
      if (share < 0.01) continue;
      out << (first ? "" : ", ") << "<span class=swatch style=\"background:" << kCauseColour[c] << "\"></span>"
          << causeName(c) << ' ' << htmlText(formatWholePercent(share));
      first = false;
    }
    if (gap.after_sync) out << "; after a sync";
    out << "</td><td class=\"name hide-narrow\">" << (gap.call.known ? htmlText(analysis::gapPlace(gap)) : "") << "</td></tr>\n";
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
    out << "<tr><td>" << htmlText(analysis::syncTypeLabel(s)) << "</td><td class=num>" << htmlText(formatCount(s.count))
        << "</td><td class=num>" << htmlText(formatDuration(s.total_ns)) << "</td><td class=num>"
        << htmlText(formatDuration(s.idle_after_ns)) << "</td><td class=name>";
    for (const analysis::CallSite& site : s.top_call_sites) {
      out << htmlText(site.name) << " <span class=muted>(" << htmlText(formatCount(site.count)) << ", idle after "
          << htmlText(formatDuration(site.idle_after_ns)) << ")</span><br>";
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
    out << "<div class=finding><h3>" << i + 1 << ". " << htmlText(formatPercent(f.idle_share)) << " of idle "
        << htmlText(f.title) << " <span class=muted>(" << htmlText(formatDuration(f.idle_ns)) << ")</span></h3><dl>";
    for (const auto& [name, value] : f.evidence) out << "<dt>" << htmlText(name) << "</dt><dd>" << htmlText(value) << "</dd>";
    if (!f.python_site.empty()) out << "<dt>at</dt><dd>" << htmlText(f.python_site) << "</dd>";
    out << "</dl><div class=fix><strong>Fix:</strong> " << htmlText(f.fix) << "</div></div>\n";
  }
}

void processBlock(std::ostream& out, const analysis::RunReport& content, std::size_t index) {
  const ProcessAnalysis& p = content.analysis.processes[index];
  out << "<h2 id=\"p" << index << "\">" << htmlText(processLabel(p)) << " <span class=muted>"
      << htmlText(index < content.files.size() ? content.files[index] : std::string()) << "</span></h2>\n";
  out << "<div class=verdict>" << htmlText(analysis::verdict(p)) << "</div>\n";
  if (index < content.overviews.size()) {
    const std::string parts = analysis::partsText(content.overviews[index], [](const std::string& f) { return f; });
    if (!parts.empty()) out << "<p class=muted>" << htmlText(parts) << "</p>\n";
  }
  if (!p.device_timeline) {
    out << "<p class=muted>No device timeline (symbol-only recording): host-side numbers only.</p>\n";
  }
  for (const DeviceAnalysis& d : p.devices) {
    out << "<h3>GPU " << d.device << ": idle " << htmlText(formatPercent(d.idle_fraction)) << " of "
        << htmlText(formatDuration(d.window_end_ns - d.window_start_ns)) << "</h3>\n<p class=muted>busy " << htmlText(formatDuration(d.busy_ns))
        << ", idle " << htmlText(formatDuration(d.idle_ns)) << " in " << htmlText(formatCount(d.gaps.count())) << " gaps; "
        << htmlText(formatCount(d.kernels)) << " kernels, " << htmlText(formatCount(d.memcpys)) << " copies.</p>\n";
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
  if (p.bottleneck) {
    const analysis::Finding& b = *p.bottleneck;
    out << "<h3>Bottleneck</h3>\n<div class=finding><h3>" << htmlText("T" + b.title.substr(1)) << "</h3><dl>";
    for (const auto& [name, value] : b.evidence) out << "<dt>" << htmlText(name) << "</dt><dd>" << htmlText(value) << "</dd>";
    out << "</dl><div class=fix><strong>Fix:</strong> " << htmlText(b.fix) << "</div></div>\n";
  }
  out << "<h3>Findings</h3>\n";
  findingsBlock(out, p.findings);
}

// One job's ranks side by side, and what comparing them says.
void rankRows(std::ostream& out, const analysis::AnalysisReport& report, const std::vector<std::size_t>& ranks,
              const analysis::RankComparison* comparison) {
  out << "<div class=scroll><table><tr><th>rank</th><th class=num>idle</th><th>top finding</th>"
         "<th class=num>step</th><th class=num>NCCL wait</th><th class=num>others waited for it</th></tr>\n";
  for (std::size_t i : ranks) {
    const ProcessAnalysis& p = report.processes[i];
    const analysis::ProcessSummary s = analysis::summarizeProcess(p);
    const std::optional<analysis::TopFinding> top = analysis::topFindingOf(p.findings);
    const analysis::RankWait* wait = analysis::rankWaitOf(report, i);
    out << "<tr><td><a href=\"#p" << i << "\">" << htmlText(processLabel(p)) << "</a></td><td class=num>"
        << (p.device_timeline ? htmlText(formatPercent(s.idle_fraction)) : "-") << "</td><td>"
        << (top ? htmlText(top->id) : "-") << "</td><td class=num>"
        << (s.step_median_ns ? htmlText(formatDuration(s.step_median_ns)) : "-") << "</td><td class=num>"
        << (wait ? htmlText(formatDuration(wait->waited_ns)) : "-") << "</td><td class=num>"
        << (wait ? htmlText(formatDuration(wait->waited_for_ns)) : "-") << "</td></tr>\n";
  }
  out << "</table></div>\n";
  if (comparison && !comparison->findings.empty()) {
    out << "<h3>Across ranks</h3>\n";
    findingsBlock(out, comparison->findings);
  }
}

void rankTable(std::ostream& out, const analysis::RunReport& content) {
  const analysis::AnalysisReport& report = content.analysis;
  out << "<h2>Ranks</h2>\n";
  if (report.jobs.size() <= 1) {
    // One job, or a report not grouped into jobs: every process is a rank of one.
    const analysis::RankComparison* comparison = report.rank_comparisons.empty() ? nullptr : &report.rank_comparisons[0];
    rankRows(out, report, report.ranksOfOneJob(), comparison);
    return;
  }
  // Several jobs: each is compared on its own, never across jobs (analysis/job_groups.h).
  out << "<p>" << report.processes.size() << " processes of " << report.jobs.size()
      << " jobs, not one: " << htmlText(report.jobs_why) << ". Each job's ranks are compared on their own.</p>\n";
  if (report.rank_comparisons.empty()) out << "<p>No job has more than one process.</p>\n";
  for (const analysis::RankComparison& comparison : report.rank_comparisons) {
    const auto job = std::find(report.jobs.begin(), report.jobs.end(), comparison.processes);
    out << "<h3>Job " << (job - report.jobs.begin()) + 1 << " of " << report.jobs.size() << ": "
        << comparison.processes.size() << " ranks</h3>\n<p class=muted>";
    for (std::size_t k = 0; k < comparison.processes.size(); ++k) {
      out << (k ? ", " : "") << htmlText(content.files[comparison.processes[k]]);
    }
    out << "</p>\n";
    rankRows(out, report, comparison.processes, &comparison);
  }
}

}  // namespace

void writeHtmlReport(const analysis::RunReport& content, std::ostream& out) {
  const analysis::AnalysisReport& report = content.analysis;
  writeHtmlHead(out, "gapwatch report");
  out << "<h1>gapwatch report</h1>\n<p class=muted>gapwatch " << kLibraryVersion << ", "
      << report.processes.size() << (report.processes.size() == 1 ? " process" : " processes")
      << ". Every idle microsecond of each GPU's window is put to one cause (docs/analysis.md).</p>\n";
  if (report.processes.empty()) out << "<p>No recording could be read.</p>\n";
  if (report.processes.size() > 1) rankTable(out, content);
  for (std::size_t i = 0; i < report.processes.size(); ++i) processBlock(out, content, i);
  writeHtmlTail(out);
}

}  // namespace gapwatch::cli
