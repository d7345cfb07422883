// python/table_rows.cpp: see table_rows.h.
#include "python/table_rows.h"

#include "analysis/device_idle.h"
#include "analysis/step_detector.h"
#include "analysis/sync_points.h"

#include <algorithm>

namespace gapwatch::python {

namespace {

using Type = Column::Type;

// The columns of each table, in order; TableRowsStage fills them by these positions.
constexpr const char* kGapHostParts[] = {"input_pipeline", "framework", "other", "unknown"};
// process, device, start_ns, end_ns, ns, cause, the causes, the host parts, after_sync, then after.
constexpr std::size_t kGapAfterColumn = 6 + analysis::kIdleCauseCount + analysis::kHostPartCount + 1;

}  // namespace

Column& TableColumns::add(std::string name, Column::Type type) {
  columns.push_back(Column{std::move(name), type, {}, {}});
  return columns.back();
}

TableColumns emptyTable(Table table) {
  TableColumns t;
  t.add("process", Type::kUnsigned);
  switch (table) {
    case Table::kGaps:
      t.add("device", Type::kUnsigned);
      t.add("start_ns", Type::kUnsigned);
      t.add("end_ns", Type::kUnsigned);
      t.add("ns", Type::kUnsigned);
      t.add("cause", Type::kText);  // the cause with the most of the gap's time
      for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
        t.add(std::string(analysis::idleCauseName(static_cast<analysis::IdleCause>(c))) + "_ns", Type::kUnsigned);
      }
      for (const char* part : kGapHostParts) t.add(std::string("host_") + part + "_ns", Type::kUnsigned);
      t.add("after_sync", Type::kBool);
      t.add("after", Type::kText);  // the work that ended the gap: a kernel's name, "memcpy", "memset"
      t.add("after_correlation_id", Type::kUnsigned);  // joins the kernels table and the launch
      break;
    case Table::kSyncPoints:
      t.add("type", Type::kText);
      t.add("api", Type::kText);
      t.add("thread_id", Type::kUnsigned);
      t.add("start_ns", Type::kUnsigned);
      t.add("end_ns", Type::kUnsigned);
      t.add("ns", Type::kUnsigned);
      t.add("bytes", Type::kUnsigned);
      t.add("site", Type::kText);
      break;
    case Table::kKernels:
      t.add("device", Type::kUnsigned);
      t.add("stream", Type::kUnsigned);
      t.add("name", Type::kText);
      t.add("start_ns", Type::kUnsigned);
      t.add("end_ns", Type::kUnsigned);
      t.add("ns", Type::kUnsigned);
      t.add("correlation_id", Type::kUnsigned);
      break;
    case Table::kSteps:
      t.add("step", Type::kUnsigned);  // 1, 2, ... in each process
      t.add("start_ns", Type::kUnsigned);
      t.add("end_ns", Type::kUnsigned);
      t.add("ns", Type::kUnsigned);
      t.add("detected", Type::kBool);  // found in the kernels or sync points, not marked
      break;
  }
  return t;
}

TableRowsStage::TableRowsStage(Table table, uint32_t process, TableColumns& out)
    : table_(table), process_(process), out_(out) {}

TableRowsStage& TableRowsStage::attach(analysis::AnalysisPipeline& pipeline, Table table, uint32_t process,
                                       TableColumns& out) {
  auto& stage = pipeline.emplaceStage<TableRowsStage>(table, process, out);
  if (table == Table::kGaps) {
    if (auto* idle = pipeline.findStage<analysis::DeviceIdleStage>()) {
      idle->setGapListener([&stage](uint32_t device, const analysis::IdleGap& gap) { stage.onGap(device, gap); });
    }
  }
  if (table == Table::kSteps) {
    if (auto* steps = pipeline.findStage<analysis::StepDetectorStage>()) {
      steps->setStepListener(
          [&stage](bool detected, uint64_t start_ns, uint64_t end_ns) { stage.onStep(detected, start_ns, end_ns); });
    }
  }
  return stage;
}

void TableRowsStage::addRow() {
  col(0).numbers.push_back(process_);
  ++out_.rows;
}

