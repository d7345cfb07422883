#!/usr/bin/env bash
# scripts/fuzz.sh: build the libFuzzer targets of tests/fuzz/ (README.md there) and run them.
#
#   scripts/fuzz.sh [SECONDS]            build, then run every target for SECONDS (default 60) each,
#                                        one after the other; prints per target its executions per
#                                        second and whether it found anything. Exit 1 if any
#                                        target crashed, hung or failed a check.
#   scripts/fuzz.sh --build              only build (scripts/test.sh does this); says so and exits 0
#                                        where clang or libFuzzer is missing
#   scripts/fuzz.sh --run TARGET SECONDS [--build-dir DIR]
#                                        run one built target (ctest's fuzz.smoke.* tests); exit 77
#                                        where it was not built
#
# The fuzz tree is its own CMake build directory, configured with clang and -DGAPWATCH_FUZZ=ON:
# $GAPWATCH_FUZZ_BUILD_DIR, default <GAPWATCH_BUILD_DIR or build>-fuzz (build-fuzz/). In it:
#   bin/<target>_fuzz        the fuzzers
#   seeds/<target>/          the seed inputs, copied from tests/golden/*.gwt (the byte readers),
#                            examples/scenarios/*.json and tests/simcuda/workload/bad/*.json, or
#                            tests/fuzz/seeds/kineto_trace/ (cuts of the shared Kineto traces)
#   corpus/<target>/         what the fuzzer found worth keeping; kept between runs
#   artifacts/<target>/      crashing, hanging (timeout-*) and out-of-memory inputs
#   logs/                    build logs and each run's libFuzzer output
# A crash's input becomes a regression test: copy it to tests/fuzz/regressions/<target>/, where
# ctest's fuzz.replay.<target> replays it on every scripts/test.sh run.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz_dir="${GAPWATCH_FUZZ_BUILD_DIR:-${GAPWATCH_BUILD_DIR:-$repo_root/build}-fuzz}"
jobs="${JOBS:-$(nproc)}"
targets=(frame_decoder stream_decoder_fast_path recording_reader scenario_parser collector_connection kineto_trace)
# A single input running this long is a hang (a normal one takes milliseconds, under ASan, on a slow
# machine); libFuzzer then saves it as artifacts/<target>/timeout-*.
per_input_timeout_s=25

die() { echo "fuzz.sh: error: $*" >&2; exit 1; }
usage() { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

# Why this machine cannot build the fuzzers, or nothing when it can.
toolchain_missing() {
  local cxx="${GAPWATCH_FUZZ_CXX:-clang++}"
  if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "$cxx not found (Debian: clang)"
    return
  fi
  local probe
  probe="$(mktemp -d)"
  printf '%s\n' '#include <cstddef>' '#include <cstdint>' \
    'extern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }' >"$probe/probe.cpp"
  if ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" >/dev/null 2>&1; then
    echo "$cxx cannot link -fsanitize=fuzzer (Debian: libfuzzer-14-dev)"
  fi
  rm -rf "$probe"
}

build() {
  local log_dir="$fuzz_dir/logs"
  mkdir -p "$log_dir"
  if [[ ! -f "$fuzz_dir/CMakeCache.txt" ]]; then
    local cxx="${GAPWATCH_FUZZ_CXX:-clang++}" cc="${GAPWATCH_FUZZ_CC:-clang}"
    local generator=()
    command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
    if command -v ccache >/dev/null 2>&1; then
      generator+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    fi
    cmake -S "$repo_root" -B "$fuzz_dir" "${generator[@]}" -DGAPWATCH_FUZZ=ON \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      >"$log_dir/configure.log" 2>&1 || {
      cat "$log_dir/configure.log" >&2
      die "cmake configure of the fuzz tree failed (log: $log_dir/configure.log)"
    }
  fi
  # As setup.sh: relative paths in ccache's keys, so that another folder's build hits.
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$repo_root}"
  cmake --build "$fuzz_dir" -j"$jobs" >"$log_dir/build.log" 2>&1 || {
    tail -n 60 "$log_dir/build.log" >&2
    die "fuzz build failed (full log: $log_dir/build.log)"
  }
}

