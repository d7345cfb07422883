// python/gapwatch_module.cpp: gapwatch._gapwatch, the compiled half of `import gapwatch`.
//
// Two calls, both over the analysis library in this process (no subprocess, no temporary file):
// the report of a set of recordings or traces as the very JSON text `gapwatch report --json`
// writes (tools/report_json.h), which python/gapwatch/_report.py turns into Python objects, so
// that the API and the command line cannot disagree; and one per-item table (table_rows.h), read
// again from the recordings. Reading a file that is not a recording raises GapwatchError with the
// line the command line prints; a truncated one adds its note to the notes returned.
#include "analysis/run_analysis.h"
#include "python/table_rows.h"
#include "tools/exit_codes.h"
#include "tools/file_outcome.h"
#include "tools/report_command.h"
#include "tools/report_json.h"

#include <gapwatch/utf8_text.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;

namespace gapwatch::python {
namespace {

class GapwatchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

analysis::AnalysisOptions makeOptions(uint32_t top_n, uint64_t min_gap_ns, uint64_t launch_threshold_ns, bool hta) {
  if (top_n == 0) throw GapwatchError("gapwatch.analyze: top_n must be at least 1");
  analysis::AnalysisOptions options;
  options.top_n = top_n;
  options.min_gap_ns = min_gap_ns;
  options.launch_threshold_ns = launch_threshold_ns;
  options.hta_view = hta;
  return options;
}

// The lines the command line prints on stderr, split: errors raise, notes are returned.
struct Lines {
  std::vector<std::string> notes;
  std::string errors;
};

Lines splitLines(const std::string& text) {
  Lines lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line.find(": note: ") != std::string::npos) {
      lines.notes.push_back(line);
    } else {
      lines.errors += (lines.errors.empty() ? "" : "; ") + line;
    }
  }
  return lines;
}

// Directories become their recordings, as `gapwatch report DIR` reads them.
std::vector<std::string> expandPaths(std::vector<std::string> paths, std::vector<std::string>& notes) {
  if (paths.empty()) throw GapwatchError("gapwatch.analyze: no recording or trace given");
  std::ostringstream err;
  if (!cli::expandRunOperands(paths, err)) throw GapwatchError(splitLines(err.str()).errors);
  const Lines lines = splitLines(err.str());
  notes.insert(notes.end(), lines.notes.begin(), lines.notes.end());
  return paths;
}

// Analyses `files` as `gapwatch report` does; `prepare` may add a stage to each process.
analysis::RunReport analyse(const std::vector<std::string>& files, const analysis::AnalysisOptions& options,
                            std::vector<std::string>& notes,
                            const std::function<void(std::size_t, analysis::ProcessAnalyser&)>& prepare = {}) {
  std::ostringstream err;
  int worst = cli::kExitOk;
  analysis::RunReport report = analysis::analyseRecordingFiles(
      files, options,
      [&](const std::string& file, const ReadResult& read) {
        worst = std::max(worst, cli::printReadOutcome(file, read, err));
      },
      prepare);
  const Lines lines = splitLines(err.str());
  if (worst != cli::kExitOk) throw GapwatchError(lines.errors.empty() ? "gapwatch.analyze: cannot read the recordings" : lines.errors);
  notes.insert(notes.end(), lines.notes.begin(), lines.notes.end());
  return report;
}

// (the report's JSON text, the files read, notes)
py::tuple reportJson(std::vector<std::string> paths, uint32_t top_n, uint64_t min_gap_ns, uint64_t launch_threshold_ns,
                     bool hta) {
  const analysis::AnalysisOptions options = makeOptions(top_n, min_gap_ns, launch_threshold_ns, hta);
  std::vector<std::string> notes;
  std::vector<std::string> files;
  std::string text;
  {
    py::gil_scoped_release unlocked;  // minutes for a long recording: other Python threads go on
    files = expandPaths(std::move(paths), notes);
    const analysis::RunReport report = analyse(files, options, notes);
    std::ostringstream out;
    cli::writeReportJson(report, out);
    text = out.str();
  }
  return py::make_tuple(text, files, notes);
}

Table tableNamed(const std::string& name) {
  if (name == "gaps") return Table::kGaps;
  if (name == "sync_points") return Table::kSyncPoints;
  if (name == "kernels") return Table::kKernels;
  if (name == "steps") return Table::kSteps;
  throw GapwatchError("gapwatch: no table named '" + name + "' (gaps, sync_points, kernels, steps)");
}

// (column names, {name: list of values}, notes), for the files as given (already expanded).
py::tuple tableColumns(const std::vector<std::string>& files, const std::string& name, uint32_t top_n,
                       uint64_t min_gap_ns, uint64_t launch_threshold_ns) {
  const Table table = tableNamed(name);
  const analysis::AnalysisOptions options = makeOptions(top_n, min_gap_ns, launch_threshold_ns, false);
  TableColumns columns = emptyTable(table);
  std::vector<std::string> notes;
  {
    py::gil_scoped_release unlocked;
    analyse(files, options, notes, [&](std::size_t index, analysis::ProcessAnalyser& process) {
      TableRowsStage::attach(process.pipeline(), table, static_cast<uint32_t>(index), columns);
    });
  }
  py::list names;
  py::dict values;
  for (Column& column : columns.columns) {
    names.append(column.name);
    py::list list(columns.rows);
    for (std::size_t row = 0; row < columns.rows; ++row) {
      switch (column.type) {
        case Column::Type::kUnsigned: list[row] = py::int_(column.numbers[row]); break;
        case Column::Type::kBool: list[row] = py::bool_(column.numbers[row] != 0); break;
        // A name need not be UTF-8: its invalid bytes become U+FFFD, as in the JSON (gapwatch/utf8_text.h),
        // rather than a UnicodeDecodeError for the whole table.
        case Column::Type::kText: list[row] = py::str(validUtf8(column.texts[row])); break;
      }
    }
    // Freed column by column: the Python lists take the rows' place.
    column.numbers = {};
    column.texts = {};
    values[py::str(column.name)] = std::move(list);
  }
  return py::make_tuple(names, values, notes);
}

}  // namespace
}  // namespace gapwatch::python

PYBIND11_MODULE(_gapwatch, m) {
  using namespace gapwatch::python;
  m.doc() = "gapwatch's analysis library (use the gapwatch package, not this module)";
  py::register_exception<GapwatchError>(m, "GapwatchError", PyExc_ValueError);
  m.def("report_json", &reportJson, py::arg("paths"), py::arg("top_n"), py::arg("min_gap_ns"),
        py::arg("launch_threshold_ns"), py::arg("hta"));
  m.def("table_columns", &tableColumns, py::arg("files"), py::arg("table"), py::arg("top_n"),
        py::arg("min_gap_ns"), py::arg("launch_threshold_ns"));
  m.attr("report_version") = gapwatch::cli::kReportJsonVersion;
}
