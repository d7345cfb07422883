// tools/diff_terminal.cpp: see diff_terminal.h.
#include "tools/diff_terminal.h"

#include "tools/text_format.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace gapwatch::cli {
namespace {

std::string filesText(const std::vector<std::string>& files) {
  if (files.size() == 1) return printable(files[0]);
  return printable(files[0]) + " and " + std::to_string(files.size() - 1) + " more";
}

void row(std::ostream& out, const std::string& label, const std::string& a, const std::string& b,
         const std::string& change) {
  out << "  " << std::left << std::setw(38) << label << std::right << std::setw(12) << a << std::setw(12) << b
      << "   " << change << '\n';
}

}  // namespace

std::string diffValueText(double value, const std::string& unit) {
  if (unit == "ns") return formatDuration(static_cast<uint64_t>(std::llround(std::max(0.0, value))));
  if (unit == "fraction") return formatPercent(value);
  char text[32];
  std::snprintf(text, sizeof text, value == std::floor(value) ? "%.0f" : "%.1f", value);
  return text;
}

std::string diffOptionalText(const std::optional<double>& value, const std::string& unit) {
  return value ? diffValueText(*value, unit) : "-";
}

std::string diffChangeText(const analysis::DiffQuantity& q) {
  if (!q.known()) return "";
  const double change = q.change();
  std::string text;
  if (q.unit == "fraction") {
    char points[32];
    std::snprintf(points, sizeof points, "%+.1f points", 100.0 * change);
    text = points;
  } else {
    text = (change < 0 ? "-" : "+") + diffValueText(std::fabs(change), q.unit);
  }
  if (const auto relative = q.relativeChange(); relative && q.unit != "fraction") {
    text += " (" + std::string(*relative < 0 ? "-" : "+") + formatPercent(std::fabs(*relative)) + ")";
  }
  return text;
}


void writeTerminalDiff(const analysis::RunDiff& diff, const std::vector<std::string>& before_files,
                       const std::vector<std::string>& after_files, std::ostream& out) {
  out << "gapwatch diff\n";
  out << "  A: " << filesText(before_files) << '\n';
  out << "  B: " << filesText(after_files) << '\n';
  const auto rankText = [](const std::optional<int32_t>& rank) { return rank ? std::to_string(*rank) : "none"; };
  if (diff.ranks.size() == 1 && diff.ranks[0].before_rank != diff.ranks[0].after_rank) {
    out << "  one process each, paired whatever their ranks (rank " << rankText(diff.ranks[0].before_rank)
        << " in A, " << rankText(diff.ranks[0].after_rank) << " in B)\n\n";
  } else {
    out << "  " << diff.ranks.size() << (diff.ranks.size() == 1 ? " rank" : " ranks") << ", paired by rank number\n\n";
  }

  out << "Verdict: " << diff.verdict << '\n';
  const analysis::StepTimeTest& s = diff.step_time;
  if (s.testable) {
    char t[32], test[160];
    if (std::isfinite(s.t)) std::snprintf(t, sizeof t, "%.2f", s.t);
    else std::snprintf(t, sizeof t, "%sinf", s.t < 0 ? "-" : "");
    std::snprintf(test, sizeof test, "Welch t = %s, %.1f degrees of freedom, two-sided p = %.3g (level %.2g)", t,
                  s.dof, s.p_value, s.level);
    out << "  " << test << " on block means of consecutive steps; standard error of the mean "
        << formatDuration(static_cast<uint64_t>(std::llround(s.before_se_ns))) << " (A, " << s.before_steps << " steps in "
        << s.before_blocks << " blocks), " << formatDuration(static_cast<uint64_t>(std::llround(s.after_se_ns))) << " (B, "
        << s.after_steps << " steps in " << s.after_blocks << " blocks)\n";
    if (s.before_warmup_steps || s.after_warmup_steps) {
      out << "  warm-up left out: the first " << s.before_warmup_steps << " (A) and " << s.after_warmup_steps
          << " (B) steps, each over " << analysis::kWarmupFactor << " x the run's median step\n";
    }
  }
  if (diff.changes.size() > 1) {
    out << "\nWhat changed:\n";
    for (std::size_t i = 1; i < diff.changes.size(); ++i) out << "  - " << printable(diff.changes[i]) << '\n';
  }

  out << '\n';
  row(out, "", "A", "B", "change");
  for (const analysis::DiffQuantity& q : diff.quantities) {
    row(out, q.label, diffOptionalText(q.before, q.unit), diffOptionalText(q.after, q.unit), diffChangeText(q));
  }

  const std::string per = diff.per_step ? " per step" : " in all";
  if (!diff.findings.empty()) {
    out << "\nFindings (idle explained" << per << "; - : not made)\n";
    for (const analysis::FindingChange& f : diff.findings) {
      row(out, f.id, diffOptionalText(f.before_idle_per_step_ns, "ns"), diffOptionalText(f.after_idle_per_step_ns, "ns"), "");
    }
  }
  if (!diff.kernels.empty()) {
    out << "\nTop kernels by device time" << per << " (- : not among that run's top kernels)\n";
    out << "  " << std::right << std::setw(12) << "A" << std::setw(12) << "B" << std::setw(12) << "change" << '\n';
    // Names go last and whole: kernels of one family differ only in their template arguments.
    for (const analysis::KernelChange& k : diff.kernels) {
      std::string change;
      if (k.before_per_step_ns && k.after_per_step_ns) {
        const double c = *k.after_per_step_ns - *k.before_per_step_ns;
        change = (c < 0 ? "-" : "+") + formatDuration(static_cast<uint64_t>(std::llround(std::fabs(c))));
      }
      out << "  " << std::right << std::setw(12) << diffOptionalText(k.before_per_step_ns, "ns") << std::setw(12)
          << diffOptionalText(k.after_per_step_ns, "ns") << std::setw(12) << change << "   " << printable(k.name) << '\n';
    }
  }
}

}  // namespace gapwatch::cli
