#!/usr/bin/env bash
# scripts/gpu-check/cupti12_check.sh: does gapwatch record through a CUDA 12 CUPTI (libcupti.so.12,
# what cu12 PyTorch wheels carry) on a real GPU?
#
#   cupti12_check.sh <results dir>               # on the GPU machine, 45 s at most
#   cupti12_check.sh <results dir> --self-test   # no GPU, no torch: the simulated CUDA stack of
#                                                # the build (simcuda/), to check the harness
#
# Looks for a CUPTI 12: a pip-installed nvidia/cuda_cupti/lib/libcupti.so.12 in the site-packages
# of $GPU_CHECK_PYTHON (python3), then /usr/local/cuda-12*/ (extras/CUPTI/lib64, lib64,
# targets/*/lib). With none, writes "no CUPTI 12 on this machine" and stops. With one, runs
# cupti12_probe.py (ctypes on libcuda.so.1: 20 launches, a memset, a copy) under gapwatch twice:
#   path         GAPWATCH_CUPTI_PATH names the CUPTI 12;
#   loaded_first the program loads the CUPTI 12 itself before CUDA starts, GAPWATCH_CUPTI_PATH unset:
#                gapwatch must use that copy and map no second libcupti.
# Results in <results dir>/cupti12/: result.txt (key=value lines, the verdict first), each run's
# recording (.gwt), its `gapwatch dump --json` (when the CLI is there), stdout and stderr.
# Exit status 0 when the harness worked, whatever it found; 1 on a usage error.
#
# Settings: GAPWATCH_LIB (build/lib/libgapwatch.so), GAPWATCH_BIN (build/bin/gapwatch),
# GPU_CHECK_PYTHON (python3).
set -u
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$repo_root/scripts/gpu-check"
results="${1:-}"
self_test=0
[[ "${2:-}" == "--self-test" || "${1:-}" == "--self-test" ]] && self_test=1
[[ "$results" == "--self-test" ]] && results="${2:-}"
[[ -n "$results" ]] || { echo "usage: cupti12_check.sh <results dir> [--self-test]" >&2; exit 1; }
out="$results/cupti12"
mkdir -p "$out" || { echo "cupti12_check.sh: cannot create $out" >&2; exit 1; }
lib="${GAPWATCH_LIB:-$repo_root/build/lib/libgapwatch.so}"
gw_bin="${GAPWATCH_BIN:-$repo_root/build/bin/gapwatch}"
py="${GPU_CHECK_PYTHON:-python3}"
result="$out/result.txt"
: >"$result"
note() { echo "$1=$2" >>"$result"; }
started=$SECONDS

note self_test "$self_test"
env_extra=()
candidates=()
if ((self_test)); then
  build="${GAPWATCH_BUILD_DIR:-$repo_root/build}"
  # The simulated stack: its libcuda.so.1 first on the loader's path, its libcupti.so.12.
  env_extra=(LD_LIBRARY_PATH="$build/simcuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  candidates=("$build/simcuda/cupti12/libcupti.so.12")
else
  while IFS= read -r site; do
    [[ -n "$site" ]] && candidates+=("$site/nvidia/cuda_cupti/lib/libcupti.so.12")
  done < <(timeout 10 "$py" -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
  for root in /usr/local/cuda-12*; do
    for d in extras/CUPTI/lib64 lib64 targets/x86_64-linux/lib targets/sbsa-linux/lib; do
      candidates+=("$root/$d/libcupti.so.12")
    done
  done
fi
cupti=""
for c in "${candidates[@]}"; do
  if [[ -e "$c" ]]; then cupti="$c"; break; fi
done
if [[ -z "$cupti" ]]; then
  sed -i '1i verdict=no CUPTI 12 on this machine' "$result"
  note looked_in "${candidates[*]:-nothing}"
  echo "cupti12_check: no CUPTI 12 on this machine"
  exit 0
fi
note cupti "$cupti"
note cupti_real "$(readlink -f "$cupti")"
if [[ ! -f "$lib" ]]; then
  sed -i "1i verdict=libgapwatch.so not found at $lib: nothing run" "$result"
  exit 0
fi

ok_verdict="device records through CUPTI 12"
verdict="$ok_verdict"
fail() { [[ "$verdict" == "$ok_verdict" ]] && verdict="FAILED: $1"; }  # the first failure is the verdict
for run in path loaded_first; do
  gwt="$out/$run.gwt"
  rm -f "$gwt"
  args=()
  run_env=(env)
  if [[ $run == path ]]; then
    run_env+=(GAPWATCH_CUPTI_PATH="$cupti")
  else
    run_env=(env -u GAPWATCH_CUPTI_PATH)
    args=(--load-first "$cupti")
  fi
  run_env+=("${env_extra[@]}" LD_PRELOAD="$lib" GAPWATCH_OUTPUT="$gwt")
  # 15 s: the program takes about a second; a hang must not eat the check's 45 s.
  timeout 15 "${run_env[@]}" "$py" "$here/cupti12_probe.py" "${args[@]}" >"$out/$run.stdout" 2>"$out/$run.stderr"
  note "${run}_exit" "$?"
  note "${run}_program" "$(tail -n 1 "$out/$run.stdout")"
  if [[ ! -s "$gwt" ]]; then
    note "${run}_recording" "none"
    fail "no recording ($run)"
    continue
  fi
  if [[ -x "$gw_bin" ]]; then
    timeout 10 "$gw_bin" dump --json "$gwt" >"$out/$run.dump.jsonl" 2>"$out/$run.dump.stderr"
    summary="$("$py" - "$out/$run.dump.jsonl" "$cupti" <<'EOF'
import collections, json, os, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
hello = next((e for e in events if e.get("type") == "hello"), {})
kinds = collections.Counter(e.get("kind") for e in events if e.get("type") == "activity")
print("cupti_version=%s" % hello.get("cupti_version"))
print("cupti_unavailable=%s" % hello.get("cupti_unavailable", ""))
print("device_records=%s" % dict(kinds))
ok = kinds.get("kernel", 0) >= 20 and kinds.get("memcpy", 0) >= 1 and kinds.get("memset", 0) >= 1
print("ok=%d" % ok)
EOF
)"
    while IFS= read -r line; do note "${run}_${line%%=*}" "${line#*=}"; done <<<"$summary"
    grep -q '^ok=1$' <<<"$summary" || fail "not every device record arrived ($run)"
  else
    note "${run}_recording" "$(stat -c %s "$gwt") bytes (no gapwatch CLI at $gw_bin to read it)"
    [[ "$verdict" == "$ok_verdict" ]] && verdict="recorded; not read (no gapwatch CLI)"
  fi
  if [[ $run == loaded_first ]]; then
    mapped="$("$py" -c 'import json,sys; print(len(json.loads(sys.argv[1]).get("libcupti_mapped", [])))' \
               "$(tail -n 1 "$out/$run.stdout")" 2>/dev/null || echo "?")"
    note loaded_first_libcupti_copies "$mapped"
    [[ "$mapped" == 1 ]] || fail "$mapped libcupti copies mapped (loaded_first)"
  fi
done
sed -i "1i verdict=$verdict" "$result"
note seconds "$((SECONDS - started))"
echo "cupti12_check: $verdict"
exit 0
