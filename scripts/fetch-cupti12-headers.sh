#!/usr/bin/env bash
# scripts/fetch-cupti12-headers.sh: puts CUPTI 12.9's headers in <build dir>/_deps/cupti12/include.
#
# libgapwatch.so reads CUPTI 12 activity records by their own struct layouts, so it is compiled
# against CUPTI 12's headers as well as the toolkit's (CUDA 13). NVIDIA ships them in the PyPI
# wheel nvidia-cuda-cupti-cu12 (nvidia/cuda_cupti/include/); only that folder is kept. Offline, or
# without pip, nothing is fetched and the build leaves CUPTI 12 support out (CMake says so).
# Exits 0 either way; prints one line only when it could not fetch them.
#
# Usage: fetch-cupti12-headers.sh <build dir>
set -uo pipefail

build_dir="${1:?usage: fetch-cupti12-headers.sh <build dir>}"
dest="$build_dir/_deps/cupti12"
spec="nvidia-cuda-cupti-cu12==12.9.*"

[[ -f "$dest/include/cupti_version.h" ]] && exit 0

say_left_out() { echo "setup.sh: CUPTI 12 headers not fetched ($1): CUPTI 12 support is left out of this build" >&2; }

python="$(command -v python3 || true)"
[[ -n "$python" ]] || { say_left_out "no python3"; exit 0; }
"$python" -m pip --version >/dev/null 2>&1 || { say_left_out "no pip"; exit 0; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# A bounded wait: an offline machine must not hang the build.
if ! timeout 180 "$python" -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check --retries 1 --timeout 15 \
     --dest "$tmp" "$spec" >"$tmp/pip.log" 2>&1; then
  say_left_out "pip download $spec failed: $(tail -n 1 "$tmp/pip.log")"
  exit 0
fi
wheel="$(ls "$tmp"/*.whl 2>/dev/null | head -n 1)"
[[ -n "$wheel" ]] || { say_left_out "no wheel downloaded"; exit 0; }
mkdir -p "$dest.partial"
if ! "$python" - "$wheel" "$dest.partial" <<'EOF'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "nvidia/cuda_cupti/include/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not any(n.endswith("/cupti_version.h") for n in names):
        sys.exit("the wheel has no " + prefix + "cupti_version.h")
    for n in names:
        target = out + "/include/" + n[len(prefix):]
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(z.read(n))
EOF
then
  rm -rf "$dest.partial"
  say_left_out "could not unpack $(basename "$wheel")"
  exit 0
fi
echo "$(basename "$wheel")" >"$dest.partial/wheel.txt"
rm -rf "$dest"
mv "$dest.partial" "$dest"
