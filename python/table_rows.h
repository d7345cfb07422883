// python/table_rows.h: the per-item tables of the Python API (report.gaps(), sync_points(),
// kernels(), steps()), gathered by an analysis stage while the engine reads a recording.
//
// The report (analysis/run_analysis.h) keeps bounded state by design: the longest gaps, the top
// kernels, percentiles. A notebook wants every item. Rather than hold a recording's events, the
// Python API reads the recording again through the same engine with a TableRowsStage added, and
// keeps only the rows of the one table asked for, as columns. So the gaps are the gaps the engine's
// device idle stage closed, with its attribution, and the steps are its step detector's: the same
// numbers the report sums, not a second implementation of them.
#pragma once

#include "analysis/analysis_pipeline.h"
#include "analysis/analysis_stage.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gapwatch::python {

enum class Table : uint8_t { kGaps, kSyncPoints, kKernels, kSteps };

// One table as columns of equal length; each column holds numbers, flags or text.
struct Column {
  std::string name;
  enum class Type : uint8_t { kUnsigned, kBool, kText } type = Type::kUnsigned;
  std::vector<uint64_t> numbers;  // kUnsigned and kBool
  std::vector<std::string> texts;  // kText
};

struct TableColumns {
  std::vector<Column> columns;
  std::size_t rows = 0;
  Column& add(std::string name, Column::Type type);
};

// Gathers one table's rows for one process (process index `process`, rank -1 when none) into
// `out`, which several processes share (one input file after another).
class TableRowsStage final : public analysis::AnalysisStage {
 public:
  TableRowsStage(Table table, uint32_t process, TableColumns& out);

  // Adds the stage after `pipeline`'s standard stages and hears its gaps or steps.
  static TableRowsStage& attach(analysis::AnalysisPipeline& pipeline, Table table, uint32_t process,
                                TableColumns& out);

  void setStrings(const StringTable* strings) override { strings_ = strings; }
  void onApiCall(const ApiCallEvent& call) override;
  void onActivity(const DeviceActivityEvent& activity) override;
  void finish() override;
  void contribute(analysis::ProcessAnalysis& /*result*/) override {}

  void onGap(uint32_t device, const analysis::IdleGap& gap);
  void onStep(bool detected, uint64_t start_ns, uint64_t end_ns);

 private:
  void addRow();
  Column& col(std::size_t index) { return out_.columns[index]; }

  Table table_;
  uint32_t process_;
  TableColumns& out_;
  const StringTable* strings_ = nullptr;
  // Steps: by markers and detected, each kept until finish() (a process has both only when it
  // marks its steps; the report then counts the markers', and so do the rows).
  struct StepRow {
    uint64_t start_ns, end_ns;
  };
  std::vector<StepRow> marked_steps_, detected_steps_;
  // Gaps just closed, whose ending work is the activity released next.
  struct PendingGap {
    std::size_t row;
    uint32_t device;
    uint64_t end_ns;
  };
  std::vector<PendingGap> pending_gaps_;
  void nameGapEnds(const DeviceActivityEvent& activity);
};

// Names of the columns of `table`, in order (docs/python.md).
TableColumns emptyTable(Table table);

}  // namespace gapwatch::python
