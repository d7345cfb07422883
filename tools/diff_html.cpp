// tools/diff_html.cpp: see diff_html.h.
#include "tools/diff_html.h"

#include "tools/diff_terminal.h"
#include "tools/html_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gapwatch::cli {
namespace {

// Run A grey, run B the Okabe-Ito blue: told apart without colour too (A is always the upper bar,
// and each bar is labelled with its run and value).
constexpr const char* kBeforeColour = "#999999";
constexpr const char* kAfterColour = "#0072B2";

std::string filesText(const std::vector<std::string>& files) {
  if (files.empty()) return "";
  if (files.size() == 1) return files[0];
  return files[0] + " and " + std::to_string(files.size() - 1) + " more";
}

// The per-step times both runs have, as pairs of bars on one scale.
void perStepChart(std::ostream& out, const analysis::RunDiff& diff) {
  std::vector<const analysis::DiffQuantity*> rows;
  double most = 0;
  for (const analysis::DiffQuantity& q : diff.quantities) {
    if (q.unit != "ns" || !q.known() || (*q.before <= 0 && *q.after <= 0)) continue;
    rows.push_back(&q);
    most = std::max({most, *q.before, *q.after});
  }
  if (rows.empty() || most <= 0) return;
  constexpr double kWidth = 1000, kLabel = 300, kBar = 14, kRow = 40;
  const double height = kRow * double(rows.size()) + 10;
  out << "<h2>Per step, side by side</h2>\n<svg viewBox=\"0 0 " << kWidth << ' ' << svgNumber(height)
      << "\" role=img aria-label=\"per-step times of run A and run B\">";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const analysis::DiffQuantity& q = *rows[i];
    const double y = kRow * double(i) + 6;
    out << "<text x=\"0\" y=\"" << svgNumber(y + 18) << "\">" << htmlText(q.label) << "</text>";
    const double values[2] = {*q.before, *q.after};
    for (int side = 0; side < 2; ++side) {
      const double w = (kWidth - kLabel - 130) * values[side] / most;
      const double by = y + side * (kBar + 2);
      out << "<rect x=\"" << kLabel << "\" y=\"" << svgNumber(by) << "\" width=\"" << svgNumber(std::max(1.0, w))
          << "\" height=\"" << kBar << "\" fill=\"" << (side == 0 ? kBeforeColour : kAfterColour) << "\"/>"
          << "<text x=\"" << svgNumber(kLabel + std::max(1.0, w) + 4) << "\" y=\"" << svgNumber(by + 11) << "\">"
          << (side == 0 ? "A " : "B ") << htmlText(diffValueText(values[side], q.unit)) << "</text>";
    }
  }
  out << "</svg>\n";
}

}  // namespace

void writeHtmlDiff(const analysis::RunDiff& diff, const std::vector<std::string>& before_files,
                   const std::vector<std::string>& after_files, std::ostream& out) {
  writeHtmlHead(out, "gapwatch diff");
  out << "<h1>gapwatch diff</h1>\n<p class=muted>A: " << htmlText(filesText(before_files)) << "<br>B: "
      << htmlText(filesText(after_files)) << "<br>" << diff.ranks.size()
      << (diff.ranks.size() == 1 ? " rank" : " ranks") << ", paired by rank number</p>\n";
  out << "<div class=verdict>" << htmlText(diff.verdict) << "</div>\n";
  const analysis::StepTimeTest& s = diff.step_time;
  if (s.testable) {
    char test[200];
    std::snprintf(test, sizeof test, "Welch t = %.2f, %.1f degrees of freedom, two-sided p = %.3g (level %.2g)",
                  std::isfinite(s.t) ? s.t : 0.0, s.dof, s.p_value, s.level);
    out << "<p class=muted>" << htmlText(test) << "; mean step "
        << htmlText(diffValueText(s.before_mean_ns, "ns")) << " (A, " << s.before_steps << " steps) against "
        << htmlText(diffValueText(s.after_mean_ns, "ns")) << " (B, " << s.after_steps << " steps).</p>\n";
  }
  if (diff.changes.size() > 1) {
    out << "<h2>What changed</h2>\n<ul>\n";
    for (std::size_t i = 1; i < diff.changes.size(); ++i) out << "<li>" << htmlText(diff.changes[i]) << "</li>\n";
    out << "</ul>\n";
  }
  perStepChart(out, diff);
  out << "<h2>The numbers</h2>\n<div class=scroll><table><tr><th></th><th class=num>A</th><th class=num>B</th>"
         "<th class=num>change</th></tr>\n";
  for (const analysis::DiffQuantity& q : diff.quantities) {
    out << "<tr><td>" << htmlText(q.label) << "</td><td class=num>" << htmlText(diffOptionalText(q.before, q.unit))
        << "</td><td class=num>" << htmlText(diffOptionalText(q.after, q.unit)) << "</td><td class=num>"
        << (q.notable ? "<strong>" : "") << htmlText(diffChangeText(q)) << (q.notable ? "</strong>" : "")
        << "</td></tr>\n";
  }
  out << "</table></div>\n";
  const std::string per = diff.per_step ? " per step" : " in all";
  if (!diff.findings.empty()) {
    out << "<h2>Findings</h2>\n<p class=muted>Idle explained" << per << "; - : not made.</p>\n"
        << "<div class=scroll><table><tr><th>finding</th><th class=num>A</th><th class=num>B</th></tr>\n";
    for (const analysis::FindingChange& f : diff.findings) {
      out << "<tr><td>" << htmlText(f.id) << " <span class=muted>" << htmlText(f.title) << "</span></td><td class=num>"
          << htmlText(diffOptionalText(f.before_idle_per_step_ns, "ns")) << "</td><td class=num>"
          << htmlText(diffOptionalText(f.after_idle_per_step_ns, "ns")) << "</td></tr>\n";
    }
    out << "</table></div>\n";
  }
  if (!diff.kernels.empty()) {
    out << "<h2>Top kernels by device time" << per << "</h2>\n<p class=muted>- : not among that run's top kernels."
        << "</p>\n<div class=scroll><table><tr><th class=num>A</th><th class=num>B</th><th>kernel</th></tr>\n";
    for (const analysis::KernelChange& k : diff.kernels) {
      out << "<tr><td class=num>" << htmlText(diffOptionalText(k.before_per_step_ns, "ns")) << "</td><td class=num>"
          << htmlText(diffOptionalText(k.after_per_step_ns, "ns")) << "</td><td class=name>" << htmlText(k.name)
          << "</td></tr>\n";
    }
    out << "</table></div>\n";
  }
  writeHtmlTail(out);
}

}  // namespace gapwatch::cli
