"""`gapwatch report --hta` on gapwatch's own recordings (the golden .gwt files): HTA's view is there
only when asked for, and it agrees with what the recording holds.

    report_hta_recording_test.py GAPWATCH GOLDEN_DIR

A recording without step markers is HTA's "no ProfilerStep" case: every device record whose call
was recorded is kept, so the kept count equals the report's device activities, and HTA's kernel
time (first start rounded up to the last end rounded down, in whole microseconds, sync records
included) spans at least the device window of gapwatch's own view, less the two roundings.
"""
import json
import subprocess
import sys

GAPWATCH, GOLDEN = sys.argv[1], sys.argv[2]
failures = []


def report(*args):
    done = subprocess.run([GAPWATCH, "report", *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"gapwatch report {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


for name in ["healthy", "data-bound", "launch-bound", "sync-bound"]:
    path = f"{GOLDEN}/{name}.gwt"
    plain = json.loads(report("--json", path))["processes"][0]
    if plain.get("hta", "missing") is not None:
        failures.append(f"{name}: without --hta, processes[0].hta is {plain.get('hta', 'missing')!r}, not null")
    if "HTA view" in report(path):
        failures.append(f"{name}: the text report has an HTA block without --hta")
    if "HTA view" not in report("--hta", path):
        failures.append(f"{name}: the text report with --hta has no HTA block")

    p = json.loads(report("--json", "--hta", path))["processes"][0]
    h = p["hta"]
    if h is None:
        failures.append(f"{name}: --hta gave no hta block")
        continue
    if h["cut"] != "all" or h["profiler_steps"] != 0:
        failures.append(f"{name}: a recording without step markers has cut {h['cut']!r}, {h['profiler_steps']} steps")
    if h["gpu_events"] + h["gpu_events_dropped"] != p["events"]["device_activities"]:
        failures.append(f"{name}: kept {h['gpu_events']} + dropped {h['gpu_events_dropped']} != "
                        f"{p['events']['device_activities']} device activities")
    if h["gpu_events"] == 0:
        failures.append(f"{name}: no GPU record kept")
    window_ns = sum(d["window_ns"] for d in p["devices"])
    # HTA's window also spans sync records, which gapwatch's own does not count as device work, so
    # it is at least gapwatch's window (less the two roundings) and within the recording.
    kernel_ns = h["temporal_breakdown"]["kernel_time_us"] * 1000
    if len(p["devices"]) == 1 and not (window_ns - 2000 <= kernel_ns <= p["recorded_ns"]):
        failures.append(f"{name}: HTA kernel time {kernel_ns} ns is outside [{window_ns} ns (the device "
                        f"window) - 2 us, {p['recorded_ns']} ns (the recording)]")
    t = h["temporal_breakdown"]
    # Where HTA itself would fail its non_compute_time >= 0 assertion (records under 1 us, which
    # the launch-bound scenarios have, round to a length of -1), the report says so and shows 0.
    if t["hta_raises"]:
        if not (t["non_compute_time_us"] == 0 and t["idle_time_us"] + t["compute_time_us"] > t["kernel_time_us"]):
            failures.append(f"{name}: hta_raises, but non-compute is not the negative rest shown as 0: {t}")
    elif t["idle_time_us"] + t["compute_time_us"] + t["non_compute_time_us"] != t["kernel_time_us"]:
        failures.append(f"{name}: idle + compute + non-compute != kernel time: {t}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
