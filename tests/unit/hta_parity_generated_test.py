"""HTA parity beyond the six shared traces: `gapwatch report --json --hta` against a live HTA on
traces generated from seeds (kineto_trace_generator.py), with the tolerances of hta_parity.py.

    hta_parity_generated_test.py GAPWATCH BUILD_DIR [FIRST_SEED COUNT]

The generated traces vary what HTA's rules turn on (0 to 5 ProfilerSteps, integer and float
times, overlapping records, sync records, graph launches, kernels without a call, GPU work that
starts before its call), so they cover cases the six real traces do not. gapwatch is asked for
the rules of the HTA release that runs (--hta-release). HTA's Python: GAPWATCH_HTA_PYTHON, else
BUILD_DIR/hta-venv/bin/python (scripts/setup.sh puts it there), else this Python. Where HTA
cannot be imported the test says so and exits 77 (ctest: skipped).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hta_parity  # noqa: E402
import kineto_trace_generator  # noqa: E402
from hta_parity_test import hta_python  # noqa: E402

SKIP = 77


def main(argv):
    gapwatch, build_dir = argv[1], argv[2]
    first, count = (int(argv[3]), int(argv[4])) if len(argv) > 4 else (1, 30)
    python = hta_python(build_dir)
    probe = subprocess.run([python, "-c", "import hta.trace_analysis; "
                            # hta.version, not the distribution's metadata: HTA 0.6.1 is
                            # published as `traceinsight`, 0.5.0 as `holistictraceanalysis`.
                            "from hta.version import __version__; print(__version__)"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        print(f"skipped: HTA (traceinsight or holistictraceanalysis) cannot be imported by {python}; scripts/setup.sh installs "
              "it into <build>/hta-venv, or set GAPWATCH_HTA_PYTHON")
        return SKIP
    version = probe.stdout.strip()
    release = "0.5.0" if version.startswith("0.5") else "0.6.1"
    print(f"HTA {version} from {python}: gapwatch --hta-release {release}")
    module = os.path.join(HERE, "hta_parity.py")
    failures = []
    for seed in range(first, first + count):
        with tempfile.TemporaryDirectory() as trace_dir:
            path = os.path.join(trace_dir, f"generated_{seed}.json.gz")
            kineto_trace_generator.main(["", str(seed), path])
            hta = subprocess.run([python, module, "--hta-reference", trace_dir], capture_output=True, text=True,
                                 timeout=600)
            if hta.returncode != 0:
                failures.append(f"seed {seed}: HTA failed (exit {hta.returncode}): {hta.stderr.strip()[-300:]}")
                continue
            reference = json.loads(hta.stdout)
            run = subprocess.run([gapwatch, "report", "--json", "--hta", "--hta-release", release, path],
                                 capture_output=True, text=True, timeout=300)
            if run.returncode != 0:
                failures.append(f"seed {seed}: gapwatch exit {run.returncode}: {run.stderr.strip()[:300]}")
                continue
            report = json.loads(run.stdout)
        found = hta_parity.compare_report(report, reference, f"seed {seed}")
        h = report["processes"][0]["hta"]
        print(f"seed {seed}: {h['profiler_steps']} steps, cut {h['cut']}, {h['gpu_events']} GPU records kept, "
              f"{'ok' if not found else str(len(found)) + ' differences'}")
        failures += found
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
