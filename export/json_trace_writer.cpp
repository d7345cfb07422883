// export/json_trace_writer.cpp: see json_trace_writer.h.
#include "export/json_trace_writer.h"

#include <cstdio>
#include <string>

#include <gapwatch/utf8_text.h>

namespace gapwatch::exporter {

namespace {

// Names come from outside and need not be UTF-8: one escaper for all JSON gapwatch writes by hand.
void appendEscaped(std::string& out, const std::string& text) { appendJsonString(out, text); }

// Nanoseconds as microseconds with three decimals: exact, and what Kineto writes.
void appendMicros(std::string& out, uint64_t ns) {
  out += std::to_string(ns / 1000);
  char fraction[8];
  std::snprintf(fraction, sizeof fraction, ".%03u", unsigned(ns % 1000));
  out += fraction;
}

}  // namespace

JsonTraceWriter::JsonTraceWriter(std::ostream& out, JsonFlavour flavour) : out_(out), flavour_(flavour) {
  out_ << "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [";
}

void JsonTraceWriter::beginEvent() {
  out_ << (first_event_ ? "\n    " : ",\n    ");
  first_event_ = false;
}

void JsonTraceWriter::metadata(const char* what, uint64_t pid, uint64_t tid, bool has_tid, const std::string& name) {
  line_.clear();
  line_ += "{\"ph\": \"M\", \"name\": \"";
  line_ += what;
  line_ += "\", \"pid\": " + std::to_string(pid);
  if (has_tid) line_ += ", \"tid\": " + std::to_string(tid);
  line_ += ", \"args\": {\"name\": ";
  appendEscaped(line_, name);
  line_ += "}}";
  beginEvent();
  out_ << line_;
}

void JsonTraceWriter::process(uint64_t /*uuid*/, uint32_t pid, int32_t rank, const std::string& name) {
  ++processes_;
  if (rank >= 0) rank_ = rank;
  metadata("process_name", pid, 0, false, name);
}

void JsonTraceWriter::track(const TrackInfo& track) {
  Place place{track.pid, track.id, track.kind};
  if (flavour_ == JsonFlavour::kKineto) {
    if (track.kind == TrackKind::kIdleGaps || track.kind == TrackKind::kSyncPoints) return;  // not written
    if (track.kind == TrackKind::kDeviceStream) {
      // As Kineto lays device work out: the device is the pid, the stream the tid.
      place.pid = track.device;
      place.tid = track.id;
      if (!device_named_[track.device]) {
        device_named_[track.device] = true;
        metadata("process_name", place.pid, 0, false, "GPU " + std::to_string(track.device));
      }
      metadata("thread_name", place.pid, place.tid, true, "stream " + std::to_string(track.id));
      places_[track.uuid] = place;
      return;
    }
  }
  if (track.kind != TrackKind::kHostThread) place.tid = next_made_up_tid_++;
  metadata("thread_name", place.pid, place.tid, true, track.name);
  places_[track.uuid] = place;
}

void JsonTraceWriter::slice(const Slice& slice) {
  const auto found = places_.find(slice.track);
  if (found == places_.end()) return;  // a track this flavour does not write
  const Place& place = found->second;
  const bool device_work = place.kind == TrackKind::kDeviceStream;
  // HTA rounds a start up and an end down to whole microseconds: a zero-length record (a 4-byte
  // copy) that starts inside a microsecond gets a negative duration there, and HTA's temporal
  // breakdown fails an assertion. Kineto only: such a record starts at its whole microsecond (it
  // is no device activity, so no busy time moves).
  uint64_t start_ns = slice.start_ns;
  if (flavour_ == JsonFlavour::kKineto && device_work && slice.end_ns == slice.start_ns) start_ns -= start_ns % 1000;
  line_.clear();
  line_ += "{\"ph\": \"X\", \"cat\": \"";
  line_ += sliceCategoryName(slice.category);
  line_ += "\", \"name\": ";
  appendEscaped(line_, slice.name);
  line_ += ", \"pid\": " + std::to_string(place.pid) + ", \"tid\": " + std::to_string(place.tid) + ", \"ts\": ";
  appendMicros(line_, start_ns);
  line_ += ", \"dur\": ";
  appendMicros(line_, slice.end_ns - slice.start_ns);
  line_ += ", \"args\": {";
  bool first_arg = true;
  auto arg = [&](const std::string& name) {
    if (!first_arg) line_ += ", ";
    first_arg = false;
    appendEscaped(line_, name);
    line_ += ": ";
  };
  if (device_work) {
    arg("device");
    line_ += std::to_string(slice.device);
    arg("stream");
    line_ += std::to_string(slice.stream);
  }
  for (const SliceArg& a : slice.args) {
    arg(a.name);
    if (a.is_text) {
      appendEscaped(line_, a.text);
    } else {
      line_ += std::to_string(a.number);
    }
  }
  line_ += "}}";
  beginEvent();
  out_ << line_;
  if (flavour_ == JsonFlavour::kChrome && (slice.flow_out || slice.flow_in)) {
    // A flow step binds to the slice that encloses it on its thread: "s" at the launch's start,
    // "f" with "bp": "e" at the kernel's start.
    line_.clear();
    line_ += slice.flow_out ? "{\"ph\": \"s\"" : "{\"ph\": \"f\", \"bp\": \"e\"";
    line_ += ", \"cat\": \"launch\", \"name\": \"launch\", \"id\": " +
             std::to_string(slice.flow_out ? slice.flow_out : slice.flow_in);
    line_ += ", \"pid\": " + std::to_string(place.pid) + ", \"tid\": " + std::to_string(place.tid) + ", \"ts\": ";
    appendMicros(line_, slice.start_ns);
    line_ += "}";
    beginEvent();
    out_ << line_;
  }
}

bool JsonTraceWriter::finish() {
  out_ << "\n  ]";
  if (flavour_ == JsonFlavour::kKineto && rank_ >= 0) {
    out_ << ",\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " << rank_ << "}";
  }
  out_ << ",\n  \"displayTimeUnit\": \"ns\"\n}\n";
  out_.flush();
  return bool(out_);
}

}  // namespace gapwatch::exporter
