// reader/kineto_trace.h: reads a PyTorch profiler (Kineto) trace into gapwatch's events.
//
// A Kineto trace is a Chrome-trace JSON object with a "traceEvents" array, plain or gzipped
// (recognised by content: the gzip magic 1f 8b, else a JSON object). The reader synthesises what a
// recording would have held and hands it to a RecordingVisitor exactly as StreamDecoder does:
// one v1::Hello (the CPU pid, host "", rank and world size from distributedInfo, probes
// {CUPTI_ACTIVITY}: Kineto takes its host calls from CUPTI activity records), then DecodedBatches
// in time order (string definitions in the first), then a Goodbye. So ProcessAnalyser and the
// rest of the analysis run on it unchanged. docs/design/kineto-import.md is the design.
//
// Mapping (first slice):
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
//   M thread_name                   -> thread names
//   everything else (other cpu_ops, flows, gpu_user_annotation, python_function, instants) is skipped.
// Hello: source STREAM_SOURCE_KINETO_TRACE, clock CLOCK_DOMAIN_KINETO_US, the trace's schemaVersion
// and traceName. Goodbye: exit reason UNSPECIFIED (the trace ends with the profiler's window).
// Times: ts and dur are microseconds, parsed from their text as decimal fixed point to integer
// nanoseconds exactly ("4458676522690.655" -> 4458676522690655 ns). Times stay as the trace has
// them (relative to baseTimeNanoseconds when it is there, else Unix-epoch microseconds);
// Hello.start_unix_ns is baseTimeNanoseconds plus the first event's time. Thread ids (which can
// be negative: a pthread id cut to int32) are mapped to dense ids from 1.
//
// Known limits of this first slice (docs/usage.md, "Reading PyTorch profiler traces"):
//   - memory is proportional to the trace: the whole (inflated) file is held, parsed with
//     simdjson On-Demand, and every used event is held so that they can be handed over sorted by
//     start time (the file holds the CPU block first, then the device block, spanning more than
//     the analysis's 2 s reorder window). Inflated input over kMaxKinetoTraceBytes is refused.
// Errors: a malformed trace (not gzip or JSON, truncated, wrong types, no traceEvents, a used event
// without ts) is refused with one line and nothing is handed to the visitor. Never throws for
// anything the bytes contain. Messages never name the file.
#pragma once

#include "reader/byte_source.h"
#include "reader/kineto_host_events.h"
#include "reader/recording_reader.h"
#include "reader/stream_decoder.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace gapwatch {

// The largest inflated trace read (simdjson's own limit is 4 GiB per document).
inline constexpr uint64_t kMaxKinetoTraceBytes = uint64_t{2} << 30;

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
  KinetoHostCounts host;      // NCCL calls from c10d's ranges, merged polls (kineto_host_events.h)
};

struct KinetoReadResult {
  ReadResult read;      // summary.frames = batches handed over (0 on an error)
  StreamHealth health;  // as a decoder would have reported it (Hello, Goodbye, batches)
  KinetoCounts counts;
  // The names the batches defined. The visitor was handed this table and may keep a pointer to it
  // (the analysis stages resolve names when they finish), so it lives on the heap, as long as
  // this result does: keep the result until the visitor is done.
  std::unique_ptr<StringTable> strings = std::make_unique<StringTable>();
};

// Reads a whole trace from `source` and hands it to `visitor` (only when it is well formed).
KinetoReadResult readKinetoTrace(ByteSource& source, RecordingVisitor& visitor);
// The same, from the file at `path`.
KinetoReadResult readKinetoTraceFile(const std::string& path, RecordingVisitor& visitor);

}  // namespace gapwatch
