#!/usr/bin/env bash
# scripts/regenerate-hta-corpus.sh: rewrite the generated Kineto corpus of tests/data/kineto/ and HTA's
# numbers for it (tests/data/kineto/README.md).
#
#   scripts/regenerate-hta-corpus.sh     the traces (tests/data/kineto/make_corpus.py), then for each
#                                        one hta-reference/<trace>.json, from HTA run on it alone
#
# HTA's Python: $GAPWATCH_HTA_PYTHON, else <build>/hta-venv/bin/python (scripts/setup.sh installs
# HTA there; $GAPWATCH_BUILD_DIR, default build/). Review `git diff tests/data/kineto` before
# committing: every changed number is HTA's changed answer on a changed trace.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${GAPWATCH_BUILD_DIR:-$repo_root/build}"
python="${GAPWATCH_HTA_PYTHON:-$build_dir/hta-venv/bin/python}"
corpus="$repo_root/tests/data/kineto"
[[ -x "$python" ]] || { echo "regenerate-hta-corpus.sh: no HTA Python at $python (run scripts/setup.sh, or set GAPWATCH_HTA_PYTHON)" >&2; exit 1; }

python3 "$corpus/make_corpus.py"
mkdir -p "$corpus/hta-reference"
for trace in "$corpus"/*.json.gz; do
  stem="$(basename "$trace" .json.gz)"
  tmp="$(mktemp -d)"
  # HTA reads every trace of a directory as one job: one trace each, in a directory named for it.
  dir="$tmp/$stem"
  mkdir "$dir"
  ln -s "$trace" "$dir/"
  if ! "$python" "$repo_root/tests/unit/hta_parity.py" --hta-reference "$dir" >"$corpus/hta-reference/$stem.json.new"; then
    rm -rf "$tmp" "$corpus/hta-reference/$stem.json.new"
    echo "regenerate-hta-corpus.sh: HTA failed on $trace" >&2
    exit 1
  fi
  mv "$corpus/hta-reference/$stem.json.new" "$corpus/hta-reference/$stem.json"
  rm -rf "$tmp"
  echo "hta-reference/$stem.json"
done
