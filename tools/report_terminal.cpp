// tools/report_terminal.cpp: see report_terminal.h.
#include "tools/report_terminal.h"

#include "analysis/diagnosis.h"
#include "analysis/kernel_stats.h"
#include "analysis/process_summary.h"
#include "analysis/steady_state.h"
#include "analysis/sync_advice.h"
#include "analysis/sync_stats.h"
#include "tools/text_format.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace gapwatch::cli {

using analysis::DeviceAnalysis;
using analysis::Finding;
using analysis::ProcessAnalysis;

namespace {

// Every line is "label   text"; the label column is this wide.
constexpr int kLabelWidth = 11;
// A bar at 100 % of the idle time.
constexpr int kBarWidth = 30;
// Evidence names are padded to this width under a finding.
constexpr int kEvidenceNameWidth = 30;

std::string styled(bool on, const char* code, std::string_view text) {
  if (!on) return std::string(text);
  return std::string("\x1b[") + code + "m" + std::string(text) + "\x1b[0m";
}

std::ostream& row(std::ostream& out, std::string_view label) {
  return out << std::left << std::setw(kLabelWidth) << label << std::right;
}

// The CUDA release of a cuptiGetVersion number: CUPTI 12 numbers its versions (cupti_version.h's
// list), CUDA 13's are 13MMPP.
std::string cupti_release(uint32_t version) {
  static const char* const kCuda12[] = {"12.4", "12.5", "12.6", "12.7", "12.8", "12.9", "12.9 Update 1"};
  std::string cuda;
  if (version >= 22 && version <= 28) cuda = std::string("CUDA ") + kCuda12[version - 22];
  else if (version >= 10000) cuda = "CUDA " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100);
  std::string text = "libcupti version " + std::to_string(version);
  return cuda.empty() ? text : text + ", " + cuda;
}

std::string plural(uint64_t n, const char* one, const char* many) {
  return formatCount(n) + " " + (n == 1 ? one : many);
}

