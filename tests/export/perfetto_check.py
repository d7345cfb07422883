"""Reads a Perfetto trace written by gapwatch export packet by packet with Perfetto's own schema
and checks that it is well formed; prints, as JSON, the numbers recomputed from the packets.

Run with the python of a venv that has the PyPI package `perfetto` (export_trace.perfetto_python).
Usage: perfetto_check.py TRACE.pftrace FILE... (the inputs, in export order: a process's index in
the export names its file). Exits 1 with one line per problem."""
import json
import re
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

SLICE_BEGIN, SLICE_END = pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END
DEVICE_WORK = ("kernel", "gpu_memcpy", "gpu_memset")


def read_varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def packets(data):
    """Each TracePacket's bytes: Trace is `repeated TracePacket packet = 1`, length-delimited."""
    at = 0
    while at < len(data):
        tag, at = read_varint(data, at)
        if tag != (1 << 3 | 2):
            raise ValueError("offset %d: tag %d is not Trace.packet" % (at, tag))
        size, at = read_varint(data, at)
        if at + size > len(data):
            raise ValueError("offset %d: packet of %d bytes runs past the end" % (at, size))
        yield data[at:at + size]
        at += size


def unknown_fields(message, path="TracePacket"):
    """The paths of fields that Perfetto's schema does not declare (a wrong field number)."""
    from google.protobuf import unknown_fields as unknown
    found = ["%s.#%d" % (path, f.field_number) for f in unknown.UnknownFieldSet(message)]
    for field, value in message.ListFields():
        if field.message_type is None:
            continue
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        values = value if repeated else [value]
        for item in values:
            found += unknown_fields(item, path + "." + field.name)
    return found


def main():
    trace_path, files = sys.argv[1], sys.argv[2:]
    with open(trace_path, "rb") as f:
        data = f.read()
    problems = []
    tracks = {}       # uuid -> descriptor
    processes = {}    # uuid -> pid
    last_ts = {}      # track uuid -> last timestamp
    open_slices = {}  # track uuid -> stack of (ts, category, name)
    flows_started, flows_ended = set(), set()
    device_intervals = {}  # (file, device) -> [(start, end)]
    kernels = {}
    gaps = {}
    count = 0
    clocks = set()  # timestamp_clock_id of the timed packets (0: none named)
    for raw in packets(data):
        count += 1
        packet = pb.TracePacket()
        packet.ParseFromString(raw)  # raises on bytes that do not fit Perfetto's schema
        if packet.HasField("timestamp"):
            clocks.add(packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else 0)
        if unknown_fields(packet):
            problems.append("packet %d: fields Perfetto's schema does not know: %s" % (count, unknown_fields(packet)))
        if not packet.HasField("trusted_packet_sequence_id"):
            problems.append("packet %d: no trusted_packet_sequence_id" % count)
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            if d.uuid in tracks or d.uuid in processes:
                problems.append("packet %d: track uuid %d declared twice" % (count, d.uuid))
            if d.HasField("process"):
                if d.process.pid in processes.values():
                    problems.append("packet %d: two processes with pid %d" % (count, d.process.pid))
                processes[d.uuid] = d.process.pid
                continue
            if d.HasField("thread"):
                parent = next((u for u, pid in processes.items() if pid == d.thread.pid), None)
                if parent is None:
                    problems.append("packet %d: thread of an unknown pid %d" % (count, d.thread.pid))
            else:
                parent = d.parent_uuid
                if parent not in processes:
                    problems.append("packet %d: track %d under unknown parent %d" % (count, d.uuid, parent))
            tracks[d.uuid] = (parent, d.name or d.thread.thread_name)
            continue
        if not packet.HasField("track_event"):
            problems.append("packet %d: neither a track descriptor nor a track event" % count)
            continue
        e = packet.track_event
        if e.track_uuid not in tracks:
            problems.append("packet %d: event on undeclared track %d" % (count, e.track_uuid))
            continue
        ts = packet.timestamp
        if ts < last_ts.get(e.track_uuid, 0):
            problems.append("packet %d: time %d before the track's previous %d" % (count, ts, last_ts[e.track_uuid]))
        last_ts[e.track_uuid] = ts
        stack = open_slices.setdefault(e.track_uuid, [])
        if e.type == SLICE_BEGIN:
            if not e.name:
                problems.append("packet %d: a slice without a name" % count)
            stack.append((ts, e.categories[0] if e.categories else "", e.name))
            for flow in e.flow_ids:
                if flow in flows_started:
                    problems.append("packet %d: flow %d started twice" % (count, flow))
                flows_started.add(flow)
            for flow in e.terminating_flow_ids:
                if flow not in flows_started or flow in flows_ended:
                    problems.append("packet %d: flow %d ends without its start, or twice" % (count, flow))
                flows_ended.add(flow)
        elif e.type == SLICE_END:
            if not stack:
                problems.append("packet %d: slice end with no open slice on track %d" % (count, e.track_uuid))
                continue
            start, category, name = stack.pop()
            parent, track_name = tracks[e.track_uuid]
            index = (parent >> 32) - 1
            if not 0 <= index < len(files):
                problems.append("packet %d: process uuid %d names no input" % (count, parent))
                continue
            match = re.match(r"GPU (\d+) ", track_name)
            if category in DEVICE_WORK or category == "idle_gap":
                if not match:
                    problems.append("packet %d: device work on track %r" % (count, track_name))
                    continue
                key = "%s/%s" % (files[index], match.group(1))
                if category == "idle_gap":
                    gaps[key] = gaps.get(key, 0) + ts - start
                else:
                    device_intervals.setdefault(key, []).append((start, ts))
                    if category == "kernel":
                        kernels[key] = kernels.get(key, 0) + 1
        else:
            problems.append("packet %d: unexpected event type %d" % (count, e.type))
    for uuid, stack in open_slices.items():
        if stack:
            problems.append("track %d: %d slices never end" % (uuid, len(stack)))
    # A launch whose work is not in the input (after a trace's window, or dropped) starts a flow
    # that never ends: Perfetto draws no arrow for it. A flow end without its start is an error.
    if not processes:
        problems.append("no process track")
    busy = {}
    for key, intervals in device_intervals.items():
        total, end = 0, None
        for a, b in sorted(intervals):
            if end is None or a > end:
                total, end = total + b - a, b
            elif b > end:
                total, end = total + b - end, b
        busy[key] = total
    print(json.dumps({"packets": count, "problems": problems[:20], "busy_ns": busy, "kernels": kernels,
                      "idle_ns": gaps, "flows": len(flows_started),
                      "flows_unended": len(flows_started - flows_ended), "tracks": len(tracks),
                      "clocks": sorted(clocks)}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
