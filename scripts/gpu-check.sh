#!/usr/bin/env bash
# scripts/gpu-check.sh: profile small real PyTorch jobs on a machine with an NVIDIA GPU, three
# ways each (plain, under gapwatch, under torch.profiler), and pack everything into one archive.
#
# Run from the repository root, with libgapwatch.so built beforehand on the development machine:
#
#   scripts/gpu-check.sh                      # the whole check, estimated 7 minutes, 520 s at most
#                                             # (runs: 180 s; then the field checks: 310 s)
#   scripts/gpu-check.sh --no-optional        # only the nine core runs
#   scripts/gpu-check.sh --only data_bound,data_fixed   # only these jobs (any of the four)
#   scripts/gpu-check.sh --self-test          # no torch, no GPU: fake jobs, checks the harness itself
#
# It builds nothing, installs nothing and downloads nothing. What it needs on the machine: bash,
# coreutils (timeout), tar, gzip, python3 with PyTorch (CUDA build), an NVIDIA driver; nvidia-smi,
# readelf and nm are used when present. The library is $GAPWATCH_LIB, default
# build/lib/libgapwatch.so; when it is missing the plain and torch.profiler runs still happen.
#
# Settings (environment):
#   GAPWATCH_LIB             the injected library            (build/lib/libgapwatch.so)
#   GAPWATCH_BIN             the gapwatch CLI, used for `gapwatch report` if present (build/bin/gapwatch)
#   OUT                      where the archive goes           (./gpu-check-out/ when unset)
#   GPU_CHECK_PYTHON         the interpreter holding torch    (python3)
#   GPU_CHECK_BUDGET_S       whole-run budget in seconds      (490; a hard stop comes 30 s later)
#   GPU_CHECK_FIELD_S        of it, kept for the field checks (310: Python lines 40, live records
#                            25, launch cost 100, NCCL 60, CUPTI 12 45, collector 40;
#                            scripts/gpu-check/README.md, "Field checks")
#   GPU_CHECK_JOB_TIMEOUT_S  one run's limit in seconds       (60)
#   GPU_CHECK_STEPS          training steps per run           (50, of which 5 are warm-up)
#   GPU_CHECK_SMI            1: sample nvidia-smi GPU-Util during each run (1)
#   GPU_CHECK_HARNESS_SYNC   step: torch.cuda.synchronize() ends every timed step; end: only the loop (step)
#   GPU_CHECK_MAX_ARCHIVE_MB largest archive before traces are dropped (15)
#   GPU_CHECK_FAKE_STEP_MS   --self-test only: a fake step's length, to try timeouts (5)
#
# Exit status: 0 when the harness worked (failed or timed-out runs are reported inside the
# results, not in the exit status); 1 for a usage error or when no archive could be written, and
# with --self-test also when a field check's self-test exited non-zero (python_lines_check.py
# --self-test does unless its verdict is a pass); 130/143 when interrupted (what was done so far is
# packed first).
#
# The results: scripts/gpu-check/README.md. What the check measures: docs/gpu-validation.md.
set -u
set -o pipefail
export LC_ALL=C

script_version=1
invoked_from="$PWD"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$repo_root/scripts/gpu-check"

usage() {
  sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'
}

self_test=0
optional=1
only=""
while (($#)); do
  case "$1" in
    --self-test) self_test=1 ;;
    --no-optional) optional=0 ;;
    --only) shift; only="${1:-}" ;;
    --only=*) only="${1#--only=}" ;;
    -h | --help) usage; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
  shift
done

budget="${GPU_CHECK_BUDGET_S:-490}"
field_s="${GPU_CHECK_FIELD_S:-310}"
job_timeout="${GPU_CHECK_JOB_TIMEOUT_S:-60}"
steps="${GPU_CHECK_STEPS:-50}"
use_smi="${GPU_CHECK_SMI:-1}"
max_archive_mb="${GPU_CHECK_MAX_ARCHIVE_MB:-15}"
harness_sync="${GPU_CHECK_HARNESS_SYNC:-step}"
py="${GPU_CHECK_PYTHON:-python3}"
lib="${GAPWATCH_LIB:-$repo_root/build/lib/libgapwatch.so}"
gw_bin="${GAPWATCH_BIN:-$repo_root/build/bin/gapwatch}"
warmup=5
if ((self_test)); then
  budget="${GPU_CHECK_BUDGET_S:-120}"
  field_s="${GPU_CHECK_FIELD_S:-30}"
  job_timeout="${GPU_CHECK_JOB_TIMEOUT_S:-20}"
  steps="${GPU_CHECK_STEPS:-12}"
  use_smi=0