std::string padRight(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string padLeft(std::string text, std::size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

double ratio(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

std::string capitalised(std::string text) {
  if (!text.empty() && text[0] >= 'a' && text[0] <= 'z') text[0] = static_cast<char>(text[0] - 'a' + 'A');
  return text;
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

std::string barOf(double share, const TerminalStyle& style) {
  const int length = static_cast<int>(std::lround(std::clamp(share, 0.0, 1.0) * kBarWidth));
  if (length == 0) return "";
  return "  " + style.bar(std::string(static_cast<std::size_t>(length), '#'));
}

std::string processLabel(const ProcessAnalysis& p) {
  if (p.rank) return "rank " + std::to_string(*p.rank);
  return "pid " + std::to_string(p.pid);
}

// --- findings -------------------------------------------------------------------------------------

void printFinding(std::size_t number, const Finding& f, const TerminalStyle& style, std::ostream& out) {
  const std::string heading = std::to_string(number) + "  " + capitalised(f.title);
  out << "  " << style.bold(heading);
  if (f.idle_ns > 0) {
    out << "   " << formatDuration(f.idle_ns) << " = " << formatWholePercent(f.idle_share) << " of idle";
  }
  out << '\n';
  for (const auto& [name, value] : f.evidence) {
    if (name == "idle explained") continue;  // the heading says it
    out << "       " << padRight(printable(name), kEvidenceNameWidth) << " " << printable(value) << '\n';
  }
  out << "       " << style.good("fix") << "  " << f.fix << '\n';
}

// The steady state is GPU-bound: said before the findings of idle, as the verdict says it.
void printBottleneck(const ProcessAnalysis& p, const TerminalStyle& style, std::ostream& out) {
  if (!p.bottleneck) return;
  const Finding& b = *p.bottleneck;
  row(out, "bottleneck") << style.bold(capitalised(b.title)) << '\n';
  for (const auto& [name, value] : b.evidence) {
    out << "       " << padRight(printable(name), kEvidenceNameWidth) << " " << printable(value) << '\n';
  }
  out << "       " << style.good("fix") << "  " << b.fix << '\n';
}

void printFindings(const ProcessAnalysis& p, const TerminalStyle& style, std::ostream& out) {
  if (!p.device_timeline) {
    row(out, "findings") << "none: without device times there is no idle time to explain\n";
    return;
  }
  bool any_window = false;
  for (const DeviceAnalysis& d : p.devices) any_window = any_window || d.window_end_ns > d.window_start_ns;
  if (!any_window) {
    row(out, "findings") << "none: no device timeline\n";
    return;
  }
  if (p.findings.empty()) {
    printBottleneck(p, style, out);
    const analysis::DiagnosisThresholds thresholds;
    row(out, "findings") << "none: no cause explains " << formatPercent(thresholds.min_window_share)
                         << " of the device window or more\n";
    return;
  }
  printBottleneck(p, style, out);
  row(out, "findings") << "ranked by the idle time each explains\n";
  for (std::size_t i = 0; i < p.findings.size(); ++i) printFinding(i + 1, p.findings[i], style, out);
}

void printNotes(const ProcessAnalysis& p, const TerminalStyle& style, std::ostream& out) {
  if (p.notes.empty()) return;
  row(out, "notes") << "worth a look, though none explains enough idle time to be a finding\n";
  for (std::size_t i = 0; i < p.notes.size(); ++i) printFinding(i + 1, p.notes[i], style, out);
}

// --- the recording --------------------------------------------------------------------------------

void printProcess(const ProcessAnalysis& p, const analysis::RecordingOverview& o, std::ostream& out) {
  if (!o.hello) {
    row(out, "process") << "unknown (the recording has no Hello frame)\n";
  } else {
    const v1::Hello& h = *o.hello;
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
      for (int i = 0; i < h.command_line_size(); ++i) out << (i > 0 ? " " : "") << printable(h.command_line(i));
      out << '\n';
    }
  }
  row(out, "recorded");
  if (o.spanNs() > 0) out << formatDuration(o.spanNs()) << ", ";
  if (p.source.kineto_trace) {
    out << "the profiler's window; how and when the process ended is not in the trace\n";
  } else {
    out << analysis::endingText(o) << '\n';
  }

  std::vector<std::string> problems;
  if (o.read.skipped_frames > 0) {
    problems.push_back(plural(o.read.skipped_frames, "frame", "frames") +
                       " skipped (empty, or of a kind this gapwatch does not know)");
  }
  if (o.health.batches_out_of_order > 0) {
    problems.push_back(plural(o.health.batches_out_of_order, "batch", "batches") + " out of sequence");
  }
  if (o.health.frames_before_hello > 0) {
    problems.push_back(plural(o.health.frames_before_hello, "frame", "frames") + " before Hello");
  }
  if (o.health.extra_hellos > 0) {
    problems.push_back(plural(o.health.extra_hellos, "extra Hello", "extra Hellos") + " ignored");
  }
  if (o.health.frames_after_goodbye > 0) {
    problems.push_back(plural(o.health.frames_after_goodbye, "frame", "frames") + " after Goodbye");
  }
  for (const std::string& problem : problems) row(out, "stream") << problem << '\n';

  row(out, "probes");
  for (std::size_t i = 0; i < p.probes.size(); ++i) out << (i > 0 ? ", " : "") << printable(p.probes[i]);
  if (p.probes.empty()) out << "none listed";
  if (p.cupti_unavailable.empty() && p.cupti_version != 0) out << " (" << cupti_release(p.cupti_version) << ")";
  out << '\n';
  if (!p.cupti_unavailable.empty()) row(out, "no CUPTI") << printable(p.cupti_unavailable) << '\n';
  for (const ActivityApiSpan& s : p.activity_api_spans) {
    const uint64_t end = s.end_ns ? s.end_ns : o.span_end_ns;
    const std::string when = "+" + formatDuration(s.start_ns > o.span_start_ns ? s.start_ns - o.span_start_ns : 0) +
                             " to " + (s.end_ns ? "+" + formatDuration(end > o.span_start_ns ? end - o.span_start_ns : 0)
                                                : std::string("the end"));
    if (s.state == v1::ACTIVITY_API_STATE_BLIND)
      row(out, "CUPTI blind") << "from " << when << " (" << formatDuration(end > s.start_ns ? end - s.start_ns : 0)
                              << "): " << printable(s.client)
                              << " took the activity API; device records of that span are missing, so its idle time is "
                                 "not measured. Preload libgapwatch.so to share CUPTI instead\n";
    else
      row(out, "CUPTI") << "shared with " << printable(s.client) << " from " << when << "; every record kept\n";
  }

  row(out, "events") << plural(o.api_calls, "API call", "API calls") << " ("
                     << plural(o.launches, "launch", "launches") << "), "
                     << plural(o.activities, "device activity", "device activities") << ", "
                     << plural(o.nccl_calls, "NCCL call", "NCCL calls")
                     << (p.source.kineto_trace && o.nccl_calls > 0 ? " (c10d ranges)" : "") << ", "
                     << plural(o.markers, "marker", "markers");
  if (o.step_markers > 0) out << " (" << plural(o.step_markers, "step", "steps") << ")";
  out << '\n';
}

// --- devices --------------------------------------------------------------------------------------

void printIdleByCause(const DeviceAnalysis& d, const TerminalStyle& style, std::ostream& out) {
  constexpr int kName = 21, kTime = 11, kShare = 10;
  out << "  " << std::left << std::setw(kName) << "idle by cause" << std::right << std::setw(kTime) << "time"
      << std::setw(kShare) << "of idle" << '\n';
  std::vector<std::size_t> order(analysis::kIdleCauseCount);
  for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return d.idle_by_cause_ns[a] > d.idle_by_cause_ns[b]; });
  for (std::size_t c : order) {
    const uint64_t ns = d.idle_by_cause_ns[c];
    if (ns == 0) continue;
    const double share = ratio(static_cast<double>(ns), static_cast<double>(d.idle_ns));
    out << "  " << std::left << std::setw(kName) << analysis::idleCauseName(static_cast<analysis::IdleCause>(c))
        << std::right << std::setw(kTime) << formatDuration(ns) << std::setw(kShare) << formatPercent(share)
        << barOf(share, style) << '\n';
    if (c != static_cast<std::size_t>(analysis::IdleCause::kHostCpu)) continue;
    // What the host was doing in that time, by the evidence (docs/analysis.md, "Host time").
    for (std::size_t part = 0; part < analysis::kHostPartCount; ++part) {
      const uint64_t part_ns = d.host_cpu_by_part_ns[part];
      if (part_ns == 0) continue;
      const double part_share = ratio(static_cast<double>(part_ns), static_cast<double>(d.idle_ns));
      out << "    " << std::left << std::setw(kName - 2)
          << analysis::hostPartName(static_cast<analysis::HostPart>(part)) << std::right << std::setw(kTime)
          << formatDuration(part_ns) << std::setw(kShare) << formatPercent(part_share) << '\n';
    }
    if (d.host_evidence == analysis::HostEvidence::kPythonSamples) {
      const std::string split = plural(d.python_samples, "sampled Python stack", "sampled Python stacks");
      out << "    " << style.dim("split by " + split) << '\n';
    }
  }
  if (d.after_sync_ns > 0) {
    out << "  " << std::left << std::setw(kName) << "after a sync" << std::right << std::setw(kTime)
        << formatDuration(d.after_sync_ns) << std::setw(kShare)
        << formatPercent(ratio(static_cast<double>(d.after_sync_ns), static_cast<double>(d.idle_ns))) << "  "
        << style.dim("a flag, not a cause: gaps that began when a sync returned") << '\n';
  }
}

void printGapHistogram(const GapHistogram& gaps, const TerminalStyle& style, std::ostream& out) {
  if (gaps.count() == 0) {
    out << "  no idle gaps\n";
    return;
  }
  constexpr int kLabel = 19, kCount = 10, kTime = 11, kShare = 10;
  out << "  " << std::left << std::setw(kLabel) << "idle gaps" << std::right << std::setw(kCount) << "count"
      << std::setw(kTime) << "time" << std::setw(kShare) << "of idle" << '\n';
  for (std::size_t b = 0; b < GapHistogram::kBucketCount; ++b) {
    const GapHistogram::Bucket& bucket = gaps.bucket(b);
    if (bucket.count == 0) continue;
    const double share = ratio(static_cast<double>(bucket.total_ns), static_cast<double>(gaps.totalNs()));
    out << "  " << std::left << std::setw(kLabel) << bucketLabel(b) << std::right << std::setw(kCount)
        << formatCount(bucket.count) << std::setw(kTime) << formatDuration(bucket.total_ns) << std::setw(kShare)
        << formatPercent(share) << barOf(share, style) << '\n';
  }
}

std::string causesText(const analysis::IdleGap& gap) {
  const uint64_t length = gap.end_ns - gap.start_ns;
  std::vector<std::size_t> order;
  for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
    if (gap.by_cause_ns[c] > 0) order.push_back(c);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return gap.by_cause_ns[a] > gap.by_cause_ns[b]; });
  // Causes under 1 % of the gap are noise at the gap's edges: one mention for all of them.
  std::string text;
  bool small = false;
  for (std::size_t c : order) {
    const double share = ratio(static_cast<double>(gap.by_cause_ns[c]), static_cast<double>(length));
    if (share < 0.01 && !text.empty()) {
      small = true;
      continue;
    }
    if (!text.empty()) text += ", ";
    text += std::string(analysis::idleCauseName(static_cast<analysis::IdleCause>(c))) + " " + formatWholePercent(share);
  }
  if (small) text += ", others <1%";
  if (gap.after_sync) text += "; after a sync";
  return text;
}

