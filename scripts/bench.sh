#!/usr/bin/env bash
# Runs the benchmarks under bench/ and prints their figures side by side, as ratios. Not a test:
# nothing here passes or fails on a number. Record what it prints in docs/performance.md, with
# the command.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
python3 bench/launch_cost.py --build build       # gapwatch's own ns per launch, on the bench-only trio
python3 bench/launch_storm.py --build build      # 4 threads launching back to back: drops per run
python3 bench/launch_overhead.py --build build   # bytes per event, on the simulated runtime
python3 bench/python_stack_cost.py --build build   # blocking calls from Python: no gapwatch, GAPWATCH_PY_STACKS=0, stacks
python3 bench/python_sampler_cost.py --build build  # the Python sampler: CPU per sampled second and per sample; a busy GPU on/off
python3 bench/analysis_throughput.py --build build
python3 bench/live_records.py --build build
GAPWATCH_BUILD_DIR="$PWD/build" python3 bench/collector_ingest.py   # 8 producers into one collector, live analysis vs offline
python3 bench/kineto_import_bench.py --build build   # Kineto traces: HTA vs gapwatch vs simdjson; peak RSS on a ~1 GB trace