fi
for v in budget field_s job_timeout steps max_archive_mb; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "gpu-check.sh: $v must be a whole number, got '${!v}'" >&2; exit 1; }
done
[[ "$harness_sync" == step || "$harness_sync" == end ]] ||
  { echo "gpu-check.sh: GPU_CHECK_HARNESS_SYNC must be 'step' or 'end'" >&2; exit 1; }
((steps > warmup + 2)) || { echo "gpu-check.sh: GPU_CHECK_STEPS must be above $((warmup + 2))" >&2; exit 1; }

# The hard stop: run the rest under `timeout`, which sends TERM (the trap below packs what exists)
# and KILL 15 s later. The budget itself is kept by not starting runs that would not fit.
if [[ -z "${GPU_CHECK_INNER:-}" ]] && command -v timeout >/dev/null 2>&1; then
  export GPU_CHECK_INNER=1
  args=()
  ((self_test)) && args+=(--self-test)
  ((optional)) || args+=(--no-optional)
  [[ -n "$only" ]] && args+=(--only "$only")
  exec timeout -s TERM -k 15 "$((budget + 30))" bash "${BASH_SOURCE[0]}" ${args[@]+"${args[@]}"}
fi

cd "$repo_root" || exit 1
command -v timeout >/dev/null 2>&1 || { echo "gpu-check.sh: needs coreutils 'timeout'" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }
now() { date +%s.%N; }

host="$(hostname 2>/dev/null || uname -n)"
host="$(printf '%s' "$host" | tr -c 'A-Za-z0-9._-' '_' | cut -c1-40)"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
name="gpu-check-${host}-${stamp}"
if [[ -n "${OUT:-}" ]]; then
  dest="$OUT"
elif ((self_test)); then
  dest="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-selftest.XXXXXX")"
else
  dest="$invoked_from/gpu-check-out"
fi
mkdir -p "$dest" || { echo "gpu-check.sh: cannot create $dest" >&2; exit 1; }
dest="$(cd "$dest" && pwd)"
stage_parent="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")" || exit 1
stage="$stage_parent/$name"
mkdir -p "$stage/runs"
log="$stage/gpu-check.log"
archive="$dest/$name.tar.gz"

say() { printf '%s\n' "$*" | tee -a "$log"; }
elapsed() { echo $((SECONDS)); }
# The runs leave field_s seconds of the budget to the field checks that follow them.
remaining() {
  local reserve=$field_s
  [[ -n "${in_field_checks:-}" ]] && reserve=0
  echo $((budget - SECONDS - reserve))
}

# ---- packing ---------------------------------------------------------------------------------
# The archive is refreshed after every run (fast gzip), so even a KILL leaves the runs done so far.
pack() {
  local level="${1:-1}" part="$dest/.$name.tar.gz.part"
  if tar -C "$stage_parent" -cf - "$name" 2>>"$stage/pack-errors.txt" | gzip -"$level" >"$part"; then
    mv -f "$part" "$archive"
  else
    rm -f "$part"
    return 1
  fi
}

archive_bytes() { stat -c %s "$archive" 2>/dev/null || echo 0; }

largest() { find "$stage/runs" -type f -name "$1" -printf '%s %p\n' 2>/dev/null | sort -rn | head -n 1 | cut -d' ' -f2-; }

# Drop Kineto traces, the largest first, then recordings, until the archive fits (the device
# runner takes files of 16 MiB at most). What was dropped is named in its run folder.
final_pack() {
  pack 6 || return 1
  local cap=$((max_archive_mb * 1024 * 1024)) tries=0 big
  while (($(archive_bytes) > cap && tries < 12)); do
    big="$(largest 'trace.json.gz')"
    [[ -n "$big" ]] || big="$(largest '*.gwt')"
    [[ -n "$big" ]] || break
    say "archive over ${max_archive_mb} MiB: dropping $(basename "$(dirname "$big")")/$(basename "$big") ($(stat -c %s "$big") bytes)"
    echo "$(basename "$big") ($(stat -c %s "$big") bytes) was dropped to keep the archive under ${max_archive_mb} MiB" \
      >>"$(dirname "$big")/trace.dropped.txt"
    rm -f "$big"
    pack 6 || return 1
    tries=$((tries + 1))
  done
}

