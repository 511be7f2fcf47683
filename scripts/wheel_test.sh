#!/usr/bin/env bash
# CI: what a new user gets. Build the wheel, install it into a fresh virtualenv with that
# Python's *stock* pip (no upgrade, no constraints file), run `pagetrail demo` from it, and
# fail unless it agrees with the world's truth at least as often as the project's own
# environment does (scripts/demo.sh). Catches undeclared dependencies and extras that an
# old pip resolves to nothing (the answers then look like results, only worse).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${PAGETRAIL_VENV:-.venv}
bash scripts/setup.sh
work=$(mktemp -d /tmp/pagetrail-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== wheel"
"$VENV/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$work/dist" .
wheel=$(ls "$work"/dist/pagetrail-*.whl)

echo "== fresh venv, stock pip"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip --version
"$work/venv/bin/python" -m pip install -q "$wheel"
"$work/venv/bin/pagetrail" --version
"$work/venv/bin/python" -m pip check

agreement() {  # the demo's last line: "N of M answers agree with the world's truth."
  sed -n 's/^\([0-9][0-9]*\) of \([0-9][0-9]*\) answers agree.*/\1 \2/p' "$1" | tail -n 1
}

echo "== pagetrail demo (fresh install)"
# Run outside the checkout so that nothing of the source tree can stand in for the wheel.
(cd "$work" && "$work/venv/bin/pagetrail" demo) > "$work/fresh.txt"
echo "== pagetrail demo (project environment, as scripts/demo.sh)"
"$VENV/bin/pagetrail" demo > "$work/reference.txt"

read -r fresh total < <(agreement "$work/fresh.txt") || true
read -r reference _ < <(agreement "$work/reference.txt") || true
echo "fresh install: ${fresh:-?} of ${total:-?} agree; project environment: ${reference:-?}"
if [ -z "${fresh:-}" ] || [ -z "${reference:-}" ] || [ "$fresh" -lt "$reference" ]; then
  echo "wheel test failed: the fresh install agrees less often than the project environment" >&2
  tail -n 20 "$work/fresh.txt" >&2
  exit 1
fi
