#!/usr/bin/env bash
# scripts/prepare-debian-root.sh: puts a clean Debian 12 root in <build dir>/_deps/debian12-root for
# the .deb's install test (tests/install/deb_install_test.py), which copies it, installs gapwatch's
# package there with dpkg and runs it, all offline. The root is `debootstrap --variant=minbase
# bookworm` plus, in its /var/cache/apt/archives, the .deb files of gapwatch's runtime
# dependencies that minbase lacks: the Debian packages of the libraries build/bin/gapwatch needs
# (its NEEDED entries, as dpkg-shlibdeps finds them for the package), with their own dependencies.
#
# Once: about 1.5 to 2 min and 200 MB (debootstrap from deb.debian.org: 85 s on a 2-core machine;
# the dependencies: 15 s, 3 MB). A later run checks the dependency list when gapwatch was relinked
# and downloads again only when it changed. Offline, without root, without debootstrap, or with
# GAPWATCH_SKIP_DEBIAN_ROOT=1, nothing is made: the test is skipped and says so. Exits 0 either
# way; prints one line only when it could not make the root.
#
# Usage: prepare-debian-root.sh <build dir>  (after the build: it reads build/bin/gapwatch)
set -uo pipefail

build_dir="${1:?usage: prepare-debian-root.sh <build dir>}"
root="$build_dir/_deps/debian12-root"
mirror="${GAPWATCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

[[ "${GAPWATCH_SKIP_DEBIAN_ROOT:-0}" == 1 ]] && exit 0

say_left_out() { echo "setup.sh: Debian 12 root not prepared ($1): the .deb install test will be skipped" >&2; }

# The Debian packages that hold the libraries gapwatch (and gapwatchd, the same binary) needs.
runtime_packages() {
  local lib path owner owners=""
  for lib in $(readelf -d "$build_dir/bin/gapwatch" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path="$(ldconfig -p | awk -v lib="$lib" '$1 == lib && /x86-64/ { print $NF; exit }')"
    [[ -n "$path" ]] || return 1
    # dpkg -S knows a file by the path its package installed (/usr/lib/... or /lib/...).
    owner="$(dpkg -S "$path" 2>/dev/null || dpkg -S "$(readlink -f "$path")" 2>/dev/null)" || return 1
    owners+="${owner%%:*}"$'\n'
  done
  printf '%s' "$owners" | sort -u
}

[[ -x "$build_dir/bin/gapwatch" ]] || { say_left_out "no $build_dir/bin/gapwatch"; exit 0; }
# Made already, and gapwatch not relinked since: its dependencies cannot have changed.
[[ -f "$root/.gapwatch-packages" && "$root/.gapwatch-packages" -nt "$build_dir/bin/gapwatch" ]] && exit 0
[[ $EUID -eq 0 ]] || { say_left_out "not root: debootstrap and chroot need it"; exit 0; }
command -v debootstrap >/dev/null 2>&1 || { say_left_out "no debootstrap"; exit 0; }
packages="$(runtime_packages)" || { say_left_out "cannot tell the Debian packages of gapwatch's libraries"; exit 0; }

# Made already, with the same dependencies downloaded.
if [[ -f "$root/.gapwatch-packages" && "$(cat "$root/.gapwatch-packages")" == "$packages" ]]; then
  touch "$root/.gapwatch-packages"
  exit 0
fi

# A failed debootstrap can leave the root's /proc and /sys mounted: never delete through a mount.
remove_root() {
  umount "$root/proc" "$root/sys" 2>/dev/null
  rm -rf --one-file-system "$root"
}
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if [[ ! -f "$root/.gapwatch-debootstrap-done" ]]; then
  # Offline, say so in seconds rather than after debootstrap's own retries.
  if ! timeout 60 wget -q --tries=1 --timeout=15 -O /dev/null "$mirror/dists/bookworm/Release" 2>/dev/null; then
    say_left_out "cannot reach $mirror"
    exit 0
  fi
  remove_root
  mkdir -p "$(dirname "$root")"
  # A bounded wait: an offline machine must not hang the setup.
  if ! timeout 900 debootstrap --variant=minbase bookworm "$root" "$mirror" >"$log" 2>&1; then
    say_left_out "debootstrap failed: $(tail -n 1 "$log")"
    remove_root
    exit 0
  fi
  touch "$root/.gapwatch-debootstrap-done"
fi
# In the root's own apt, so the versions are bookworm's and each dependency's own come along.
# /proc for apt's helpers, in a mount namespace of its own: it goes when the command ends.
# shellcheck disable=SC2086  # one package per word
if ! timeout 600 unshare --fork --pid --mount-proc="$root/proc" chroot "$root" sh -c \
       "apt-get update -qq && apt-get clean &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --download-only --no-install-recommends $(echo $packages)" \
       >"$log" 2>&1; then
  say_left_out "apt-get install --download-only in the root failed: $(tail -n 1 "$log")"
  exit 0
fi
# The package lists (about 70 MB) are not needed to install what was downloaded.
rm -rf "$root"/var/lib/apt/lists/*
echo "$packages" >"$root/.gapwatch-packages"