# ---- interruption ----------------------------------------------------------------------------
current_pid=""
smi_pid=""
finishing=0
# shellcheck disable=SC2317  # stop_bg and on_signal run from the traps
stop_bg() {
  [[ -n "$current_pid" ]] && kill -TERM "$current_pid" 2>/dev/null
  [[ -n "$smi_pid" ]] && kill -TERM "$smi_pid" 2>/dev/null
  current_pid=""
  smi_pid=""
}
# shellcheck disable=SC2317
on_signal() {
  local sig="$1" code="$2"
  ((finishing)) && exit "$code"
  finishing=1
  say ""
  say "gpu-check.sh: interrupted by SIG$sig after $(elapsed) s; packing what exists"
  stop_bg
  wait 2>/dev/null
  echo "interrupted by SIG$sig after $(elapsed) s" >"$stage/INTERRUPTED"
  if [[ -n "$py_ok" ]]; then
    timeout -k 2 15 "$py" "$here/summarize.py" "$stage" >/dev/null 2>>"$log"
  fi
  pack 1 && say "partial results: $archive"
  rm -rf "$stage_parent"
  exit "$code"
}
py_ok=""
trap 'on_signal TERM 143' TERM
trap 'on_signal INT 130' INT
trap 'on_signal HUP 129' HUP

# ---- environment -----------------------------------------------------------------------------
say "gapwatch GPU check v$script_version: $name"
say "budget ${budget} s (hard stop $((budget + 40)) s), ${job_timeout} s per run, $steps steps per run;" \
  "archive -> $archive"
