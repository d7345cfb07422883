// tools/report_text.cpp: see report_text.h.
#include "tools/report_text.h"

#include "collector/enum_labels.h"
#include "tools/text_format.h"

#include <cmath>
#include <iomanip>
#include <string>
#include <vector>

namespace gapwatch::cli {
namespace {

// Labels of the report's first column; every line is "label   text".
constexpr int kLabelWidth = 11;
// Width of the histogram's bar at 100 % of the idle time.
constexpr int kBarWidth = 30;

std::ostream& row(std::ostream& out, const char* label) {
  return out << std::left << std::setw(kLabelWidth) << label << std::right;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return formatCount(n) + " " + (n == 1 ? one : many);
}

void printProcess(const BasicReport& r, std::ostream& out) {
  if (!r.hello) {
    row(out, "process") << "unknown (the recording has no Hello frame)\n";
    return;
  }
  const v1::Hello& h = *r.hello;
  row(out, "process") << "pid " << h.pid();
  if (!h.host().empty()) out << " on " << printable(h.host());
  if (h.has_rank()) {
    out << ", rank " << h.rank();
    if (h.has_local_rank()) out << " (local " << h.local_rank() << ")";
    if (h.has_world_size()) out << " of " << h.world_size();
  }
  out << '\n';
  if (h.command_line_size() > 0) {
    row(out, "command");
    for (int i = 0; i < h.command_line_size(); ++i) {
      out << (i > 0 ? " " : "") << printable(h.command_line(i));
    }
    out << '\n';
  }
}

std::string endingText(const BasicReport& r, const ReadSummary& read) {
  if (read.truncated) return "truncated: no Goodbye, the file ends inside a frame";
  if (!r.goodbye) return "ended early: no Goodbye (the process was killed or the connection lost)";
  const v1::Goodbye& g = *r.goodbye;
  switch (g.exit_reason()) {
    case v1::EXIT_REASON_NORMAL:
      return "ended normally (exit status " + std::to_string(g.exit_status()) + ")";
    case v1::EXIT_REASON_SIGNAL:
      return "ended by signal " + std::to_string(g.signal());
    case v1::EXIT_REASON_EXEC:
      return "ended when the process called exec";
    case v1::EXIT_REASON_STOPPED:
      return "stopped while the process ran on";
    case v1::EXIT_REASON_INTERNAL_ERROR:
      return "gapwatch stopped recording after an internal error";
    default:
      return "ended (reason " + enumLabel(g.exit_reason()) + ")";
  }
}

void printRecording(const BasicReport& r, const ReadSummary& read, std::ostream& out) {
  row(out, "recorded");
  if (r.spanNs() > 0) out << formatDuration(r.spanNs()) << ", ";
  out << endingText(r, read) << '\n';

  std::vector<std::string> problems;
  const StreamHealth& health = r.health;
  if (read.skipped_frames > 0) {
    problems.push_back(plural(read.skipped_frames, "frame", "frames") +
                       " skipped (empty, or of a kind this gapwatch does not know)");
  }
  if (health.batches_out_of_order > 0) {
    problems.push_back(plural(health.batches_out_of_order, "batch", "batches") +
                       " out of sequence");
  }
  if (health.frames_before_hello > 0) {
    problems.push_back(plural(health.frames_before_hello, "frame", "frames") + " before Hello");
  }
  if (health.extra_hellos > 0) {
    problems.push_back(plural(health.extra_hellos, "extra Hello", "extra Hellos") + " ignored");
  }
  if (health.frames_after_goodbye > 0) {
    problems.push_back(plural(health.frames_after_goodbye, "frame", "frames") + " after Goodbye");
  }
  for (const std::string& problem : problems) row(out, "stream") << problem << '\n';

  if (r.hello) {
    row(out, "probes");
    for (int i = 0; i < r.hello->probes_size(); ++i) {
      out << (i > 0 ? ", " : "") << enumLabel(r.hello->probes(i));
    }
    if (r.hello->probes_size() == 0) out << "none listed";
    out << '\n';
    if (!r.hello->cupti_unavailable().empty()) row(out, "no CUPTI") << r.hello->cupti_unavailable() << '\n';
  }

  row(out, "events") << plural(r.api_calls, "API call", "API calls") << " ("
                     << plural(r.launches, "launch", "launches") << "), "
                     << plural(r.activities, "device activity", "device activities") << ", "
                     << plural(r.nccl_calls, "NCCL call", "NCCL calls") << ", "
                     << plural(r.markers, "marker", "markers");
  if (r.steps > 0) out << " (" << plural(r.steps, "step", "steps") << ")";
  out << '\n';
}

const char* referenceText(LeadingReference reference) {
  return reference == LeadingReference::kProcessStart ? "process start" : "recording start";
}

// A bucket bound without trailing zeros: "4 us", "1.02 ms", "65.5 ms", "1 s".
std::string boundText(uint64_t ns) {
  std::string text = formatDuration(ns);
  const std::size_t space = text.find(' ');
  const std::size_t dot = text.find('.');
  if (dot == std::string::npos || space == std::string::npos || dot > space) return text;
  std::size_t keep = space;
  while (keep > dot + 1 && text[keep - 1] == '0') --keep;
  if (keep == dot + 1) keep = dot;
  return text.substr(0, keep) + text.substr(space);
}

std::string bucketLabel(std::size_t b) {
  if (b == 0) return "< " + boundText(GapHistogram::upperNs(b));
  if (b == GapHistogram::kBucketCount - 1) return ">= " + boundText(GapHistogram::lowerNs(b));
  return boundText(GapHistogram::lowerNs(b)) + " - " + boundText(GapHistogram::upperNs(b));
}

void printGapHistogram(const GapHistogram& gaps, std::ostream& out) {
  if (gaps.count() == 0) {
    out << "  no idle gaps\n";
    return;
  }
  constexpr int kLabel = 19, kCount = 10, kTime = 11, kShare = 10;
  out << "  " << std::left << std::setw(kLabel) << "idle gaps" << std::right
      << std::setw(kCount) << "count" << std::setw(kTime) << "time" << std::setw(kShare)
      << "of idle" << '\n';
  for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
    const GapHistogram::Bucket& bucket = gaps.bucket(b);
    if (bucket.count == 0) continue;
    const double share =
        static_cast<double>(bucket.total_ns) / static_cast<double>(gaps.totalNs());
    const int bar = static_cast<int>(std::lround(share * kBarWidth));
    out << "  " << std::left << std::setw(kLabel) << bucketLabel(b) << std::right
        << std::setw(kCount) << formatCount(bucket.count) << std::setw(kTime)
        << formatDuration(bucket.total_ns) << std::setw(kShare) << formatPercent(share);
    if (bar > 0) out << "  " << std::string(bar, '#');
    out << '\n';
  }
}

void printDevices(const BasicReport& r, std::ostream& out) {
  switch (r.device_coverage) {
    case DeviceCoverage::kProbeInactive:
      row(out, "device") << "not recorded: the CUPTI activity probe was not active (symbol hooks "
                            "only), so device busy and idle time are unknown; host-side numbers "
                            "only\n";
      return;
    case DeviceCoverage::kNoneRecorded:
      row(out, "device") << "no kernel, copy or memset was recorded, so there is no device "
                            "timeline; host-side numbers only\n";
      return;
    case DeviceCoverage::kRecorded:
      break;
  }
  if (r.leading_ns) {
    row(out, "start-up") << formatDuration(*r.leading_ns) << " from "
                         << referenceText(r.leading_reference)
                         << " to the first device activity (not in the windows below)\n";
  }
  for (const DeviceReport& d : r.devices) {
    const BusySummary& b = d.busy;
    out << '\n';
    row(out, ("device " + std::to_string(d.device)).c_str())
        << "window " << formatDuration(b.windowNs()) << ", busy " << formatDuration(b.busy_ns)
        << ", idle " << formatDuration(b.idle_ns) << " = " << formatPercent(b.idleFraction())
        << " of the window\n";
    row(out, "") << plural(d.kernels, "kernel", "kernels") << ", "
                 << plural(d.memcpys, "copy", "copies") << ", "
                 << plural(d.memsets, "memset", "memsets");
    if (d.leading_ns && r.devices.size() > 1) {
      out << "; first activity " << formatDuration(*d.leading_ns) << " after "
          << referenceText(r.leading_reference);
    }
    out << '\n';
    printGapHistogram(b.gaps, out);
  }
}

void printSyncPoints(const BasicReport& r, std::ostream& out) {
  const SyncPointCounter& sync = r.sync_points;
  out << '\n';
  if (sync.total().count == 0) {
    row(out, "sync") << "no host call waited for the device\n";
    return;
  }
  row(out, "sync") << plural(sync.total().count, "host call", "host calls")
                   << " waited for the device, " << formatDuration(sync.total().blocked_ns)
                   << " in all\n";
  for (std::size_t k = 0; k < kSyncPointKindCount; ++k) {
    const auto kind = static_cast<SyncPointKind>(k);
    const SyncPointCounter::Totals& t = sync.of(kind);
    if (t.count == 0) continue;
    out << "  " << std::left << std::setw(22) << syncPointName(kind) << std::right
        << std::setw(10) << formatCount(t.count) << std::setw(12) << formatDuration(t.blocked_ns)
        << '\n';
  }
}

void printDrops(const BasicReport& r, std::ostream& out) {
  const DropSummary& d = r.drops;
  if (!d.any()) {
    row(out, "drops") << "none\n";
    return;
  }
  std::vector<std::string> parts;
  if (d.events_dropped > 0) {
    parts.push_back(plural(d.events_dropped, "event", "events") + " dropped in the recorder");
  }
  if (d.cupti_records_dropped > 0) {
    parts.push_back(plural(d.cupti_records_dropped, "CUPTI record", "CUPTI records") +
                    " dropped");
  }
  if (d.transport_events_dropped > 0) {
    parts.push_back(plural(d.transport_events_dropped, "event", "events") +
                    " lost in transport");
  }
  if (d.batches_missing > 0) {
    parts.push_back(plural(d.batches_missing, "batch", "batches") + " missing");
  }
  row(out, "drops");
  for (std::size_t i = 0; i < parts.size(); ++i) out << (i > 0 ? ", " : "") << parts[i];
  out << "; the numbers above undercount\n";
}

}  // namespace

void printBasicReport(std::string_view name, const BasicReport& report, const ReadSummary& read,
                      std::ostream& out) {
  out << "== " << printable(name) << " ==\n";
  printProcess(report, out);
  printRecording(report, read, out);
  printDevices(report, out);
  printSyncPoints(report, out);
  out << '\n';
  printDrops(report, out);
}

}  // namespace gapwatch::cli
