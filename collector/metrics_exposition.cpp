// collector/metrics_exposition.cpp: see metrics_exposition.h.
#include "collector/metrics_exposition.h"

#include "analysis/gap_histogram.h"
#include "analysis/process_summary.h"
#include "analysis/sync_points.h"

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string_view>

#include <gapwatch/utf8_text.h>

namespace gapwatch::collector {
namespace {

// Writes one family at a time: its HELP and TYPE lines, then its samples, each with the labels of
// the process (and device) it belongs to.
class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  // labels: the text between the braces, already escaped ("" for none).
  void sample(std::string_view name, const std::string& labels, const std::string& value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }

  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

std::string label(const char* name, const std::string& value) {
  return std::string(name) + "=\"" + labelValue(value) + "\"";
}

std::string processLabels(const ProcessStatus& p) {
  return label("rank", p.rank ? std::to_string(*p.rank) : std::string()) + "," +
         label("pid", std::to_string(p.pid)) + "," + label("host", p.host) + "," + label("file", p.file);
}

std::string deviceLabels(const ProcessStatus& p, const analysis::DeviceAnalysis& d) {
  return processLabels(p) + "," + label("device", std::to_string(d.device));
}

std::string with(const std::string& labels, const char* name, const std::string& value) {
  return labels + "," + label(name, value);
}

uint64_t windowNs(const analysis::DeviceAnalysis& d) {
  return d.window_end_ns > d.window_start_ns ? d.window_end_ns - d.window_start_ns : 0;
}

}  // namespace

std::string secondsText(uint64_t ns) {
  std::string text = std::to_string(ns / 1'000'000'000ull);
  const uint64_t fraction = ns % 1'000'000'000ull;
  if (fraction == 0) return text;
  std::string digits = std::to_string(fraction);
  digits.insert(0, 9 - digits.size(), '0');
  digits.erase(digits.find_last_not_of('0') + 1);
  return text + "." + digits;
}

// A 0..1 fraction in the exposition's float syntax: six significant digits are what a dashboard shows.
std::string ratioText(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", fraction);
  return text;
}

std::string labelValue(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      const std::size_t n = utf8SequenceAt(text, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
        ++i;
      } else {
        out.append(text, i, n);
        i += n;
      }
      continue;
    }
    ++i;
  }
  return out;
}