((self_test)) && say "SELF-TEST: fake jobs (no torch, no GPU); the numbers mean nothing"
say ""
{
  echo "date_utc=$(date -u +%FT%TZ)"
  echo "host=$host"
  echo "script_version=$script_version"
  echo "self_test=$self_test"
  echo "budget_s=$budget"
  echo "job_timeout_s=$job_timeout"
  echo "steps=$steps"
  echo "warmup=$warmup"
  echo "harness_sync=$harness_sync"
  echo "lib=$lib"
  echo "uname=$(uname -a)"
  echo "nproc=$(nproc 2>/dev/null)"
  echo "git_head=$(git -C "$repo_root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "git_dirty_files=$(git -C "$repo_root" status --porcelain 2>/dev/null | wc -l)"
  echo "LD_PRELOAD=${LD_PRELOAD:-}"
  echo "CUDA_INJECTION64_PATH=${CUDA_INJECTION64_PATH:-}"
} >"$stage/environment.txt"
(cd "$repo_root" && sha256sum scripts/gpu-check.sh scripts/gpu-check/*.py) >"$stage/code.sha256" 2>/dev/null
[[ -n "${LD_PRELOAD:-}" ]] && say "warning: LD_PRELOAD is already set ($LD_PRELOAD); it stays for every run"
[[ -n "${CUDA_INJECTION64_PATH:-}" ]] &&
  say "warning: CUDA_INJECTION64_PATH is set ($CUDA_INJECTION64_PATH); it is removed for the runs"

if have nvidia-smi; then
  timeout -k 2 20 nvidia-smi -L 2>&1 | tee -a "$log" "$stage/nvidia-smi.txt"
  timeout -k 2 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
    --format=csv 2>&1 | tee -a "$log" "$stage/nvidia-smi.txt"
  timeout -k 2 20 nvidia-smi >>"$stage/nvidia-smi.txt" 2>&1
else
  say "nvidia-smi: not on PATH"
  use_smi=0
fi
{
  free -m 2>/dev/null
  df -h "$stage_parent" "$repo_root" 2>/dev/null
} >"$stage/machine.txt"

if have "$py"; then
  py_ok=1
  probe_args=(--json "$stage/env.json" --lib "$lib")
  ((self_test)) && probe_args+=(--no-torch)
  timeout -k 5 90 env -u CUDA_INJECTION64_PATH "$py" "$here/env_probe.py" "${probe_args[@]}" 2>&1 |
    tee -a "$log" "$stage/env.txt"
  probe_rc=$?
  ((probe_rc == 0)) || say "env_probe.py: exit $probe_rc (124 = timed out)"
else
  say "python: '$py' not found; no job can run (set GPU_CHECK_PYTHON)"
fi

# What can run: torch? CUDA? the library?
have_torch=0
have_cuda=0
if [[ -n "$py_ok" && -f "$stage/env.json" ]]; then
  flags="$("$py" -c 'import json,sys
t = json.load(open(sys.argv[1])).get("torch", {})
print("%d%d" % (bool(t.get("importable")), t.get("cuda_available") is True))' "$stage/env.json" 2>/dev/null)"
  [[ "${flags:0:1}" == 1 ]] && have_torch=1
  [[ "${flags:1:1}" == 1 ]] && have_cuda=1
elif [[ -n "$py_ok" ]] && ((!self_test)); then
  # the probe died: ask the two questions directly, briefly
  timeout -k 2 45 "$py" -c 'import torch' >/dev/null 2>&1 && have_torch=1
  ((have_torch)) && timeout -k 2 45 "$py" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    >/dev/null 2>&1 && have_cuda=1
fi
have_lib=0
[[ -f "$lib" ]] && have_lib=1
say ""
if ((self_test)); then
  say "plan: fake jobs; gapwatch runs $( ((have_lib)) && echo "preload $lib" || echo "skipped (no library)")"
else
  say "plan: torch $( ((have_torch)) && echo yes || echo NO), CUDA $( ((have_cuda)) && echo yes || echo NO)," \
    "libgapwatch.so $( ((have_lib)) && echo "yes ($lib)" || echo "NOT FOUND at $lib: gapwatch runs are skipped")"
  ((have_torch)) || say "torch is not importable by $py: every job is skipped; the archive holds the environment only"
  ((have_torch && !have_cuda)) && say "CUDA is not available to torch: plain runs on the CPU only (--dry-run), as a harness check; no GPU measurement"
fi

# ---- smoke: the library in processes that never touch CUDA ----------------------------------
if ((have_lib)) && [[ -n "$py_ok" ]]; then
  sd="$stage/smoke"
  mkdir -p "$sd"
  {
    echo "# LD_PRELOAD=$lib in processes that never use CUDA: nothing may break, no .gwt may appear"
    (cd "$sd" && timeout -k 2 20 env LD_PRELOAD="$lib" /bin/true) >"$sd/true.log" 2>&1
    echo "/bin/true rc=$?"
    (cd "$sd" && timeout -k 2 30 env LD_PRELOAD="$lib" "$py" -c 'import os; print("pid", os.getpid())') \
      >"$sd/python.log" 2>&1
    echo "python -c rc=$?"
    (cd "$sd" && timeout -k 2 30 env LD_PRELOAD="$lib" "$py" -c '
import os, sys
pid = os.fork()
if pid == 0:
    os._exit(7)
_, st = os.waitpid(pid, 0)
sys.exit(0 if os.WEXITSTATUS(st) == 7 else 1)') >"$sd/fork.log" 2>&1
    echo "python fork rc=$?"
    echo "files left: $(find "$sd" -mindepth 1 ! -name '*.log' ! -name smoke.txt -printf '%f ')"
  } >"$sd/smoke.txt" 2>&1
  say "smoke (library in non-CUDA processes): $(grep -v '^#' "$sd/smoke.txt" | tr '\n' ';')"
fi
pack 1

# ---- the runs --------------------------------------------------------------------------------
order=0
run_job() {
  local job="$1" mode="$2"
  local id dir tmo rem skip="" t0 t1 rc active
  [[ -n "$only" && ",$only," != *",$job,"* ]] && return 0
  order=$((order + 1))
  id="$(printf '%02d-%s-%s' "$order" "$job" "$mode")"
  dir="$stage/runs/$id"
  mkdir -p "$dir"
  rem=$(($(remaining) - 20))
  if [[ -z "$py_ok" ]]; then
    skip="no python ($py)"
  elif ((!self_test && !have_torch)); then
    skip="torch not importable"
  elif ((!self_test && !have_cuda)) && [[ "$mode" != plain || "$job" == launch_graphed ]]; then
    skip="no CUDA device: only plain CPU runs"
  elif [[ "$mode" =~ ^(gapwatch|both|inject|both_inject)$ ]] && ((!have_lib)); then
    skip="libgapwatch.so not found at $lib"
  elif ((rem < 25)); then
    skip="out of time budget ($(remaining) s left, 20 s of it kept for the summary and the archive)"
  fi
  {
    echo "run=$id"
    echo "job=$job"
    echo "mode=$mode"
    echo "order=$order"
  } >"$dir/meta.txt"
  if [[ -n "$skip" ]]; then
    echo "skipped=$skip" >>"$dir/meta.txt"
    say "$(printf '%-30s skipped: %s' "$id" "$skip")"
    return 0
  fi
  tmo=$job_timeout
  ((rem < tmo)) && tmo=$rem

  # what this mode sets around the python process
  local -a envs=(env -u CUDA_INJECTION64_PATH -u GAPWATCH_OUTPUT PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1)
  local -a pargs=(--job "$job" --label "$mode" --steps "$steps" --warmup "$warmup"
    --harness-sync "$harness_sync" --steps-out "$dir/steps.jsonl")
  case "$mode" in
    gapwatch) envs+=("LD_PRELOAD=$lib${LD_PRELOAD:+:$LD_PRELOAD}" "GAPWATCH_OUTPUT=$dir/rec.gwt") ;;
    inject) envs+=("CUDA_INJECTION64_PATH=$lib") ;; # default output name, in the run folder
    both) envs+=("LD_PRELOAD=$lib${LD_PRELOAD:+:$LD_PRELOAD}" "GAPWATCH_OUTPUT=$dir/rec.gwt") ;;
    both_inject) envs=(env -u GAPWATCH_OUTPUT PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
      "CUDA_INJECTION64_PATH=$lib" "GAPWATCH_OUTPUT=$dir/rec.gwt") ;; # no LD_PRELOAD: no sharing
  esac
  if [[ "$mode" =~ ^(torchprof|both|both_inject)$ ]]; then
    active=5
    [[ "$job" == launch_* ]] && active=3
    pargs+=(--profiler torch --trace-out "$dir/trace.json" --prof-wait "$warmup" --prof-warmup 2
      --prof-active "$active")
  fi
  ((self_test)) && pargs+=(--fake --fake-step-ms "${GPU_CHECK_FAKE_STEP_MS:-5}")
  ((!self_test && !have_cuda)) && pargs+=(--dry-run)

  printf '%s ' "${envs[@]}" "$py" "$here/jobs.py" "${pargs[@]}" >"$dir/cmd.txt"
  echo "timeout_s=$tmo" >>"$dir/meta.txt"
  echo "cmd=$(cat "$dir/cmd.txt")" >>"$dir/meta.txt"

  if ((use_smi)); then
    nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 100 \
      >"$dir/smi.csv" 2>/dev/null &
    smi_pid=$!
  fi
  t0="$(now)"
  (cd "$dir" && exec timeout -k 5 "$tmo" "${envs[@]}" "$py" "$here/jobs.py" "${pargs[@]}") >"$dir/log.txt" 2>&1 &
  current_pid=$!
  wait "$current_pid"
  rc=$?
  current_pid=""
  t1="$(now)"
  if [[ -n "$smi_pid" ]]; then
    kill -TERM "$smi_pid" 2>/dev/null
    wait "$smi_pid" 2>/dev/null
    smi_pid=""
  fi
  local wall timed_out=0 nsteps
  wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
  ((rc == 124 || rc == 137)) && timed_out=1
  nsteps="$(grep -c '"type":"step"' "$dir/steps.jsonl" 2>/dev/null)"
  {
    echo "rc=$rc"
    echo "timed_out=$timed_out"
    echo "wall_s=$wall"
  } >>"$dir/meta.txt"
  say "$(printf '%-30s rc=%-3s %6.1f s  steps %s/%s%s' "$id" "$rc" "$wall" "${nsteps:-0}" "$steps" \
    "$( ((timed_out)) && echo "  TIMED OUT after $tmo s")")"
  if ((rc != 0)); then
    tail -n 6 "$dir/log.txt" 2>/dev/null | sed 's/^/    | /' | tee -a "$log"
  fi
  grep -E '\.gwt|gapwatch[]:]|\[gapwatch' "$dir/log.txt" 2>/dev/null | head -n 2 | sed 's/^/    gapwatch: /' | tee -a "$log"
  pack 1
}

say ""
say "runs (core):"
for job in data_bound data_fixed launch_bound; do
  for mode in plain gapwatch torchprof; do
    run_job "$job" "$mode"
  done
done
if ((optional)); then
  say "runs (optional, while the budget lasts):"
  run_job data_fixed both
  run_job launch_bound inject
  run_job launch_graphed plain
  run_job launch_graphed gapwatch
  run_job launch_bound both
  run_job launch_graphed torchprof
  run_job data_bound both_inject
fi

# ---- field checks: CUPTI, PyTorch and NCCL as they behave on a real GPU (issue 9) --------------
# Each is its own script under scripts/gpu-check/, bounded by its own limit and by what is left;
# each writes into field/<name>/ and exits 0 when its harness worked (README.md, "Field checks").
in_field_checks=0
field_failed=()
field_check() {
  local name="$1" limit="$2"
  shift 2
  local left=$(($(remaining) - 25))
  ((left < limit)) && limit=$left
  if ((limit < 10)); then
    say "$(printf '%-30s skipped: out of time budget' "field/$name")"
    return 0
  fi
  mkdir -p "$stage/field/$name"
  local t0=$SECONDS
  GAPWATCH_LIB="$lib" GAPWATCH_BIN="$gw_bin" GPU_CHECK_PYTHON="$py" \
    timeout -k 5 "$limit" "$@" >"$stage/field/$name/output.txt" 2>&1
  local rc=$?
  say "$(printf '%-30s rc=%s in %s s (limit %s s)' "field/$name" "$rc" "$((SECONDS - t0))" "$limit")"
  ((self_test && rc != 0)) && field_failed+=("$name")
  return 0
}
if [[ -n "$py_ok" ]]; then
  say "field checks:"
  st=()
  ((self_test)) && st=(--self-test)
  # first: the Python stacks of loss.item() and .cpu() (the check this version adds; 10-20 s)
  field_check python_lines 40 "$py" "$here/python_lines_check.py" "$stage/field/python_lines" --budget 35 \
    ${st[@]+"${st[@]}"}
  field_check live_records 25 "$py" "$here/live_records_check.py" "$stage/field/live_records" ${st[@]+"${st[@]}"}
  field_check launch_cost 100 "$py" "$here/launch_cost_check.py" "$stage/field/launch_cost" --budget-s 90 \
    ${st[@]+"${st[@]}"}
  field_check nccl 60 "$py" "$here/nccl_check.py" "$stage/field/nccl" --budget 55 ${st[@]+"${st[@]}"}
  field_check cupti12 45 bash "$here/cupti12_check.sh" "$stage/field/cupti12" ${st[@]+"${st[@]}"}
  field_check collector 40 "$py" "$here/collector_check.py" "$stage/field/collector" --budget 35 \
    ${st[@]+"${st[@]}"}
fi

# ---- gapwatch's own report, where the CLI was carried along ------------------------------------
if [[ -x "$gw_bin" ]] && (($(remaining) > 40)); then
  say ""
  say "gapwatch report ($gw_bin):"
  for f in "$stage"/runs/*/*.gwt "$stage"/runs/*/trace.json.gz; do
    [[ -f "$f" ]] || continue
    (($(remaining) > 30)) || break
    out="$(dirname "$f")/gapwatch-report.txt"
    [[ "$f" == *trace.json.gz ]] && out="$(dirname "$f")/gapwatch-report-trace.txt"
    timeout -k 2 20 "$gw_bin" report "$f" >"$out" 2>&1
    say "  $(basename "$(dirname "$f")")/$(basename "$f"): rc=$?"
  done
else
  echo "gapwatch CLI not run: $gw_bin $([[ -x "$gw_bin" ]] && echo "(no time left)" || echo "is not there")" \
    >"$stage/gapwatch-report-skipped.txt"
fi

# ---- summary and archive ---------------------------------------------------------------------
say ""
if [[ -n "$py_ok" ]]; then
  timeout -k 5 60 "$py" "$here/summarize.py" "$stage" 2>&1 | tee -a "$log"
  sum_rc=${PIPESTATUS[0]}
  ((sum_rc == 0)) || say "summarize.py failed (exit $sum_rc); the raw results are in the archive"
fi
say "total $(elapsed) s"
finishing=1
if final_pack; then
  say "archive: $archive ($(archive_bytes) bytes)"
  say "unpack and analyse on the development machine: see scripts/gpu-check/README.md"
  status=0
else
  echo "gpu-check.sh: could not write $archive (see $stage/pack-errors.txt)" >&2
  status=1
fi
if ((self_test)); then
  tar -tzf "$archive" >/dev/null 2>&1 && say "self-test: archive lists $(tar -tzf "$archive" | wc -l) entries"
  if ((${#field_failed[@]})); then
    say "self-test FAILED: field check(s) ${field_failed[*]} exited non-zero (see field/<name>/output.txt)"
    ((status == 0)) && status=1
  else
    say "self-test: every field check's self-test exited 0"
  fi
fi
if ((status == 0)); then
  rm -rf "$stage_parent"
else
  echo "the unpacked results stay in $stage" >&2
fi
exit "$status"
