// reader/kineto_host_events.h: the host-side events of a PyTorch profiler (Kineto) trace that need
// more than a one-to-one mapping: NCCL host calls from c10d's ranges, and polling loops.
//
// kineto_trace.cpp hands each event it maps to KinetoHostEvents, which keeps what it needs and
// gives back what the rest of the import should see:
//
// NCCL host calls. A trace has no ncclAllReduce call: CUPTI does not record NCCL, and Kineto only
// records c10d's view of a collective. Two kinds of range carry it:
//   - `cpu_op` `record_param_comms` (PyTorch 2.x): args "Collective name", "In msg nelems",
//     "Out msg nelems", "dtype", "Group size". Each one whose collective name is a collective or a
//     point-to-point transfer becomes an NcclCallEvent over the range: op from the name, count
//     and bytes (count x the dtype's size) from the message sizes, nranks = Group size. Names that
//     are not an NCCL operation of their own are left out: "wait" (Work.wait(), the host waiting
//     on the stream), "barrier" (c10d runs it as an allreduce, recorded on its own), "coalesced"
//     (the end of a coalescing group, whose operations are recorded one by one), "init", "split"
//     and any name not listed in kineto_host_events.cpp. A record_param_comms without args (older
//     PyTorch, as in train_*) names nothing and is left out too.
//   - `user_annotation` `nccl:<op>` (c10d's RECORD_FUNCTION around the collective, every PyTorch
//     with the profiler): an NcclCallEvent over the range, op from the text after "nccl:"
//     ("all_reduce", "_all_gather_base", ...), with no size (bytes and count 0: the annotation
//     carries none). One that lies inside a record_param_comms range that became a call, on the
//     same thread, is the same collective seen twice and is dropped.
//   Both are c10d's ranges around the NCCL call (the NCCL call and c10d's bookkeeping), so the
//   report labels their time "c10d range", never NCCL's own host time.
//
// Polling loops. The recorder writes a thread's run of cudaEventQuery / cudaStreamQuery polls as
// one QUERY call, first entry to last exit, with the number of polls in `bytes`
// (events.proto, API_KIND_QUERY); a trace lists every poll (8602 in train_test). onApiCall()
// merges a thread's consecutive polls of the same API (no other call of that thread between
// them) the same way, holding one pending run per thread. A trace does not record which event or
// stream a poll asked about, nor what it returned, so a run ends at the thread's next other call,
// at a poll of the other API, at a poll that starts more than 100 us after the run's last one
// ended (the thread did something else meanwhile), or at one that starts before it ended (the
// trace's per-thread order went back: a CUPTI buffer boundary); its return code is 0, the poll
// that saw the work done.
#pragma once

#include "reader/events.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gapwatch {

// The args of a record_param_comms cpu_op that the import uses, as found.
struct KinetoCommsArgs {
  std::string collective;  // "Collective name"
  std::string dtype;       // "dtype": a c10 ScalarType name ("Float", "BFloat16", "Long")
  std::optional<int64_t> in_nelems, out_nelems, group_size;
};

// Whether `key` is one of the args KinetoCommsArgs holds.
bool isKinetoCommsArgKey(std::string_view key);
// Keeps a string value (Collective name, dtype) or an integer value (the sizes) of such a key;
// a value of the other type is ignored.
void noteKinetoCommsArg(KinetoCommsArgs& args, std::string_view key, std::string_view text);
void noteKinetoCommsArg(KinetoCommsArgs& args, std::string_view key, int64_t value);

// The NCCL operation of a record_param_comms "Collective name"; nullopt when the name is not an
// NCCL operation of its own ("wait", "barrier", "coalesced", unknown names).
std::optional<v1::NcclOp> ncclOpOfCollectiveName(std::string_view name);
// The NCCL operation of an annotation "nccl:<op>"; nullopt when it is not one.
std::optional<v1::NcclOp> ncclOpOfAnnotation(std::string_view name);

// A c10 ScalarType name as NCCL's element type and its size in bytes (type UNSPECIFIED where
// NCCL has none, e.g. "Short"; size 0 for an unknown name).
struct KinetoDtype {
  v1::NcclDataType type = v1::NCCL_DATA_TYPE_UNSPECIFIED;
  uint32_t size = 0;
};
KinetoDtype kinetoDtype(std::string_view name);

struct KinetoHostCounts {
  uint64_t record_param_comms = 0;  // record_param_comms cpu_ops seen
  uint64_t comms_calls = 0;         // of them, NCCL calls
  uint64_t nccl_annotations = 0;    // nccl:* annotations seen
  uint64_t annotation_calls = 0;    // of them, NCCL calls (not inside a record_param_comms call)
  uint64_t polls = 0;               // query calls seen
  uint64_t poll_runs = 0;           // QUERY calls handed on, each a run of polls
  uint64_t comms_ranges_reordered = 0;  // ranges sorted or merged into order (0 for a trace in order)
};

class KinetoHostEvents {
 public:
  // A record_param_comms cpu_op on `thread_id`, [start_ns, end_ns).
  void onRecordParamComms(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns, const KinetoCommsArgs& args);
  // A user_annotation; false (and nothing kept) when it is not an nccl:* range.
  bool onUserAnnotation(uint32_t thread_id, uint64_t start_ns, uint64_t end_ns, std::string_view name);

  // A CUDA runtime or driver call, in its thread's order; what the import should hand on now is
  // appended to `out` (nothing while a poll run is held, the ended run before the call after it).
  void onApiCall(const ApiCallEvent& call, std::vector<ApiCallEvent>& out);
  // At the end of the trace: the poll runs still held.
  void flushPolls(std::vector<ApiCallEvent>& out);
  // The NCCL calls held so far, by start time (annotations inside a record_param_comms call of
  // their thread dropped); may be called more than once (a streaming parser: when the device block
  // begins, and at the end), each time handing over what came since. An annotation is checked
  // against the record_param_comms calls seen before the take that hands it over. Memory: the
  // trace's collectives, a few per step.
  std::vector<NcclCallEvent> takeNcclCalls();

  const KinetoHostCounts& counts() const { return counts_; }

 private:
  std::vector<NcclCallEvent> comms_calls_;
  std::vector<NcclCallEvent> annotation_calls_;
  // Per thread: the [start, end) of every record_param_comms call so far, in order (the first
  // in_order of them: reader/ordered_appends.h).
  struct ThreadRanges {
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    std::size_t in_order = 0;
  };
  std::unordered_map<uint32_t, ThreadRanges> comms_ranges_;
  std::unordered_map<uint32_t, ApiCallEvent> pending_polls_;  // per thread: the run being merged
  KinetoHostCounts counts_;
};

}  // namespace gapwatch