void printLongestGaps(const DeviceAnalysis& d, const analysis::AnalysisOptions& options, std::ostream& out) {
  if (d.longest_gaps.empty()) return;
  out << "  " << padRight("longest gaps", 19) << padLeft("length", 10) << padLeft("from start", 12) << "   causes";
  if (options.min_gap_ns > 0) out << " (gaps of " << formatDuration(options.min_gap_ns) << " or more)";
  out << '\n';
  for (const analysis::IdleGap& gap : d.longest_gaps) {
    out << "  " << padRight("", 19) << padLeft(formatDuration(gap.end_ns - gap.start_ns), 10)
        << padLeft("+" + formatDuration(gap.start_ns - d.window_start_ns), 12) << "   " << causesText(gap) << '\n';
    // Where it is: the launching thread's call and the work on either side.
    if (gap.call.known) {
      // gapPlace's first part: the thread, its call, and the launch after it when another call.
      std::string where = analysis::gapPlace(gap);
      const std::size_t end = where.find("; ");
      out << "  " << padRight("", 22) << printable(where.substr(0, end)) << '\n';
    }
    if (!gap.before.name.empty()) {
      out << "  " << padRight("", 22) << "after  " << printable(analysis::shortKernelName(gap.before.name)) << '\n';
    }
    if (!gap.after.name.empty()) {
      out << "  " << padRight("", 22) << "before " << printable(analysis::shortKernelName(gap.after.name)) << '\n';
    }
  }
}

// Where the host came back after its long stretches of host time: the Python line of the launch that
// ended each host_cpu gap of long_host_gap_ns or more (the recorder reads the stack only there).
void printLongHostGapSites(const DeviceAnalysis& d, const analysis::AnalysisOptions& options, std::ostream& out) {
  if (d.long_host_gaps == 0) return;
  uint64_t named = 0;
  for (const analysis::HostReturnSite& s : d.long_host_gap_sites) named += s.gaps;
  out << "  " << padRight("host came back at", 22) << plural(d.long_host_gaps, "host gap", "host gaps") << " of "
      << formatDuration(options.long_host_gap_ns) << " or more";
  if (d.long_host_gap_sites.empty()) {
    out << "; no Python stack at their launches (not a Python program, or stacks not read)\n";
    return;
  }
  out << "; the launch that ended them was made at\n";
  for (const analysis::HostReturnSite& s : d.long_host_gap_sites) {
    out << "    " << padRight(printable(s.name), 40) << padLeft(plural(s.gaps, "gap", "gaps"), 10)
        << padLeft(formatDuration(s.host_cpu_ns), 11) << " host\n";
  }
  if (named < d.long_host_gaps) out << "    " << formatCount(d.long_host_gaps - named) << " more elsewhere\n";
}

// gapwatch's own idle per stream, split into HTA's categories but measured as gapwatch measures
// (the whole window, no last-step cut, nanoseconds, gaps to the latest end so far): not HTA's
// numbers, which `report --hta` gives, so the table does not carry HTA's name.
void printStreamIdle(const DeviceAnalysis& d, std::ostream& out) {
  bool any = false;
  for (const analysis::StreamIdle& s : d.streams) any = any || s.host_wait_ns + s.kernel_wait_ns + s.other_ns > 0;
  if (!any) return;
  out << "  idle per stream     host_wait  kernel_wait        other\n";
  for (const analysis::StreamIdle& s : d.streams) {
    if (s.host_wait_ns + s.kernel_wait_ns + s.other_ns == 0) continue;
    out << "  " << padRight("stream " + std::to_string(s.stream), 16) << padLeft(formatDuration(s.host_wait_ns), 13)
        << padLeft(formatDuration(s.kernel_wait_ns), 13) << padLeft(formatDuration(s.other_ns), 13) << '\n';
  }
}

