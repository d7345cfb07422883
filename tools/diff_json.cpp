// tools/diff_json.cpp: see diff_json.h; every key is documented in docs/report-json.md.
#include "tools/diff_json.h"

#include <gapwatch/recording_format.h>

#include <gapwatch/json_text.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace gapwatch::cli {
namespace {

using json = nlohmann::ordered_json;

json optionalNumber(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

// JSON has no infinity: an infinite t (steps without spread) is written as null.
json finiteOrNull(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

}  // namespace

void writeDiffJson(const analysis::RunDiff& diff, const std::vector<std::string>& before_files,
                   const std::vector<std::string>& after_files, std::optional<double> fail_if_slower,
                   std::ostream& out) {
  json ranks = json::array();
  for (const analysis::RankPair& r : diff.ranks) {
    ranks.push_back({{"rank", r.rank ? json(*r.rank) : json(nullptr)},
                     {"rank_a", r.before_rank ? json(*r.before_rank) : json(nullptr)},
                     {"rank_b", r.after_rank ? json(*r.after_rank) : json(nullptr)},
                     {"file_a", r.before_file},
                     {"file_b", r.after_file}});
  }
  const analysis::StepTimeTest& s = diff.step_time;
  json step_time = {{"testable", s.testable}};
  if (s.testable) {
    step_time.update({{"a_mean_ns", s.before_mean_ns},
                      {"b_mean_ns", s.after_mean_ns},
                      {"a_standard_error_ns", s.before_se_ns},
                      {"b_standard_error_ns", s.after_se_ns},
                      {"a_steps", s.before_steps},
                      {"b_steps", s.after_steps},
                      {"a_warmup_steps", s.before_warmup_steps},
                      {"b_warmup_steps", s.after_warmup_steps},
                      {"a_blocks", s.before_blocks},
                      {"b_blocks", s.after_blocks},
                      {"change_ns", s.change_ns},
                      {"change_fraction", s.relative_change},
                      {"t", finiteOrNull(s.t)},
                      {"degrees_of_freedom", s.dof},
                      {"p_value", s.p_value},
                      {"level", s.level},
                      {"beyond_noise", s.beyond_noise}});
  } else {
    step_time["reason"] = s.untestable_reason;
  }
  json quantities = json::array();
  for (const analysis::DiffQuantity& q : diff.quantities) {
    const auto relative = q.relativeChange();
    quantities.push_back({{"key", q.key},
                          {"unit", q.unit},
                          {"a", optionalNumber(q.before)},
                          {"b", optionalNumber(q.after)},
                          {"change", q.known() ? json(q.change()) : json(nullptr)},
                          {"change_fraction", optionalNumber(relative)},
                          {"notable", q.notable}});
  }
  json findings = json::array();
  for (const analysis::FindingChange& f : diff.findings) {
    findings.push_back({{"id", f.id},
                        {"title", f.title},
                        {"a_idle_ns", optionalNumber(f.before_idle_per_step_ns)},
                        {"b_idle_ns", optionalNumber(f.after_idle_per_step_ns)}});
  }
  json kernels = json::array();
  for (const analysis::KernelChange& k : diff.kernels) {
    kernels.push_back({{"name", k.name},
                       {"a_ns", optionalNumber(k.before_per_step_ns)},
                       {"b_ns", optionalNumber(k.after_per_step_ns)},
                       {"a_runs", optionalNumber(k.before_runs_per_step)},
                       {"b_runs", optionalNumber(k.after_runs_per_step)}});
  }
  json document = {{"gapwatch_diff_version", kDiffJsonVersion},
                   {"generator", std::string("gapwatch ") + kLibraryVersion},
                   {"a", before_files},
                   {"b", after_files},
                   {"ranks", ranks},
                   {"world_size_a", diff.before_world_size ? json(*diff.before_world_size) : json(nullptr)},
                   {"world_size_b", diff.after_world_size ? json(*diff.after_world_size) : json(nullptr)},
                   {"verdict", diff.verdict},
                   {"step_time", step_time},
                   {"per_step", diff.per_step},
                   {"quantities", quantities},
                   {"findings", findings},
                   {"kernels", kernels},
                   {"changes", diff.changes}};
  if (fail_if_slower) {
    document["fail_if_slower"] = {{"threshold_fraction", *fail_if_slower},
                                  {"failed", !s.testable || analysis::slowerBeyondNoise(s, *fail_if_slower)}};
  }
  out << jsonText(document, 2) << '\n';
}

}  // namespace gapwatch::cli
