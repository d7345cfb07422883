// reader/kineto_trace.h: reads a PyTorch profiler (Kineto) trace into gapwatch's events.
//
// A Kineto trace is a Chrome-trace JSON object with a "traceEvents" array, plain or gzipped
// (recognised by content: the gzip magic 1f 8b, else a JSON object). The reader synthesises what a
// recording would have held and hands it to a RecordingVisitor exactly as StreamDecoder does:
// one v1::Hello (the CPU pid, host "", rank and world size from distributedInfo, probes
// {CUPTI_ACTIVITY}: Kineto takes its host calls from CUPTI activity records), then DecodedBatches
// (string definitions in the batch that first needs them; thread names, which the trace gives at
// its end, redefined when they come), then a Goodbye. So ProcessAnalyser and the
// rest of the analysis run on it unchanged. docs/design/kineto-import.md is the design.
//
// Mapping:
//   kernel, gpu_memcpy, gpu_memset  -> DeviceActivityEvent KERNEL/MEMCPY/MEMSET: device = pid,
//                                      stream = args.stream (else tid), correlation = args.correlation;
//                                      copy direction and memory kinds from the name
//                                      ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)")
//   cuda_sync                       -> DeviceActivityEvent SYNC, SyncKind from args.cuda_sync_kind
//                                      (else the name)
//   cuda_runtime, cuda_driver       -> ApiCallEvent, kind from the name (cudaLaunchKernel -> LAUNCH,
//                                      ...), domain RUNTIME/DRIVER, cbid from args.cbid
//   user_annotation ProfilerStep#N  -> MarkerEvent STEP_BEGIN at ts and STEP_END at ts + dur
//   cpu_op record_param_comms,      -> NcclCallEvent, c10d's range (kineto_host_events.h)
//   user_annotation nccl:*
//   cudaEventQuery / cudaStreamQuery-> a thread's consecutive polls merged into one QUERY call
//                                      with the number of polls in bytes (kineto_host_events.h)
//   python_function (with_stack)    -> the call site of each runtime call: the innermost Python
//                                      range around it on its thread (kineto_call_sites.h)
//   cpu_op, user_annotation (other  -> HostRangeEvent: what the host thread was doing, the
//   than steps and nccl:*), data-      evidence that splits host time (kineto_host_ranges.h)
//   loading python_function
//   M thread_name                   -> thread names
//   everything else (flows, gpu_user_annotation, instants) is skipped.
// Hello: source STREAM_SOURCE_KINETO_TRACE, clock CLOCK_DOMAIN_KINETO_US, the trace's schemaVersion
// and traceName. Goodbye: exit reason UNSPECIFIED (the trace ends with the profiler's window).
// Times: ts and dur are microseconds, parsed from their text as decimal fixed point to integer
// nanoseconds exactly ("4458676522690.655" -> 4458676522690655 ns). Times stay as the trace has
// them (relative to baseTimeNanoseconds when it is there, else Unix-epoch microseconds);
// Hello.start_unix_ns is baseTimeNanoseconds plus the first event's time. Thread ids (which can
// be negative: a pthread id cut to int32) are mapped to dense ids from 1.
//
// Reading streams (docs/design/kineto-import.md section 4): the bytes are inflated in blocks
// (reader/gzip_source.h), reader/json_splitter.h cuts traceEvents into whole elements, and
// simdjson On-Demand parses them about 1 MiB at a time. Every used event is checked and kept as a
// PendingEvent, and only once the whole trace is read are they mapped and handed over, in one
// time order whatever the file's (reader/kineto_event_sorter.h: at most 524,288 in memory, sorted
// runs in a temporary file beyond). Device-block events go in batches that each span at most 1 s;
// CPU-side events (ProfilerStep markers, host ranges, c10d's NCCL ranges) are held by the feed and
// handed over in front of the first batch that reaches their time. So memory is the blocks, one
// parse batch, the sort's events and one handed-over batch, whatever the trace's size
// (KinetoCounts.max_sort_held, max_held_events, max_buffered_bytes).
// Speed: simdjson's stage 1 (the SIMD pass that indexes a batch) is picked at run time by
// libsimdjson (get_active_implementation(): icelake, haswell, westmere or fallback), so the build
// needs no -march. On-Demand's compile-time "builtin" implementation (fallback without -mavx2)
// covers only the walk over that index; built for haswell it measured no faster on train_control,
// so it is not compiled per instruction set (which would risk AVX2 copies of shared inline code).
//
// Known limits (docs/usage.md, "Reading PyTorch profiler traces"):
//   - events in any order: every used event is read, checked and put in time order before any
//     is handed over (kineto_event_sorter.h: bounded memory, sorted runs on disk for large
//     traces), so none comes late, and the metadata after traceEvents (distributedInfo,
//     baseTimeNanoseconds: nccl_rank-0 has it last) is known when the Hello goes out, in one pass.
//   - one traceEvents element over 64 MiB, or nested over 64 levels, is refused; so is a parsed
//     top-level value (distributedInfo, baseTimeNanoseconds) over 16 MiB.
// Errors: a malformed trace (not gzip or JSON, truncated, a gzip stream cut short, wrong types, no
// traceEvents, a used event without ts, trailing data) is refused with one line giving the
// element's index or the byte offset in the (inflated) JSON. Parts of the trace may have been
// handed to the visitor by then; the result's summary.frames is 0 so that nothing is shown. Never
// throws for anything the bytes contain. Messages never name the file.
#pragma once