void printDevices(const ProcessAnalysis& p, const analysis::AnalysisOptions& options, const TerminalStyle& style,
                  std::ostream& out) {
  if (!p.device_timeline) {
    row(out, "device") << "not recorded: the CUPTI activity probe was not active (symbol hooks only), so device "
                          "busy and idle time are unknown; host-side numbers only\n";
    return;
  }
  if (p.devices.empty()) {
    row(out, "device") << "no kernel, copy or memset was recorded, so there is no device timeline; host-side "
                          "numbers only\n";
    return;
  }
  uint64_t leading = UINT64_MAX;
  for (const DeviceAnalysis& d : p.devices) leading = std::min(leading, d.leading_ns);
  if (p.source.kineto_trace && analysis::hasFirstPass(p)) {
    // The process's own start is not in the trace, but the window opens with its one-time set-up
    // (a first second in cudaFree inside the first op once sat under a bare "not in trace").
    row(out, "start-up") << "the process's start is not in the trace, but the window opens with a first pass of "
                         << formatDuration(analysis::firstPassTotals(p).longest_ns)
                         << " (one-time set-up: the first_pass finding)\n";
  } else if (p.source.kineto_trace) {
    row(out, "start-up") << "not in trace: the trace begins with the profiler's window, not with the process\n";
  } else if (leading != UINT64_MAX && leading > 0) {
    row(out, "start-up") << formatDuration(leading)
                         << " from process start to the first device activity (not in the windows below)\n";
  }
  for (const DeviceAnalysis& d : p.devices) {
    out << '\n';
    const uint64_t window = d.window_end_ns - d.window_start_ns;
    row(out, "device " + std::to_string(d.device))
        << "window " << formatDuration(window) << ", busy " << formatDuration(d.busy_ns) << ", idle "
        << formatDuration(d.idle_ns) << " = " << formatPercent(d.idle_fraction) << " of the window\n";
    row(out, "") << plural(d.kernels, "kernel", "kernels") << ", " << plural(d.memcpys, "copy", "copies") << ", "
                 << plural(d.memsets, "memset", "memsets");
    if (p.devices.size() > 1 && !p.source.kineto_trace) {
      out << "; first activity " << formatDuration(d.leading_ns) << " after process start";
    }
    out << '\n';
    if (p.source.kineto_trace && d.work_without_call > 0) {
      row(out, "") << "of them " << formatCount(d.work_without_call)
                   << " with no launch call in the trace (their gaps count as in no call)\n";
    }
    if (d.idle_ns > 0) printIdleByCause(d, style, out);
    printGapHistogram(d.gaps, style, out);
    printLongestGaps(d, options, out);
    printLongHostGapSites(d, options, out);
    printStreamIdle(d, out);
  }
}

// --- host side ------------------------------------------------------------------------------------

// What a trace's sync numbers rest on: it records no blocking, no call sites, and (unless it has
// cuda_sync records) not which work a stream or event sync waited for.
void printTraceSyncLimits(const ProcessAnalysis& p, std::ostream& out) {
  if (!p.source.kineto_trace) return;
  out << "  " << padRight("blocking copies", 22) << "from copy names (Pageable), not measured\n";
  if (p.source.sync_records == 0) {
    out << "  " << padRight("sync waits", 22)
        << "an upper bound: the trace has no cuda_sync records, so a stream or event sync waits like a device sync\n";
  }
  if (std::find(p.source.not_in_trace.begin(), p.source.not_in_trace.end(), analysis::kNotInTraceCallSites) !=
      p.source.not_in_trace.end()) {
    out << "  " << padRight("call sites", 22) << "(not recorded in the trace: it has no python_function events)\n";
  }
}

void printSyncPoints(const ProcessAnalysis& p, std::ostream& out) {
  out << '\n';
  uint64_t count = 0, total = 0;
  for (const analysis::SyncTypeStats& s : p.sync_points) {
    count += s.count;
    total += s.total_ns;
  }
  if (count == 0) {
    row(out, "sync") << "no host call waited for the device\n";
    printTraceSyncLimits(p, out);
    return;
  }
  // A sync point whose device had nothing left to do waits for nothing (its blocked time is 0):
  // say how many there were and how long they waited, not that every one waited.
  row(out, "sync") << plural(count, "sync point", "sync points") << " (host calls that wait for the device when it is "
                   << "busy), " << formatDuration(total) << " waiting in all\n";
  out << "  " << padRight("type", 22) << padLeft("count", 9) << padLeft("total", 11) << padLeft("p50", 11)
      << padLeft("p99", 11) << padLeft("idle after", 12) << '\n';
  for (const analysis::SyncTypeStats& s : p.sync_points) {
    if (s.count == 0) continue;
    out << "  " << padRight(analysis::syncTypeLabel(s), 22) << padLeft(formatCount(s.count), 9)
        << padLeft(formatDuration(s.total_ns), 11) << padLeft(formatDuration(s.p50_ns), 11)
        << padLeft(formatDuration(s.p99_ns), 11)
        << padLeft(p.device_timeline ? formatDuration(s.idle_after_ns) : "-", 12) << '\n';
    // Reads of a value wait for the queue, not for the copy: say so, so that no one pins memory
    // for them.
    if (s.small_reads > 0 && analysis::mostlySmallReads(s)) {
      out << "    " << formatCount(s.small_reads) << " of " << formatCount(s.count)
          << " copies to the host of at most 64 KiB (.item(), .cpu() of a value): read less often; pinning "
             "would not help\n";
    } else if (s.small_reads > 0) {
      out << "    " << formatCount(s.small_reads) << " of them reads of values (to the host, at most 64 KiB): "
          << "read those less often; pinning helps only the others\n";
    }
    // A loop's count says little alone: how many times it asked, and for how long it spun.
    if (s.polls > 0)
      out << "    " << formatCount(s.polls) << (s.polls == 1 ? " poll" : " polls") << " over "
          << formatDuration(s.polling_ns) << '\n';
    // Calls without a site (a C++ caller the recorder could not name, a Python thread whose stack
    // was a miss) are counted in the type's row above, not listed as a site.
    for (const analysis::CallSite& site : s.top_call_sites) {
      if (site.name == analysis::kCallSiteNotRecorded) continue;
      // The numbers under the type's columns; a name too long for the first column gets a line.
      const std::string name = printable(site.name);
      if (name.size() > 20) out << "    " << name << '\n';
      out << "    " << padRight(name.size() > 20 ? "" : name, 20) << padLeft(formatCount(site.count), 9)
          << padLeft(formatDuration(site.total_ns), 11) << padLeft("", 22)
          << padLeft(p.device_timeline ? formatDuration(site.idle_after_ns) : "-", 12) << '\n';
    }
  }
  printTraceSyncLimits(p, out);
}

