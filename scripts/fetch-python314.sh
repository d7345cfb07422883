#!/usr/bin/env bash
# scripts/fetch-python314.sh: puts a CPython 3.14 in <build dir>/python3.14, for the Python stack
# tests (tests/interpose/python_stacks_test.py, python_bad_pointer_test.py), which run on every
# interpreter they find. pyenv here stops at 3.13 and neither python.org nor GitHub can be reached
# from these machines; Debian's own build of 3.14 can (its unstable suite, deb.debian.org, as apt
# uses). Its packages are only unpacked (dpkg-deb -x), never installed: the interpreter, its
# standard library and headers, and unstable's glibc with the libraries it links, under
# <build dir>/python3.14/root. It runs through that glibc's own loader, which a wrapper script,
# <build dir>/python3.14/python3.14, names: gapwatch's library, built on this machine's older
# glibc, loads into it as into any newer one. Debian links its python3.14 with libpython
# statically, as it does its 3.11. About 40 MB, a few seconds; offline, or when a package is not
# found, nothing is kept and the 3.14 tests skip. Exits 0 either way; prints one line only when it
# could not fetch.
#
# Usage: fetch-python314.sh <build dir>
set -uo pipefail

build_dir="${1:?usage: fetch-python314.sh <build dir>}"
dest="$build_dir/python3.14"
mirror="${GAPWATCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages=(libc6 libgcc-s1 python3.14-minimal libpython3.14-minimal libpython3.14-stdlib libpython3.14-dev
          libffi8 libexpat1 zlib1g libzstd1 libbz2-1.0 liblzma5 libmpdec4 libuuid1 libcrypt1)

[[ -x "$dest/python3.14" ]] && exit 0

say_left_out() { echo "setup.sh: CPython 3.14 not fetched ($1): the Python stack tests skip 3.14" >&2; }
command -v curl >/dev/null || { say_left_out "no curl"; exit 0; }
command -v dpkg-deb >/dev/null || { say_left_out "no dpkg-deb"; exit 0; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Bounded waits: an offline machine must not hang the setup.
fetch() { curl -sSf --retry 1 --connect-timeout 15 --max-time 300 -o "$2" "$1" 2>"$tmp/curl.log"; }
fetch "$mirror/dists/unstable/main/binary-amd64/Packages.xz" "$tmp/Packages.xz" ||
  { say_left_out "$(tail -n 1 "$tmp/curl.log")"; exit 0; }
xz -dc "$tmp/Packages.xz" >"$tmp/Packages" || { say_left_out "cannot read the package index"; exit 0; }
mkdir -p "$tmp/root"
for package in "${packages[@]}"; do
  file="$(awk -v p="$package" '$1 == "Package:" { current = $2 } $1 == "Filename:" && current == p { print $2; exit }' "$tmp/Packages")"
  [[ -n "$file" ]] || { say_left_out "no package $package in Debian unstable"; exit 0; }
  fetch "$mirror/$file" "$tmp/$package.deb" || { say_left_out "$(tail -n 1 "$tmp/curl.log")"; exit 0; }
  dpkg-deb -x "$tmp/$package.deb" "$tmp/root" || { say_left_out "cannot unpack $package"; exit 0; }
done
[[ -x "$tmp/root/usr/bin/python3.14" ]] || { say_left_out "no python3.14 in the packages"; exit 0; }

rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/root" "$dest/root"
root="$(cd "$dest/root" && pwd)"
cat >"$dest/python3.14" <<WRAPPER
#!/bin/sh
# Debian unstable's python3.14 on its own glibc (scripts/fetch-python314.sh).
exec "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \\
  --library-path "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" "$root/usr/bin/python3.14" "\$@"
WRAPPER
chmod +x "$dest/python3.14"
"$dest/python3.14" -c 'import ctypes, threading' 2>"$tmp/run.log" ||
  { rm -rf "$dest"; say_left_out "it does not run here: $(tail -n 1 "$tmp/run.log")"; exit 0; }
exit 0
