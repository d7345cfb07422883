// collector/metrics_exposition.h: the collector's status as a Prometheus text exposition (format
// 0.0.4), what `gapwatch collector --metrics` serves on /metrics (docs/collector.md, "Metrics").
//
// A pure function of a CollectorStatus, so that what Prometheus sees can be checked without a
// server. Every series carries the process's labels rank ("" without one), pid, host and file
// (the recording's name: a process that exec()s reconnects with the same pid, rank and host), and
// device where the number is a device's. Families (all prefixed gapwatch_, units in the names):
// idle, busy and window seconds per device, the gap-length histogram per device, sync points and
// their blocked seconds by type, launches, NCCL communication and host seconds, events, drops,
// steps and the median step time, whether the process runs, and how many processes there are.
//
// Exact numbers: every time is an integer of nanoseconds, printed as its exact decimal in seconds
// ("12.000345678": the integer part, then the nanoseconds to nine digits, trailing zeros left
// out), never through a double. Prometheus reads that into the double nearest to it, which turns
// back into the same nanoseconds (x 1e9, rounded) for any time under 2^51 ns (26 days).
//
// The histogram's buckets are gapwatch's log2 buckets (analysis/gap_histogram.h), which are
// half-open, [lo, hi). Prometheus's `le` is inclusive, and gaps are whole nanoseconds, so a
// bucket's bound is hi - 1 ns: le="0.000001999" counts the gaps shorter than 2 us, exactly what
// gapwatch's buckets up to [1, 2) us hold. The last bucket, [1 s, infinity), is le="+Inf".
#pragma once

#include "collector/collector_status.h"

#include <cstdint>
#include <string>

namespace gapwatch::collector {

inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string metricsExposition(const CollectorStatus& status);

// Nanoseconds as the exact decimal of seconds: 1500000000 -> "1.5", 7 -> "0.000000007", 0 -> "0".
std::string secondsText(uint64_t ns);
// A label value as the format wants it: backslash, double quote and newline escaped, and bytes
// that are not UTF-8 replaced by U+FFFD (a host name comes from the stream; one bad byte would
// make Prometheus reject the whole scrape).
std::string labelValue(const std::string& text);

}  // namespace gapwatch::collector