void printLaunches(const ProcessAnalysis& p, const analysis::AnalysisOptions& options, std::ostream& out) {
  const analysis::LaunchStats& l = p.launches;
  out << '\n';
  if (!p.device_timeline) {
    row(out, "launches") << "launch calls: p50 " << formatDuration(l.api_p50_ns) << ", p99 "
                         << formatDuration(l.api_p99_ns) << ", " << formatDuration(l.api_total_ns)
                         << " in all (device times not recorded)\n";
    return;
  }
  if (l.launches == 0) {
    row(out, "launches") << "no launch call was joined to its kernel";
    if (l.captured_calls > 0) out << " (" << formatCount(l.captured_calls) << " captured into graphs)";
    out << '\n';
    return;
  }
  row(out, "launches") << plural(l.launches, "launch", "launches") << " joined to their kernels, "
                       << formatCount(static_cast<uint64_t>(std::llround(l.launches_per_second)))
                       << " per second over the device window\n";
  if (l.graph_launches > 0 || l.captured_calls > 0) {
    out << "  " << padRight("graphs", 22) << plural(l.graph_launches, "graph launch", "graph launches") << " ran "
        << plural(l.graph_kernels, "kernel", "kernels") << "; " << formatCount(l.captured_calls)
        << " calls captured into graphs (not launches)\n";
  }
  out << "  " << padRight("API time", 22) << "p50 " << formatDuration(l.api_p50_ns) << ", p99 "
      << formatDuration(l.api_p99_ns) << ", " << formatDuration(l.api_total_ns) << " in all\n";
  out << "  " << padRight("launch delay", 22) << "mean " << formatDuration(l.launch_delay_mean_ns) << ", p50 "
      << formatDuration(l.launch_delay_p50_ns) << ", p99 " << formatDuration(l.launch_delay_p99_ns)
      << " (kernel start - call return)\n";
  out << "  " << padRight("kernels", 22) << formatCount(l.kernels_under_20us) << " under 20 us, "
      << formatCount(l.short_kernels) << " short (HTA: call <= " << formatDuration(options.hta_runtime_cutoff_ns)
      << " and kernel shorter than its call)\n";
  out << "  " << padRight("outliers (HTA)", 22) << formatCount(l.runtime_outliers) << " calls over "
      << formatDuration(options.hta_runtime_cutoff_ns) << ", " << formatCount(l.launch_delay_outliers)
      << " delays over " << formatDuration(options.hta_launch_delay_cutoff_ns) << '\n';
  out << "  " << padRight("queue depth", 22) << "max " << formatCount(l.queue_depth_max) << ", p99 "
      << formatCount(l.queue_depth_p99) << '\n';
  if (l.host_launch_gaps.count() > 0) {
    uint64_t seen = 0;
    std::size_t median = 0;
    for (; median < GapHistogram::kBucketCount; ++median) {
      seen += l.host_launch_gaps.bucket(median).count;
      if (seen * 2 >= l.host_launch_gaps.count()) break;
    }
    out << "  " << padRight("host between launches", 22) << "median " << bucketLabel(median) << " ("
        << formatCount(l.host_launch_gaps.count()) << " intervals)\n";
  }
}

void printKernelRows(const std::vector<analysis::KernelStats>& rows, std::ostream& out) {
  for (const analysis::KernelStats& k : rows) {
    out << "  " << padRight(printable(analysis::shortKernelName(k.name, 58)), 60) << padLeft(formatCount(k.count), 9)
        << padLeft(formatDuration(k.total_ns), 11) << padLeft(formatPercent(k.busy_share), 9)
        << padLeft(formatDuration(k.meanNs()), 11) << padLeft(formatDuration(k.median_ns), 11)
        << (k.short_kernel ? "  short" : "") << '\n';
  }
}

// The kernels that took the device's time, and the short ones that run most often (the ones a
// launch-bound loop would fuse or capture).
void printKernels(const ProcessAnalysis& p, const analysis::AnalysisOptions& options, std::ostream& out) {
  const analysis::KernelTable& t = p.kernels;
  if (!p.device_timeline || t.kernels == 0) return;
  out << '\n';
  row(out, "kernels") << plural(t.kernels, "run", "runs") << " of " << plural(t.distinct, "name", "names") << ", "
                      << formatDuration(t.total_ns) << " of device time ("
                      << formatPercent(ratio(static_cast<double>(t.total_ns), static_cast<double>(t.busy_ns)))
                      << " of busy; overlapping kernels count twice)\n";
  out << "  " << padRight("top " + std::to_string(t.top_by_time.size()) + " by device time", 60) << padLeft("count", 9)
      << padLeft("time", 11) << padLeft("of busy", 9) << padLeft("mean", 11) << padLeft("median", 11) << '\n';
  printKernelRows(t.top_by_time, out);
  if (!t.short_by_count.empty()) {
    out << "  short kernels by count\n";
    printKernelRows(t.short_by_count, out);
  }
  out << "  short = most runs under " << formatDuration(analysis::KernelStatsStage::kShortKernelNs)
      << " or shorter than their launch call; " << "top " << options.top_n << " (--top)\n";
}

void printNccl(const ProcessAnalysis& p, std::ostream& out) {
  const analysis::NcclStats& n = p.nccl;
  out << '\n';
  bool any = n.comm_ns > 0;
  for (const analysis::NcclTypeStats& t : n.by_type) any = any || t.calls > 0 || t.kernels > 0;
  uint64_t host_calls = 0;
  for (const analysis::NcclTypeStats& t : n.by_type) host_calls += t.calls;
  if (!any) {
    row(out, "nccl") << (p.source.kineto_trace ? "no NCCL kernel and no NCCL host calls in the trace\n"
                                               : "no NCCL call or kernel recorded\n");
    return;
  }
  row(out, "nccl") << "communication " << formatDuration(n.comm_ns) << " = " << formatPercent(n.comm_share_of_busy)
                   << " of busy, overlapped with compute " << formatPercent(n.compute_comm_overlap) << '\n';
  out << "  " << padRight("type", 16) << padLeft("calls", 9) << padLeft("bytes", 15) << padLeft("host", 11)
      << padLeft("kernels", 9) << padLeft("device", 11) << '\n';
  for (const analysis::NcclTypeStats& t : n.by_type) {
    if (t.calls == 0 && t.kernels == 0) continue;
    const std::string bytes = analysis::ncclBytesKnown(t, p.source.kineto_trace) ? formatCount(t.bytes) : "not in trace";
    out << "  " << padRight(printable(t.op), 16) << padLeft(formatCount(t.calls), 9) << " " << padLeft(bytes, 14)
        << padLeft(formatDuration(t.host_ns), 11) << padLeft(formatCount(t.kernels), 9)
        << padLeft(formatDuration(t.device_ns), 11) << '\n';
  }
  if (p.source.kineto_trace) {
    out << "  " << (host_calls > 0 ? "host = c10d's range (record_param_comms, nccl:* annotations), not NCCL's own call"
                                   : "no NCCL host calls in the trace")
        << '\n';
  }
}

