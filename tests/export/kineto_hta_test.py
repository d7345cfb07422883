"""gapwatch export --format kineto of the multi-rank scenario nccl-bound (rank0, rank1; recorded on
the simulated CUDA stack) into a directory, one trace per rank: HTA loads it, and its temporal
breakdown per rank equals gapwatch report --hta's of the same traces, within the tolerances of
tests/unit/hta_parity.py (0.1 percentage point, times within 0.1% of the kernel time). Skipped
(exit 77) where HTA is not installed: scripts/setup.sh puts it in <build>/hta-venv, or
GAPWATCH_HTA_PYTHON names a Python that has it."""
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "unit"))
import export_trace  # noqa: E402
import gwtest  # noqa: E402
import hta_parity  # noqa: E402


def hta_python():
    if os.environ.get("GAPWATCH_HTA_PYTHON"):
        return os.environ["GAPWATCH_HTA_PYTHON"]
    return os.path.join(gwtest.BUILD, "hta-venv", "bin", "python")


def main():
    python = hta_python()
    probe = subprocess.run([python, "-c", "import hta.trace_analysis"], capture_output=True, text=True) \
        if os.path.exists(python) else None
    if probe is None or probe.returncode != 0:
        print("SKIP: HTA cannot be imported by %s (scripts/setup.sh installs it, or set GAPWATCH_HTA_PYTHON)"
              % python)
        return export_trace.SKIP
    with tempfile.TemporaryDirectory() as workdir:
        recordings = export_trace.record(os.path.join(gwtest.SCENARIOS, "nccl-bound.json"), workdir)
        if len(recordings) != 2:
            print("FAIL: nccl-bound gave %d recordings, expected 2" % len(recordings))
            return 1
        traces = os.path.join(workdir, "traces")
        export_trace.export(recordings, "kineto", traces)
        files = sorted(glob.glob(os.path.join(traces, "*.json")))
        if len(files) != 2:
            print("FAIL: %d Kineto traces in %s, expected 2" % (len(files), traces))
            return 1
        script = ("import json, sys; sys.path.insert(0, %r); import hta_parity; "
                  "print(json.dumps(hta_parity.reference_from_hta(%r)))" % (os.path.join(HERE, "..", "unit"), traces))
        run = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=900)
        if run.returncode != 0:
            print("FAIL: HTA could not load the export: %s" % run.stderr.strip()[-2000:])
            return 1
        reference = json.loads(run.stdout.strip().splitlines()[-1])
        report = export_trace.report(files, "--hta")
        failures = []
        want = hta_parity.reference_by_rank(reference)
        if sorted(want) != [0, 1]:
            failures.append("HTA found ranks %s, expected [0, 1]" % sorted(want))
        for process in report["processes"]:
            rank = process.get("rank")
            if rank not in want:
                failures.append("rank %s of the report is not in HTA's" % rank)
                continue
            got, ref = process["hta"]["temporal_breakdown"], want[rank]["temporal"]
            kernel = ref["kernel_time(us)"] or 1
            for ours, theirs in hta_parity.TEMPORAL_TIMES:
                if abs(got[ours] - ref[theirs]) > 0.001 * kernel:
                    failures.append("rank %d %s: gapwatch %s, HTA %s" % (rank, ours, got[ours], ref[theirs]))
            for key in hta_parity.TEMPORAL_PCTGS:
                if abs(got[key] - ref[key]) > hta_parity.PCTG_POINTS + 1e-9:
                    failures.append("rank %d %s: gapwatch %s, HTA %s" % (rank, key, got[key], ref[key]))
            print("rank %d: gapwatch %s, HTA %s" % (rank, json.dumps(got), json.dumps(ref)))
        for failure in failures:
            print("FAIL: " + failure)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
