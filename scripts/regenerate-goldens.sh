#!/usr/bin/env bash
# scripts/regenerate-goldens.sh: rewrite the golden reports of tests/golden/ (tests/golden/README.md).
#
#   scripts/regenerate-goldens.sh            the expected reports (<scenario>.report.json), from the
#                                            stored recordings: after an intended change of the report
#   scripts/regenerate-goldens.sh --record [NAME...]
#                                            first record every scenario of examples/scenarios/ anew
#                                            (<scenario>.gwt), or only the scenarios NAME...: after a
#                                            change of the recording format, of a scenario, or a new one
#
# Uses the build in $GAPWATCH_BUILD_DIR (default build/): bin/gapwatch, and for --record
# bin/gapwatch-sim, lib/libgapwatch.so and the simulated CUDA stack. Review `git diff tests/golden`
# before committing: every changed number is a changed answer.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GAPWATCH_BUILD_DIR:-$repo_root/build}"
golden_dir="$repo_root/tests/golden"
gapwatch="$build_dir/bin/gapwatch"

record=0
only=()
case "${1:-}" in
  "") ;;
  --record) record=1; shift; only=("$@") ;;
  *) echo "usage: $0 [--record [NAME...]]" >&2; exit 2 ;;
esac
for name in "${only[@]}"; do
  [[ -f "$repo_root/examples/scenarios/$name.json" ]] || { echo "$0: no scenario examples/scenarios/$name.json" >&2; exit 2; }
done
[[ -x "$gapwatch" ]] || { echo "$0: $gapwatch not built (set GAPWATCH_BUILD_DIR)" >&2; exit 1; }

if (( record )); then
  for tool in "$build_dir/bin/gapwatch-sim" "$build_dir/lib/libgapwatch.so" "$build_dir/simcuda/lib/libcupti.so.13"; do
    [[ -e "$tool" ]] || { echo "$0: $tool not built" >&2; exit 1; }
  done
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  for scenario in "$repo_root"/examples/scenarios/*.json; do
    name="$(basename "$scenario" .json)"
    if (( ${#only[@]} )) && [[ " ${only[*]} " != *" $name "* ]]; then continue; fi
    mkdir -p "$work/$name"
    # Fewer steps keep the stored recordings small; the steps every op needs (the latest from_step,
    # until_step or recompile) are kept.
    python3 "$golden_dir/shorten_scenario.py" "$scenario" > "$work/$name/scenario.json"
    (cd "$work/$name" &&
      env -u CUDA_INJECTION64_PATH LD_PRELOAD="$build_dir/lib/libgapwatch.so" \
        GAPWATCH_CUPTI_PATH="$build_dir/simcuda/lib/libcupti.so.13" GAPWATCH_OUTPUT="$work/$name/" \
        GAPWATCH_LOG=off "$build_dir/bin/gapwatch-sim" scenario.json --quiet)
    rm -f "$golden_dir/$name".gwt "$golden_dir/$name".rank*.gwt
    recordings=("$work/$name"/*.gwt)
    if (( ${#recordings[@]} == 1 )); then
      cp "${recordings[0]}" "$golden_dir/$name.gwt"
    else
      for recording in "${recordings[@]}"; do
        # The rank is in the Hello, the first line of the dump (read to the end: no SIGPIPE).
        rank="$("$gapwatch" dump --json "$recording" |
          python3 -c 'import json,sys; hello=sys.stdin.readline(); sys.stdin.read(); print(json.loads(hello)["rank"])')"
        cp "$recording" "$golden_dir/$name.rank$rank.gwt"
      done
    fi
    echo "recorded $name"
  done
fi

python3 "$golden_dir/golden_report.py" write "$gapwatch"
