#!/usr/bin/env bash
# scripts/gen-python-layouts.sh: write interpose/python_layouts.inc, the table of CPython struct
# offsets that the injected library's Python stack walk reads (interpose/python_layout.h).
#
#   scripts/gen-python-layouts.sh [PREFIX...]
#
# Each PREFIX is an installed CPython 3.10 to 3.14 (default build, x86-64) with its headers,
# internal ones included, in PREFIX/include/python3.X. Without arguments: the pyenv interpreters
# /root/.pyenv/versions/{3.10.13,3.11.7,3.12.1,3.13.0} (or $PYENV_ROOT/versions/...) and Debian's
# 3.14 in build/python3.14/root/usr (scripts/fetch-python314.sh), those of them that are installed. scripts/gen-python-layouts/layout_probe.c is compiled against each and prints
# its line; one interpreter per minor version. Commit the .inc it writes: the build does not run this.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
probe_src="$repo_root/scripts/gen-python-layouts/layout_probe.c"
out="$repo_root/interpose/python_layouts.inc"
cc="${CC:-cc}"

prefixes=("$@")
if [[ ${#prefixes[@]} -eq 0 ]]; then
  pyenv_root="${PYENV_ROOT:-/root/.pyenv}"
  for version in 3.10.13 3.11.7 3.12.1 3.13.0; do
    [[ -d "$pyenv_root/versions/$version" ]] && prefixes+=("$pyenv_root/versions/$version")
  done
  # 3.14: Debian's, unpacked by scripts/fetch-python314.sh (pyenv here stops at 3.13).
  [[ -d "$repo_root/build/python3.14/root/usr/include/python3.14" ]] && prefixes+=("$repo_root/build/python3.14/root/usr")
  [[ ${#prefixes[@]} -gt 0 ]] || { echo "$0: no pyenv interpreter under $pyenv_root/versions; name prefixes" >&2; exit 2; }
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

declare -A line_of_minor=()
declare -A source_of_minor=()
for prefix in "${prefixes[@]}"; do
  # The one python3.10 .. python3.14 include directory of the prefix (python3.13t, free-threaded,
  # has other layouts and is not matched).
  includes=()
  for dir in "$prefix"/include/python3.1[0-4]; do
    [[ -f "$dir/Python.h" && -d "$dir/internal" ]] && includes+=("$dir")
  done
  if [[ ${#includes[@]} -ne 1 ]]; then
    echo "$0: $prefix: expected one include/python3.10..3.14 with internal/ headers, found ${#includes[@]}" >&2
    exit 1
  fi
  inc="${includes[0]}"
  minor="${inc##*python3.}"
  if [[ -n "${line_of_minor[$minor]:-}" ]]; then
    echo "$0: two interpreters of 3.$minor: ${source_of_minor[$minor]} and $prefix" >&2
    exit 1
  fi
  # -I PREFIX/include too: Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>.
  "$cc" -std=c11 -O0 -Wall -Werror -DPy_BUILD_CORE -I"$inc" -I"$inc/internal" -I"$prefix/include" \
    -o "$work/probe$minor" "$probe_src"
  line="$("$work/probe$minor")"
  [[ "$line" == "{$minor, "* ]] || { echo "$0: $inc: the probe printed: $line" >&2; exit 1; }
  line_of_minor[$minor]="$line"
  source_of_minor[$minor]="$prefix"
done

command="scripts/gen-python-layouts.sh"
[[ $# -gt 0 ]] && command+=" $*"
{
  echo "// interpose/python_layouts.inc: GENERATED, do not edit. Rewrite it with:"
  echo "//   $command"
  echo "// offsetof() on each interpreter's own headers (scripts/gen-python-layouts/layout_probe.c), from:"
  for minor in $(printf '%s\n' "${!line_of_minor[@]}" | sort -n); do
    echo "//   3.$minor: ${source_of_minor[$minor]#"$repo_root"/}"
  done
  echo "// Fields in the order of struct PythonLayout (python_layout.h); one line per minor version, in order."
  for minor in $(printf '%s\n' "${!line_of_minor[@]}" | sort -n); do
    echo "${line_of_minor[$minor]}"
  done
} >"$work/python_layouts.inc"
mv "$work/python_layouts.inc" "$out"
echo "wrote $out (3.$(printf '%s\n' "${!line_of_minor[@]}" | sort -n | paste -sd, | sed 's/,/, 3./g'))"