void printSteps(const ProcessAnalysis& p, std::ostream& out) {
  const analysis::StepStats& s = p.steps;
  if (s.steps == 0) {
    row(out, "steps") << "none found";
    if (!s.how.empty()) out << ": " << printable(s.how);
    out << '\n';
    return;
  }
  row(out, "steps") << plural(s.steps, "step", "steps") << ", median " << formatDuration(s.median_ns) << " (p10 "
                    << formatDuration(s.p10_ns) << ", p90 " << formatDuration(s.p90_ns) << "), median idle "
                    << formatPercent(s.median_idle_fraction)
                    << (s.steps < analysis::kFewSteps ? "; " + plural(s.steps, "step", "steps") + ": per-step figures are rough"
                                                      : std::string())
                    << '\n';
  row(out, "") << "found by " << printable(s.method);
  if (!s.how.empty()) out << ": " << printable(s.how);
  out << '\n';
}

std::string signedMicros(int64_t us) {
  return (us < 0 ? "-" + formatCount(static_cast<uint64_t>(-us)) : formatCount(static_cast<uint64_t>(us))) + " us";
}

std::string fixed2(double x) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << x;
  return text.str();
}

// HTA's own numbers (report --hta), in HTA's units and rounding, so they read like HTA's tables.
void printHta(const ProcessAnalysis& p, std::ostream& out) {
  if (!p.hta) return;
  const analysis::HtaView& h = *p.hta;
  out << '\n';
  row(out, "HTA view") << "HTA " << analysis::htaReleaseName(h.release)
                       << "'s numbers, with its conventions (docs/hta-parity.md)\n";
  row(out, "") << formatCount(h.gpu_events) << " of " << formatCount(h.gpu_events + h.gpu_events_dropped)
               << " GPU records kept: ";
  if (h.cut == "before_last_step_start") {
    out << "launched before the last of " << h.profiler_steps << " ProfilerSteps began, with their CPU call";
  } else {
    out << "all (fewer than two ProfilerSteps: HTA filters nothing)";
  }
  out << '\n';
  row(out, "temporal") << "kernel time " << formatCount(h.kernel_time_us) << " us: idle " << formatCount(h.idle_time_us)
                       << " us (" << fixed2(h.idle_time_pctg) << "%), compute "
                       << (h.compute_time_us < 0 ? "-" + formatCount(static_cast<uint64_t>(-h.compute_time_us))
                                                 : formatCount(static_cast<uint64_t>(h.compute_time_us)))
                       << " us (" << fixed2(h.compute_time_pctg) << "%), non-compute "
                       << formatCount(h.non_compute_time_us) << " us (" << fixed2(h.non_compute_time_pctg) << "%)\n";
  if (h.hta_asserts_non_compute) {
    row(out, "") << "HTA itself stops here with an AssertionError (its non-compute time comes out negative: records "
                    "under 1 us round to a length of -1); the figures are what it computed before\n";
  }
  if (!h.idle_breakdown.empty()) {
    row(out, "idle/stream") << padRight("", 12) << padLeft("host_wait", 16) << padLeft("kernel_wait", 16)
                                << padLeft("other", 16) << '\n';
    for (const analysis::HtaStreamIdle& s : h.idle_breakdown) {
      row(out, "") << padRight("stream " + std::to_string(s.stream), 12)
                   << padLeft(s.has_host_wait ? signedMicros(s.host_wait_us) : "-", 16)
                   << padLeft(s.has_kernel_wait ? signedMicros(s.kernel_wait_us) : "-", 16)
                   << padLeft(signedMicros(s.other_us), 16) << '\n';
    }
  }
  if (h.launches == 0) {
    row(out, "launches") << "none: HTA's launch statistics take only calls named cudaLaunchKernel, cudaLaunchKernelExC, "
                            "cudaMemcpyAsync and cudaMemsetAsync (not hip* or cuLaunchKernel)\n";
  } else {
    row(out, "launches") << formatCount(h.launches) << ": " << formatCount(h.short_kernels) << " short kernels, "
                         << formatCount(h.runtime_outliers) << " runtime outliers, " << formatCount(h.launch_delay_outliers)
                         << " launch-delay outliers, mean launch delay " << fixed2(h.mean_launch_delay_us) << " us\n";
  }
  row(out, "overlap");
  if (h.comm_comp_overlap_pctg) {
    out << fixed2(*h.comm_comp_overlap_pctg) << "% of communication time overlaps computation (HTA's comm/comp overlap)\n";
  } else {
    out << "no communication kernels\n";
  }
}