# Fills seeds/<target>/ with copies of its seed files (again on every run: the sources may change).
prepare_seeds() {
  local target="$1" seeds="$fuzz_dir/seeds/$1"
  rm -rf "$seeds"
  mkdir -p "$seeds"
  if [[ "$target" == scenario_parser ]]; then
    cp "$repo_root"/examples/scenarios/*.json "$seeds/"
    cp "$repo_root"/tests/simcuda/workload/bad/*.json "$seeds/"
  elif [[ "$target" == kineto_trace ]]; then
    cp "$repo_root"/tests/fuzz/seeds/kineto_trace/* "$seeds/"
  else
    cp "$repo_root"/tests/golden/*.gwt "$seeds/"
  fi
  local regressions="$repo_root/tests/fuzz/regressions/$target"
  if [[ -d "$regressions" ]]; then
    find "$regressions" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$seeds/" \;
  fi
}

# Runs one target for $2 seconds; prints one summary line; returns 1 if it found something.
run_target() {
  local target="$1" seconds="$2"
  local binary="$fuzz_dir/bin/${target}_fuzz"
  local corpus="$fuzz_dir/corpus/$target" artifacts="$fuzz_dir/artifacts/$target"
  local log="$fuzz_dir/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$fuzz_dir/logs"
  prepare_seeds "$target"
  local dict=()
  [[ -f "$repo_root/tests/fuzz/$target.dict" ]] && dict=(-dict="$repo_root/tests/fuzz/$target.dict")
  local rc=0
  # New inputs go to the first folder (corpus/), the seeds are only read. -max_total_time bounds
  # the run; -timeout catches a hang; -rss_limit_mb an input that eats memory. libFuzzer's own
  # exit code for a finding is 77, ctest's "skipped": 1 (2 for a hang) instead.
  "$binary" -max_total_time="$seconds" -timeout="$per_input_timeout_s" -rss_limit_mb=2048 \
    -error_exitcode=1 -timeout_exitcode=2 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
    "$corpus" "$fuzz_dir/seeds/$target" >"$log" 2>&1 || rc=$?
  local runs execs
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  execs="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
  local found
  found="$(sed -n 's/.*Test unit written to //p' "$log" | tr '\n' ' ')"
  if (( rc == 0 )); then
    printf '%-26s %4ss  %9s runs  %6s exec/s  found nothing\n' "$target" "$seconds" "${runs:-?}" "${execs:-?}"
    return 0
  fi
  printf '%-26s %4ss  %9s runs  %6s exec/s  FOUND A PROBLEM (exit %d): %s\n' "$target" "$seconds" \
    "${runs:-?}" "${execs:-?}" "$rc" "${found:-see $log}"
  grep -m 3 -E '^==[0-9]+==ERROR|fuzz check failed|runtime error|ALARM|out-of-memory|deadly signal' "$log" |
    sed 's/^/    /' || true
  echo "    log: $log"
  return 1
}

run_one() {
  local target="$1" seconds="$2"
  [[ -x "$fuzz_dir/bin/${target}_fuzz" ]] || {
    echo "fuzz.sh: skipped: $fuzz_dir/bin/${target}_fuzz is not built ($(toolchain_missing || true))"
    exit 77
  }
  run_target "$target" "$seconds"
}

case "${1:-}" in
  --build)
    (( $# == 1 )) || usage
    missing="$(toolchain_missing)"
    if [[ -n "$missing" ]]; then
      echo "fuzz targets: SKIPPED: $missing; the fuzz.smoke.* tests will be skipped"
      exit 0
    fi
    build
    exit 0
    ;;
  --run)
    (( $# == 3 || $# == 5 )) || usage
    target="$2" seconds="$3"
    if (( $# == 5 )); then
      [[ "$4" == --build-dir ]] || usage
      fuzz_dir="$5"
    fi
    [[ " ${targets[*]} " == *" $target "* ]] || die "unknown target $target (${targets[*]})"
    [[ "$seconds" =~ ^[0-9]+$ ]] || usage
    run_one "$target" "$seconds"
    exit $?
    ;;
  -h|--help) usage ;;
esac

seconds="${1:-60}"
(( $# <= 1 )) && [[ "$seconds" =~ ^[0-9]+$ ]] || usage
missing="$(toolchain_missing)"
[[ -z "$missing" ]] || die "cannot build the fuzzers: $missing"
echo "building the fuzz targets in $fuzz_dir"
build
echo "running each target for $seconds s (logs: $fuzz_dir/logs/, crashing inputs: $fuzz_dir/artifacts/)"
status=0
for target in "${targets[@]}"; do
  run_target "$target" "$seconds" || status=1
done
if (( status )); then
  echo "fuzz.sh: a target found a problem; its input is in $fuzz_dir/artifacts/<target>/"
fi
exit "$status"
