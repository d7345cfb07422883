// reader/kineto_host_events.cpp: see kineto_host_events.h.
#include "reader/kineto_host_events.h"

#include "reader/ordered_appends.h"

#include <algorithm>
#include <functional>

namespace gapwatch {
namespace {

struct OpName {
  std::string_view name;
  v1::NcclOp op;
};

// c10d's names, as ProcessGroupNCCL passes them to RECORD_PARAM_COMMS and as the nccl:*
// annotations spell them (after a leading '_' is taken off). Variants that only differ in where
// the output goes (_base, _oop, into_tensor, _coalesced of one kind) are the same NCCL operation.
constexpr OpName kOps[] = {
    {"allreduce", v1::NCCL_OP_ALL_REDUCE},
    {"all_reduce", v1::NCCL_OP_ALL_REDUCE},
    {"allreduce_coalesced", v1::NCCL_OP_ALL_REDUCE},
    {"all_reduce_coalesced", v1::NCCL_OP_ALL_REDUCE},
    {"broadcast", v1::NCCL_OP_BROADCAST},
    {"broadcast_oop", v1::NCCL_OP_BROADCAST},
    {"reduce", v1::NCCL_OP_REDUCE},
    {"reduce_oop", v1::NCCL_OP_REDUCE},
    {"allgather", v1::NCCL_OP_ALL_GATHER},
    {"all_gather", v1::NCCL_OP_ALL_GATHER},
    {"allgather_base", v1::NCCL_OP_ALL_GATHER},
    {"all_gather_base", v1::NCCL_OP_ALL_GATHER},
    {"allgather_coalesced", v1::NCCL_OP_ALL_GATHER},
    {"allgather_into_tensor_coalesced", v1::NCCL_OP_ALL_GATHER},
    {"all_gather_into_tensor", v1::NCCL_OP_ALL_GATHER},
    {"all_gather_into_tensor_coalesced", v1::NCCL_OP_ALL_GATHER},
    {"reduce_scatter", v1::NCCL_OP_REDUCE_SCATTER},
    {"reduce_scatter_base", v1::NCCL_OP_REDUCE_SCATTER},
    {"reduce_scatter_tensor", v1::NCCL_OP_REDUCE_SCATTER},
    {"reduce_scatter_tensor_coalesced", v1::NCCL_OP_REDUCE_SCATTER},
    {"all_to_all", v1::NCCL_OP_ALL_TO_ALL},
    {"all_to_allv", v1::NCCL_OP_ALL_TO_ALL},
    {"alltoall", v1::NCCL_OP_ALL_TO_ALL},
    {"alltoall_base", v1::NCCL_OP_ALL_TO_ALL},
    {"send", v1::NCCL_OP_SEND},
    {"recv", v1::NCCL_OP_RECV},
    {"recv_anysource", v1::NCCL_OP_RECV},
    {"gather", v1::NCCL_OP_GATHER},
    {"scatter", v1::NCCL_OP_SCATTER},
};

std::optional<v1::NcclOp> opOfName(std::string_view name) {
  if (!name.empty() && name.front() == '_') name.remove_prefix(1);
  for (const OpName& entry : kOps) {
    if (entry.name == name) return entry.op;
  }
  return std::nullopt;
}

struct DtypeName {
  std::string_view name;
  KinetoDtype dtype;
};

// c10 ScalarType names (c10/core/ScalarType.h's spelling, which record_param_comms writes), with
// the NCCL type c10d sends them as (bool as uint8).
constexpr DtypeName kDtypes[] = {
    {"Float", {v1::NCCL_DATA_TYPE_FLOAT32, 4}},
    {"Double", {v1::NCCL_DATA_TYPE_FLOAT64, 8}},
    {"Half", {v1::NCCL_DATA_TYPE_FLOAT16, 2}},
    {"BFloat16", {v1::NCCL_DATA_TYPE_BFLOAT16, 2}},
    {"Long", {v1::NCCL_DATA_TYPE_INT64, 8}},
    {"Int", {v1::NCCL_DATA_TYPE_INT32, 4}},
    {"Short", {v1::NCCL_DATA_TYPE_UNSPECIFIED, 2}},
    {"Char", {v1::NCCL_DATA_TYPE_INT8, 1}},
    {"Byte", {v1::NCCL_DATA_TYPE_UINT8, 1}},
    {"Bool", {v1::NCCL_DATA_TYPE_UINT8, 1}},
    {"UInt16", {v1::NCCL_DATA_TYPE_UNSPECIFIED, 2}},
    {"UInt32", {v1::NCCL_DATA_TYPE_UINT32, 4}},
    {"UInt64", {v1::NCCL_DATA_TYPE_UINT64, 8}},
    {"Float8_e4m3fn", {v1::NCCL_DATA_TYPE_FLOAT8_E4M3, 1}},
    {"Float8_e5m2", {v1::NCCL_DATA_TYPE_FLOAT8_E5M2, 1}},
    {"ComplexHalf", {v1::NCCL_DATA_TYPE_UNSPECIFIED, 4}},
    {"ComplexFloat", {v1::NCCL_DATA_TYPE_UNSPECIFIED, 8}},
    {"ComplexDouble", {v1::NCCL_DATA_TYPE_UNSPECIFIED, 16}},
};

// A poll that starts this long after the previous one ended is not the same loop: the thread did
// something else meanwhile (a trace does not say what the poll returned, which is how the recorder
// ends a loop). Polls of one loop follow each other within 28 us in the shared train_test (8602
// polls); nccl_rank-0's watchdog thread polls once every 100 ms, which is no loop at all.
constexpr uint64_t kMaxPollGapNs = 100'000;

uint64_t nonNegative(const std::optional<int64_t>& v) { return v && *v > 0 ? static_cast<uint64_t>(*v) : 0; }

}  // namespace

bool isKinetoCommsArgKey(std::string_view key) {
  return key == "Collective name" || key == "dtype" || key == "In msg nelems" || key == "Out msg nelems" ||
         key == "Group size";
}

void noteKinetoCommsArg(KinetoCommsArgs& args, std::string_view key, std::string_view text) {
  if (key == "Collective name") args.collective.assign(text);
  else if (key == "dtype") args.dtype.assign(text);
}

void noteKinetoCommsArg(KinetoCommsArgs& args, std::string_view key, int64_t value) {
  if (key == "In msg nelems") args.in_nelems = value;
  else if (key == "Out msg nelems") args.out_nelems = value;
  else if (key == "Group size") args.group_size = value;
}

std::optional<v1::NcclOp> ncclOpOfCollectiveName(std::string_view name) { return opOfName(name); }

std::optional<v1::NcclOp> ncclOpOfAnnotation(std::string_view name) {
  constexpr std::string_view kPrefix = "nccl:";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  return opOfName(name.substr(kPrefix.size()));
}

KinetoDtype kinetoDtype(std::string_view name) {
  for (const DtypeName& entry : kDtypes) {
    if (entry.name == name) return entry.dtype;
  }
  return {};
}

void KinetoHostEvents::onRecordParamComms(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns,
                                          const KinetoCommsArgs& args) {
  ++counts_.record_param_comms;
  const auto op = ncclOpOfCollectiveName(args.collective);
  if (!op) return;
  NcclCallEvent call;
  call.op = *op;
  call.thread_id = thread_id;
  call.start_ns = start_ns;
  call.end_ns = end_ns;
  call.nranks = args.group_size && *args.group_size > 0 && *args.group_size <= INT32_MAX
                    ? static_cast<int32_t>(*args.group_size)
                    : 0;
  const KinetoDtype dtype = kinetoDtype(args.dtype);
  call.data_type = dtype.type;
  // Count as NCCL takes it (events.proto): the receive count for reduce_scatter, per peer for
  // all_to_all; bytes are what this rank contributes (per peer for all_to_all).
  const uint64_t in = nonNegative(args.in_nelems);
  uint64_t contributed = in;
  if (*op == v1::NCCL_OP_REDUCE_SCATTER) {
    call.count = nonNegative(args.out_nelems);
  } else if (*op == v1::NCCL_OP_ALL_TO_ALL && call.nranks > 0) {
    call.count = in / static_cast<uint64_t>(call.nranks);
    contributed = call.count;
  } else {
    call.count = in;
  }
  call.bytes = contributed * dtype.size;
  ++counts_.comms_calls;
  comms_calls_.push_back(call);
}

bool KinetoHostEvents::onUserAnnotation(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns, std::string_view name) {
  const auto op = ncclOpOfAnnotation(name);
  if (!op) return false;
  ++counts_.nccl_annotations;
  NcclCallEvent call;
  call.op = *op;
  call.thread_id = thread_id;
  call.start_ns = start_ns;
  call.end_ns = end_ns;
  annotation_calls_.push_back(call);
  return true;
}

void KinetoHostEvents::onApiCall(const ApiCallEvent& call, std::vector<ApiCallEvent>& out) {
  const auto pending = pending_polls_.find(call.thread_id);
  const bool poll = call.kind == v1::API_KIND_QUERY;
  if (pending != pending_polls_.end()) {
    ApiCallEvent& run = pending->second;
    if (poll && call.api_name_id == run.api_name_id && call.start_ns >= run.end_ns &&
        call.start_ns - run.end_ns <= kMaxPollGapNs) {
      run.end_ns = std::max(run.end_ns, call.end_ns);
      ++run.bytes;
      ++counts_.polls;
      return;
    }
    out.push_back(run);
    ++counts_.poll_runs;
    pending_polls_.erase(pending);
  }
  if (!poll) {
    out.push_back(call);
    return;
  }
  ++counts_.polls;
  ApiCallEvent run = call;
  run.bytes = 1;
  run.return_code = 0;
  pending_polls_.emplace(call.thread_id, run);
}

void KinetoHostEvents::flushPolls(std::vector<ApiCallEvent>& out) {
  for (const auto& [thread, run] : pending_polls_) {
    out.push_back(run);
    ++counts_.poll_runs;
  }
  pending_polls_.clear();
}

std::vector<NcclCallEvent> KinetoHostEvents::takeNcclCalls() {
  const auto by_start = [](const NcclCallEvent& a, const NcclCallEvent& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  };
  // Per thread, every comms call's range so far, by start: an annotation is inside one when the
  // last range that starts at or before it also ends at or after it (c10d's ranges of one thread
  // do not overlap). Kept across takes, so that a later annotation is checked against them all.
  // Only the threads with new ranges are put in order, and only from where the new ones go.
  const auto less = std::less<std::pair<uint64_t, uint64_t>>();
  for (const NcclCallEvent& c : comms_calls_) {
    ThreadRanges& thread = comms_ranges_[c.thread_id];
    thread.ranges.push_back({c.start_ns, c.end_ns});
    noteAppended(thread.ranges, thread.in_order, less);
  }
  for (const NcclCallEvent& c : comms_calls_) {
    ThreadRanges& thread = comms_ranges_[c.thread_id];
    counts_.comms_ranges_reordered += putInOrder(thread.ranges, thread.in_order, less);
  }
  std::vector<NcclCallEvent> calls = std::move(comms_calls_);
  for (const NcclCallEvent& a : annotation_calls_) {
    bool inside = false;
    if (const auto it = comms_ranges_.find(a.thread_id); it != comms_ranges_.end()) {
      const auto& ranges = it->second.ranges;
      const auto after = std::upper_bound(ranges.begin(), ranges.end(), std::pair{a.start_ns, UINT64_MAX});
      inside = after != ranges.begin() && (after - 1)->second >= a.end_ns;
    }
    if (inside) continue;
    ++counts_.annotation_calls;
    calls.push_back(a);
  }
  // What this take hands over only (the calls since the last take), not what came before.
  std::stable_sort(calls.begin(), calls.end(), by_start);
  comms_calls_.clear();
  annotation_calls_.clear();
  return calls;
}

}  // namespace gapwatch