void printDropsAndNotes(const ProcessAnalysis& p, const analysis::RecordingOverview& o, const TerminalStyle& style,
                        std::ostream& out) {
  std::vector<std::string> parts;
  if (p.events_dropped > 0) parts.push_back(plural(p.events_dropped, "event", "events") + " dropped in the recorder");
  if (p.cupti_records_dropped > 0) {
    parts.push_back(plural(p.cupti_records_dropped, "CUPTI record", "CUPTI records") + " dropped");
  }
  if (p.cupti_records_incomplete > 0) {
    parts.push_back(plural(p.cupti_records_incomplete, "device record", "device records") +
                    " of work unfinished at the end (not counted)");
  }
  if (o.transport_events_dropped > 0) {
    parts.push_back(plural(o.transport_events_dropped, "event", "events") + " lost in transport");
  }
  if (o.health.batches_missing > 0) parts.push_back(plural(o.health.batches_missing, "batch", "batches") + " missing");
  out << '\n';
  if (p.source.kineto_trace && parts.empty()) {
    row(out, "drops") << "not recorded by Kineto (it does not count lost CUPTI records)\n";
  } else if (parts.empty()) {
    row(out, "drops") << "none\n";
  } else {
    std::string text;
    for (std::size_t i = 0; i < parts.size(); ++i) text += (i > 0 ? ", " : "") + parts[i];
    row(out, "drops") << style.warn(text + "; the numbers above undercount") << '\n';
  }
  // A miss loses a call's Python line, never the call: said apart from the drops, which undercount.
  if (p.python_stack_misses > 0) {
    std::string reasons;
    for (const auto& [reason, n] : p.python_stack_misses_by_reason)
      reasons += (reasons.empty() ? "" : ", ") + formatCount(n) + " " + reason;
    row(out, "py stacks") << style.warn(formatCount(p.python_stacks) + " read, " + formatCount(p.python_stack_misses) +
                                            " not (" + reasons + "): those calls are counted under no Python line")
                              << '\n';
  }
  if (p.python_sampler || p.python_samples > 0) {
    const std::string taken = plural(p.python_samples, "sample", "samples") +
                              " of the launching thread's Python stack while it was outside CUDA calls";
    if (p.python_sample_misses > 0) {
      row(out, "py samples") << style.warn(taken + "; " + formatCount(p.python_sample_misses) +
                                           " could not be read or kept: what their time held is unknown")
                             << '\n';
    } else {
      row(out, "py samples") << taken << '\n';
    }
  }
  if (const std::string parts = analysis::partsText(o, [](const std::string& f) { return printable(f); }); !parts.empty()) {
    row(out, "note") << parts << '\n';
  }
  if (o.read.truncated) {
    row(out, "note") << style.warn(truncationNotice(o.read) + "; the analysis stops there") << '\n';
  } else if (!o.goodbye) {
    row(out, "note") << style.warn("the recording ended without Goodbye; work still queued then is not in it") << '\n';
  }
  if (p.late_events > 0) {
    row(out, "note") << style.warn(plural(p.late_events, "event", "events") +
                                   " arrived after the reordering window had passed their time and were left out")
                     << '\n';
  }
  if (!p.device_timeline) {
    row(out, "note") << "symbol hooks only: device idle time is not measured, and neither are copies' and kernels' "
                        "device times, launch delays or NCCL kernel time\n";
  }
}

void printProcessBlock(const analysis::RunReport& content, std::size_t index, const TerminalStyle& style, std::ostream& out) {
  const ProcessAnalysis& p = content.analysis.processes[index];
  const analysis::RecordingOverview& o = content.overviews[index];
  std::string files = printable(content.files[index]);
  for (std::size_t k = 1; k < o.part_files.size(); ++k) files += " + " + printable(o.part_files[k]);
  out << style.bold("== " + files + " ==") << '\n';
  out << style.bold(analysis::verdict(p)) << '\n';
  if (p.source.kineto_trace) {
    row(out, "source") << "PyTorch profiler trace (Kineto)";
    if (p.source.trace_schema_version != 0) out << ", schemaVersion " << p.source.trace_schema_version;
    out << '\n';
  }
  out << '\n';
  printFindings(p, style, out);
  printNotes(p, style, out);
  out << '\n';
  printProcess(p, o, out);
  printDevices(p, content.analysis.options, style, out);
  printSyncPoints(p, out);
  printLaunches(p, content.analysis.options, out);
  printKernels(p, content.analysis.options, out);
  printNccl(p, out);
  printSteps(p, out);
  printHta(p, out);
  printDropsAndNotes(p, o, style, out);
}

// One line per process of a job: the numbers to compare ranks by (analysis/process_summary.h: the
// top finding is the one its verdict names), and from the collectives who waited and whom the
// others waited for ("-" without shared collectives).
void printRankTable(const analysis::AnalysisReport& report, const std::vector<std::size_t>& ranks, std::ostream& out) {
  // Every column after the first starts with a space, however wide its value: a value wider than
  // its column pushes the row on, never into the column before it.
  const auto cell = [](const std::string& text, std::size_t width) { return " " + padLeft(text, width - 1); };
  out << "  " << padRight("rank", 10) << cell("idle", 7) << "  " << padRight("top finding", 18) << cell("step", 10)
      << cell("NCCL wait", 11) << cell("others waited for it", 22) << cell("arrived last", 14) << '\n';
  for (std::size_t i : ranks) {
    const ProcessAnalysis& p = report.processes[i];
    const analysis::ProcessSummary s = analysis::summarizeProcess(p);
    const std::optional<analysis::TopFinding> top = analysis::topFindingOf(p.findings);  // diagnosed
    const analysis::RankWait* wait = analysis::rankWaitOf(report, i);
    out << "  " << padRight(processLabel(p), 10)
        << cell(p.device_timeline ? formatPercent(s.idle_fraction) : std::string("-"), 7) << "  "
        << padRight(top ? printable(top->id) : std::string("-"), 18)
        << cell(s.step_median_ns ? formatDuration(s.step_median_ns) : std::string("-"), 10)
        << cell(wait ? formatDuration(wait->waited_ns) : std::string("-"), 11)
        << cell(wait ? formatDuration(wait->waited_for_ns) : std::string("-"), 22)
        << cell(wait ? formatCount(wait->collectives_last) : std::string("-"), 14) << '\n';
  }
}