#include "reader/byte_source.h"
#include "reader/kineto_host_events.h"
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"
#include "reader/string_table.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace gapwatch {

// Whether these first bytes of a file are a Kineto trace's: the gzip magic, or (after whitespace)
// '{'. A .gwt recording starts with its own magic, so never matches.
bool looksLikeKinetoTrace(std::span<const uint8_t> first_bytes);
// The same for the file at `path`; false when it cannot be read (the recording reader then says why).
bool fileLooksLikeKinetoTrace(const std::string& path);

// What the trace held, per kind of event handed over (for tests and the report).
struct KinetoCounts {
  uint64_t trace_events = 0;  // elements of traceEvents
  uint64_t kernels = 0;
  uint64_t memcpys = 0;
  uint64_t memsets = 0;
  uint64_t syncs = 0;         // cuda_sync records
  uint64_t api_calls = 0;     // cuda_runtime + cuda_driver
  uint64_t launches = 0;      // api calls of kind LAUNCH
  uint64_t steps = 0;         // ProfilerStep#N annotations
  // What reading held (for tests: it must not grow with the trace).
  uint64_t max_held_events = 0;     // events held by the reader at once (held steps + one batch)
  // Host ranges (kineto_host_ranges.h): kept, dropped as nested in an op, and held at most at once
  // (these grow with the trace's CPU side: the outermost ops of each thread, 32 bytes each).
  uint64_t host_ranges = 0, nested_ops = 0, max_held_host_ranges = 0;
  uint64_t host_ranges_unreadable = 0;  // ops and annotations left out: no ts, or a ts or dur not a number
  uint64_t max_buffered_bytes = 0;  // the splitter's buffer at its largest
  // Held CPU-side events and Python ranges sorted or merged into order (reader/ordered_appends.h):
  // 0 for a trace whose CPU side is written in time order, however long.
  uint64_t held_reordered = 0;
  KinetoHostCounts host;            // NCCL calls from c10d's ranges, merged polls (kineto_host_events.h)
  // The used events put in time order (kineto_event_sorter.h), the sorted runs written to a
  // temporary file for that (0 when they fit in memory), and the most held in memory at once.
  uint64_t sorted_events = 0, sort_runs_spilled = 0, max_sort_held = 0;
};

struct KinetoReadOptions {
  // Used events held in memory while the trace is put in time order; beyond that they go to a
  // temporary file in sorted runs (kineto_event_sorter.h). Tests make it small.
  std::size_t sort_max_in_memory = std::size_t{1} << 19;
};

struct KinetoReadResult {
  ReadResult read;      // summary.frames = batches handed over (0 on an error)
  StreamHealth health;  // as a decoder would have reported it (Hello, Goodbye, batches)
  KinetoCounts counts;
  // The string table handed to the visitor with every batch. A visitor may keep a pointer to it
  // (AnalysisPipeline does, until ProcessAnalyser::finish), so it lives as long as this result,
  // as a StreamDecoder's table lives as long as the decoder.
  std::shared_ptr<const StringTable> strings;
};

// Reads a whole trace from `source` and hands it to `visitor` as it goes.
KinetoReadResult readKinetoTrace(ByteSource& source, RecordingVisitor& visitor, const KinetoReadOptions& options);
// The same, with the default options.
KinetoReadResult readKinetoTrace(ByteSource& source, RecordingVisitor& visitor);
// The same, from the file at `path`.
KinetoReadResult readKinetoTraceFile(const std::string& path, RecordingVisitor& visitor);
KinetoReadResult readKinetoTraceFile(const std::string& path, RecordingVisitor& visitor, KinetoReadOptions options);

}  // namespace gapwatch