std::string metricsExposition(const CollectorStatus& status) {
  Writer w;
  const auto& processes = status.processes;
  const auto count = [](uint64_t n) { return std::to_string(n); };

  w.family("gapwatch_idle_seconds_total", "counter",
           "Device idle time (in the device's window, no kernel, copy or memset running), by cause.");
  for (const ProcessStatus& p : processes) {
    for (const analysis::DeviceAnalysis& d : p.analysis.devices) {
      const std::string labels = deviceLabels(p, d);
      for (std::size_t c = 0; c < analysis::kIdleCauseCount; ++c) {
        w.sample("gapwatch_idle_seconds_total",
                 with(labels, "cause", analysis::idleCauseName(static_cast<analysis::IdleCause>(c))),
                 secondsText(d.idle_by_cause_ns[c]));
      }
    }
  }
  w.family("gapwatch_busy_seconds_total", "counter",
           "Device busy time: the union of its kernels, copies and memsets.");
  for (const ProcessStatus& p : processes) {
    for (const analysis::DeviceAnalysis& d : p.analysis.devices) {
      w.sample("gapwatch_busy_seconds_total", deviceLabels(p, d), secondsText(d.busy_ns));
    }
  }
  w.family("gapwatch_window_seconds_total", "counter",
           "Device window: its first activity's start to its last activity's end (busy + idle).");
  for (const ProcessStatus& p : processes) {
    for (const analysis::DeviceAnalysis& d : p.analysis.devices) {
      w.sample("gapwatch_window_seconds_total", deviceLabels(p, d), secondsText(windowNs(d)));
    }
  }

  w.family("gapwatch_gap_seconds", "histogram",
           "Device idle gaps by length; le is a log2 bucket's exclusive bound less 1 ns, _sum their idle time.");
  for (const ProcessStatus& p : processes) {
    for (const analysis::DeviceAnalysis& d : p.analysis.devices) {
      const std::string labels = deviceLabels(p, d);
      uint64_t cumulative = 0;
      for (std::size_t b = 0; b + 1 < GapHistogram::kBucketCount; ++b) {
        cumulative += d.gaps.bucket(b).count;
        w.sample("gapwatch_gap_seconds_bucket", with(labels, "le", secondsText(GapHistogram::upperNs(b) - 1)),
                 count(cumulative));
      }
      w.sample("gapwatch_gap_seconds_bucket", with(labels, "le", "+Inf"), count(d.gaps.count()));
      w.sample("gapwatch_gap_seconds_sum", labels, secondsText(d.gaps.totalNs()));
      w.sample("gapwatch_gap_seconds_count", labels, count(d.gaps.count()));
    }
  }

  w.family("gapwatch_sync_points_total", "counter",
           "Host calls that waited for the device, by type (query_polling: polling loops).");
  for (const ProcessStatus& p : processes) {
    const std::string labels = processLabels(p);
    for (const analysis::SyncTypeStats& s : p.analysis.sync_points) {
      w.sample("gapwatch_sync_points_total", with(labels, "type", syncPointKey(s.kind)), count(s.count));
    }
  }
  w.family("gapwatch_sync_blocked_seconds_total", "counter",
           "Time host calls spent waiting for the device, by sync point type.");
  for (const ProcessStatus& p : processes) {
    const std::string labels = processLabels(p);
    for (const analysis::SyncTypeStats& s : p.analysis.sync_points) {
      w.sample("gapwatch_sync_blocked_seconds_total", with(labels, "type", syncPointKey(s.kind)),
               secondsText(s.total_ns));
    }
  }

  w.family("gapwatch_launches_total", "counter", "Kernel and graph launch calls joined to their device work.");
  for (const ProcessStatus& p : processes) {
    w.sample("gapwatch_launches_total", processLabels(p), count(p.analysis.launches.launches));
  }
  w.family("gapwatch_nccl_comm_seconds_total", "counter", "Time NCCL kernels ran (the union of their intervals).");
  for (const ProcessStatus& p : processes) {
    w.sample("gapwatch_nccl_comm_seconds_total", processLabels(p), secondsText(p.analysis.nccl.comm_ns));
  }
  w.family("gapwatch_nccl_host_seconds_total", "counter", "Host time in NCCL calls, by operation.");
  for (const ProcessStatus& p : processes) {
    const std::string labels = processLabels(p);
    for (const analysis::NcclTypeStats& n : p.analysis.nccl.by_type) {
      w.sample("gapwatch_nccl_host_seconds_total", with(labels, "op", n.op), secondsText(n.host_ns));
    }
  }
  w.family("gapwatch_events_total", "counter", "Events the collector received from the process.");
  for (const ProcessStatus& p : processes) {
    w.sample("gapwatch_events_total", processLabels(p), count(p.events));
  }
  w.family("gapwatch_drops_total", "counter",
           "Events the process's recorder lost (its own counters); non-zero means the numbers undercount.");
  for (const ProcessStatus& p : processes) {
    w.sample("gapwatch_drops_total", processLabels(p), count(p.drops));
  }

  w.family("gapwatch_steps_total", "counter", "Training steps found (markers or a recurring pattern).");
  for (const ProcessStatus& p : processes) {
    w.sample("gapwatch_steps_total", processLabels(p), count(p.analysis.steps.steps));
  }
  w.family("gapwatch_step_seconds", "gauge", "Median step time; present only once a complete step is known.");
  for (const ProcessStatus& p : processes) {
    if (p.analysis.steps.steps > 0 && p.analysis.steps.median_ns > 0) {
      w.sample("gapwatch_step_seconds", processLabels(p), secondsText(p.analysis.steps.median_ns));
    }
  }

  // The finding the report's verdict names (analysis/process_summary.h): the same thing as
  // `gapwatch watch`'s TOP FINDING and the report's cross-rank table, so that a dashboard cannot
  // name another cause than the report does.
  w.family("gapwatch_top_finding_idle_fraction", "gauge",
           "The process's top finding (the one its report's verdict names), by id and the idle cause it stands "
           "for: the share of the process's idle time it explains. Absent while no finding passes its threshold.");
  for (const ProcessStatus& p : processes) {
    if (const std::optional<analysis::TopFinding> top = analysis::topFinding(p.analysis)) {
      w.sample("gapwatch_top_finding_idle_fraction",
               with(with(processLabels(p), "finding", top->id), "cause", top->cause), ratioText(top->idle_share));
    }
  }

  w.family("gapwatch_process_running", "gauge", "1 while the process is connected, 0 once it has ended.");
  uint64_t running = 0;
  for (const ProcessStatus& p : processes) {
    w.sample("gapwatch_process_running", processLabels(p), p.running ? "1" : "0");
    if (p.running) ++running;
  }
  w.family("gapwatch_processes", "gauge", "Processes this collector has seen, by state.");
  w.sample("gapwatch_processes", label("state", "running"), count(running));
  w.sample("gapwatch_processes", label("state", "ended"), count(processes.size() - running));
  return w.take();
}

}  // namespace gapwatch::collector