// HTA's temporal breakdown per rank of a job, as HTA's own table shows it (report --hta).
void printHtaRankTable(const analysis::AnalysisReport& report, const std::vector<std::size_t>& ranks, std::ostream& out) {
  bool any = false;
  for (std::size_t i : ranks) any = any || report.processes[i].hta.has_value();
  if (!any) return;
  out << '\n' << "  " << padRight("HTA", 10) << padLeft("kernel time", 16) << padLeft("idle", 9) << padLeft("compute", 10)
      << padLeft("non-compute", 13) << '\n';
  for (std::size_t i : ranks) {
    const ProcessAnalysis& p = report.processes[i];
    if (!p.hta) continue;
    const analysis::HtaView& h = *p.hta;
    out << "  " << padRight(processLabel(p), 10) << padLeft(formatCount(h.kernel_time_us) + " us", 16)
        << padLeft(fixed2(h.idle_time_pctg) + "%", 9) << padLeft(fixed2(h.compute_time_pctg) + "%", 10)
        << padLeft(fixed2(h.non_compute_time_pctg) + "%", 13) << '\n';
  }
}

// One job's ranks side by side: each one's verdict, the rank table, and whom they waited for.
// `comparison` is null for a report that was not grouped into jobs and compared.
void printJobRanks(const analysis::AnalysisReport& report, const std::vector<std::size_t>& ranks,
                   const analysis::RankComparison* comparison, const TerminalStyle& style, std::ostream& out) {
  for (std::size_t i : ranks) {
    const ProcessAnalysis& p = report.processes[i];
    out << padRight(processLabel(p), kLabelWidth) << style.bold(analysis::verdict(p)) << '\n';
  }
  out << '\n';
  printRankTable(report, ranks, out);
  printHtaRankTable(report, ranks, out);
  out << '\n';
  if (!comparison || comparison->rank_waits.empty()) {
    row(out, "ranks") << "no collective shared by the ranks was recorded: nothing to say about who waited\n";
    return;
  }
  if (comparison->findings.empty()) {
    if (comparison->straggler_test) {
      row(out, "ranks") << analysis::unnamedStragglerText(*comparison->straggler_test, comparison->rank_waits.size())
                        << '\n';
    } else {
      row(out, "ranks") << "no rank waited for another in the collectives they shared\n";
    }
    return;
  }
  row(out, "ranks") << "findings across ranks\n";
  for (std::size_t i = 0; i < comparison->findings.size(); ++i) {
    const Finding& f = comparison->findings[i];
    out << "  " << style.bold(std::to_string(i + 1) + "  " + capitalised(f.title)) << '\n';
    for (const auto& [name, value] : f.evidence) {
      out << "       " << padRight(printable(name), kEvidenceNameWidth) << " " << printable(value) << '\n';
    }
    out << "       " << style.good("fix") << "  " << f.fix << '\n';
  }
}

// A job's heading names this many of its files, then how many more.
constexpr std::size_t kJobFilesListed = 4;

void printAcrossRanks(const analysis::RunReport& content, const TerminalStyle& style, std::ostream& out) {
  const analysis::AnalysisReport& report = content.analysis;
  std::size_t traces = 0;
  for (const ProcessAnalysis& p : report.processes) traces += p.source.kineto_trace ? 1 : 0;
  const char* what = traces == 0 ? " recordings" : traces == report.processes.size() ? " PyTorch profiler traces" : " files";
  if (report.jobs.size() <= 1) {
    out << style.bold("== " + std::to_string(report.processes.size()) + what + ", analysed together (one per rank) ==")
        << '\n';
    // One job (or a report not grouped into jobs: every process is a rank of one).
    const analysis::RankComparison* comparison = report.rank_comparisons.empty() ? nullptr : &report.rank_comparisons[0];
    printJobRanks(report, report.ranksOfOneJob(), comparison, style, out);
    return;
  }
  // Several jobs: each job of several ranks is compared on its own, never across jobs
  // (analysis/job_groups.h).
  out << style.bold("== " + std::to_string(report.processes.size()) + what + " of " + std::to_string(report.jobs.size()) +
                    " jobs ==")
      << '\n';
  row(out, "jobs") << "not one job: " << report.jobs_why << '\n';
  if (report.rank_comparisons.empty()) {
    row(out, "ranks") << "no job has more than one process: each process is reported alone below\n";
    return;
  }
  for (const analysis::RankComparison& comparison : report.rank_comparisons) {
    const auto job = std::find(report.jobs.begin(), report.jobs.end(), comparison.processes);
    const std::size_t number = static_cast<std::size_t>(job - report.jobs.begin()) + 1;
    out << '\n'
        << style.bold("== job " + std::to_string(number) + " of " + std::to_string(report.jobs.size()) + ": " +
                      std::to_string(comparison.processes.size()) + " ranks compared ==")
        << '\n';
    // Which files are this job's: ranks of two jobs can carry the same labels.
    std::string files;
    for (std::size_t k = 0; k < comparison.processes.size() && k < kJobFilesListed; ++k) {
      files += (k ? ", " : "") + printable(content.files[comparison.processes[k]]);
    }
    if (comparison.processes.size() > kJobFilesListed) {
      files += " and " + std::to_string(comparison.processes.size() - kJobFilesListed) + " more";
    }
    row(out, "files") << files << '\n';
    printJobRanks(report, comparison.processes, &comparison, style, out);
  }
}

}  // namespace

std::string TerminalStyle::bold(std::string_view text) const { return styled(colour, "1", text); }
std::string TerminalStyle::dim(std::string_view text) const { return styled(colour, "2", text); }
std::string TerminalStyle::warn(std::string_view text) const { return styled(colour, "33", text); }
std::string TerminalStyle::good(std::string_view text) const { return styled(colour, "32", text); }
std::string TerminalStyle::bar(std::string_view text) const { return styled(colour, "36", text); }

bool colourWanted(bool stdout_is_terminal, const char* no_color_env, const char* term_env) {
  if (!stdout_is_terminal || no_color_env != nullptr) return false;
  return term_env == nullptr || std::string_view(term_env) != "dumb";
}

void writeTerminalReport(const analysis::RunReport& content, const TerminalStyle& style, std::ostream& out) {
  const std::size_t n = content.analysis.processes.size();
  if (n > 1) printAcrossRanks(content, style, out);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 || n > 1) out << '\n';
    printProcessBlock(content, i, style, out);
  }
}

}  // namespace gapwatch::cli