void TableRowsStage::onGap(uint32_t device, const analysis::IdleGap& gap) {
  std::size_t top = 0;
  for (std::size_t c = 1; c < analysis::kIdleCauseCount; ++c) {
    if (gap.by_cause_ns[c] > gap.by_cause_ns[top]) top = c;
  }
  addRow();
  std::size_t i = 1;
  col(i++).numbers.push_back(device);
  col(i++).numbers.push_back(gap.start_ns);
  col(i++).numbers.push_back(gap.end_ns);
  col(i++).numbers.push_back(gap.end_ns - gap.start_ns);
  col(i++).texts.emplace_back(analysis::idleCauseName(static_cast<analysis::IdleCause>(top)));
  for (uint64_t ns : gap.by_cause_ns) col(i++).numbers.push_back(ns);
  for (uint64_t ns : gap.host_by_part_ns) col(i++).numbers.push_back(ns);
  col(i++).numbers.push_back(gap.after_sync ? 1 : 0);
  // The engine names a gap's neighbours only for the gaps it keeps (the longest), so the work
  // that ended it is taken here: it is the activity being released now, which this stage, after
  // the device idle stage, hears next.
  col(i++).texts.emplace_back();
  col(i++).numbers.push_back(0);
  pending_gaps_.push_back({out_.rows - 1, device, gap.end_ns});
}

void TableRowsStage::nameGapEnds(const DeviceActivityEvent& activity) {
  for (const PendingGap& pending : pending_gaps_) {
    if (pending.device != activity.device || pending.end_ns != activity.start_ns) continue;
    std::string name;
    switch (activity.kind) {
      case v1::ACTIVITY_KIND_KERNEL:
        name = activity.name_id == 0 ? "(unnamed kernel)"
                                     : (strings_ ? strings_->display(v1::STRING_KIND_KERNEL_NAME, activity.name_id) : "");
        break;
      case v1::ACTIVITY_KIND_MEMCPY: name = "memcpy"; break;
      case v1::ACTIVITY_KIND_MEMSET: name = "memset"; break;
      default: break;
    }
    out_.columns[kGapAfterColumn].texts[pending.row] = std::move(name);
    out_.columns[kGapAfterColumn + 1].numbers[pending.row] = activity.correlation_id;
  }
  pending_gaps_.clear();
}

void TableRowsStage::onApiCall(const ApiCallEvent& call) {
  if (table_ != Table::kSyncPoints) return;
  // One row per call that waited; a polling loop is many calls, and the report counts it once
  // (query_polling): its polls are not rows.
  const auto kind = classifySyncPoint(call);
  if (!kind) return;
  addRow();
  std::size_t i = 1;
  col(i++).texts.emplace_back(syncPointKey(*kind));
  col(i++).texts.push_back(strings_ ? strings_->display(v1::STRING_KIND_API_NAME, call.api_name_id) : "");
  col(i++).numbers.push_back(call.thread_id);
  col(i++).numbers.push_back(call.start_ns);
  col(i++).numbers.push_back(call.end_ns);
  col(i++).numbers.push_back(call.end_ns - std::min(call.start_ns, call.end_ns));
  col(i++).numbers.push_back(call.bytes);
  col(i++).texts.push_back(siteName(siteKey(call), strings_));
}

void TableRowsStage::onActivity(const DeviceActivityEvent& activity) {
  if (!pending_gaps_.empty()) nameGapEnds(activity);
  if (table_ != Table::kKernels || activity.kind != v1::ACTIVITY_KIND_KERNEL) return;
  addRow();
  std::size_t i = 1;
  col(i++).numbers.push_back(activity.device);
  col(i++).numbers.push_back(activity.stream);
  col(i++).texts.push_back(strings_ ? strings_->display(v1::STRING_KIND_KERNEL_NAME, activity.name_id) : "");
  col(i++).numbers.push_back(activity.start_ns);
  col(i++).numbers.push_back(activity.end_ns);
  col(i++).numbers.push_back(activity.end_ns - std::min(activity.start_ns, activity.end_ns));
  col(i++).numbers.push_back(activity.correlation_id);
}

void TableRowsStage::onStep(bool detected, uint64_t start_ns, uint64_t end_ns) {
  std::vector<StepRow>& steps = detected ? detected_steps_ : marked_steps_;
  // A stretch the detector learnt again may repeat steps already heard: each is kept once.
  if (!steps.empty() && start_ns < steps.back().end_ns) return;
  steps.push_back({start_ns, end_ns});
}

void TableRowsStage::finish() {
  if (table_ != Table::kSteps) return;
  const bool marked = !marked_steps_.empty();
  const std::vector<StepRow>& steps = marked ? marked_steps_ : detected_steps_;
  uint64_t number = 1;
  for (const StepRow& s : steps) {
    addRow();
    std::size_t i = 1;
    col(i++).numbers.push_back(number++);
    col(i++).numbers.push_back(s.start_ns);
    col(i++).numbers.push_back(s.end_ns);
    col(i++).numbers.push_back(s.end_ns - s.start_ns);
    col(i++).numbers.push_back(marked ? 0 : 1);
  }
}

}  // namespace gapwatch::python
