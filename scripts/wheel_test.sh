#!/usr/bin/env bash
# CI: what a new user gets. Build the sdist and the wheel (`python -m build`: the wheel is
# built from the sdist, so a file missing from the sdist fails here) and check their metadata
# (`twine check --strict`). Install the wheel into a fresh virtualenv with that Python's
# *stock* pip (no upgrade, no constraints file): the core must stay light (its distributions
# are counted), name the extra a missing face needs, and with [testbed] run `pagetrail demo`,
# agreeing with the world's truth at least as often as the project's own environment does
# (scripts/demo.sh). Then `pipx install` and `uvx --from` the same wheel. Catches undeclared
# dependencies and extras that an old pip resolves to nothing (the answers then look like
# results, only worse).
#
# Network: only pip reaches the package index (PyPI or the configured mirror), as for any
# user; pipx and uv are given a local wheelhouse that pip downloaded (--no-index).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${PAGETRAIL_VENV:-.venv}
# `pip list` lines of a fresh install of the core, pip and setuptools included; the figure
# measured when the extras were split out (README "Install"). Raise it only on purpose.
CORE_MAX=${PAGETRAIL_CORE_MAX:-78}
bash scripts/setup.sh
work=$(mktemp -d /tmp/pagetrail-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== python -m build (sdist, then the wheel from it) + twine check"
"$VENV/bin/python" -m build --no-isolation -o "$work/dist" . > "$work/build.log" 2>&1 \
  || { tail -n 30 "$work/build.log" >&2; exit 1; }
"$VENV/bin/python" -m twine check --strict "$work"/dist/*
wheel=$(ls "$work"/dist/pagetrail-*.whl)

echo "== fresh venv, stock pip: the core"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip --version
"$work/venv/bin/python" -m pip install -q "$wheel"
"$work/venv/bin/pagetrail" --version
"$work/venv/bin/python" -m pip check
count=$("$work/venv/bin/python" -m pip list --format=freeze | wc -l)
echo "core: $count distributions in pip list (pip and setuptools included; at most $CORE_MAX)"
if [ "$count" -gt "$CORE_MAX" ]; then
  echo "wheel test failed: the core grew to $count distributions (limit $CORE_MAX)" >&2
  "$work/venv/bin/python" -m pip list >&2
  exit 1
fi

echo "== the core names the extra a face needs"
set +e
(cd "$work" && "$work/venv/bin/pagetrail" serve slack) 2> "$work/slack.txt"
status=$?
set -e
cat "$work/slack.txt"
if [ "$status" != 2 ] || ! grep -q "install pagetrail\[slack\]" "$work/slack.txt"; then
  echo "wheel test failed: \`serve slack\` without [slack] must name the extra, exit 2" >&2
  exit 1
fi

echo "== what each extra adds (pip's dry run in the core venv)"
for extra in slack workers postgres charts testbed train all; do
  "$work/venv/bin/python" -m pip install -q --dry-run --report "$work/report.json" \
    "$wheel[$extra]" > /dev/null
  added=$("$work/venv/bin/python" -c 'import json, sys
print(sum(1 for i in json.load(open(sys.argv[1]))["install"]
          if i["metadata"]["name"].lower() != "pagetrail"))' "$work/report.json")
  echo "[$extra]: +$added distributions"
done

echo "== [testbed]: pagetrail demo (fresh install)"
"$work/venv/bin/python" -m pip install -q "$wheel[testbed]"
"$work/venv/bin/python" -m pip check

agreement() {  # the demo's last line: "N of M answers agree with the world's truth."
  sed -n 's/^\([0-9][0-9]*\) of \([0-9][0-9]*\) answers agree.*/\1 \2/p' "$1" | tail -n 1
}

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

echo "== pipx install and uvx --from the wheel"
# pipx and uv come from the index through pip, into a throw-away venv; the core's
# distributions are downloaded by pip into a wheelhouse, which both then use offline.
"$PYTHON" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q pipx uv
# Wheels, not sdists: a package published only as an sdist (wordninja) is built here once.
"$work/venv/bin/python" -m pip wheel -q -w "$work/wheelhouse" "$wheel"
printf '# Notes\n\nNo links here.\n' > "$work/notes.md"
export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx-bin" PIPX_MAN_DIR="$work/pipx-man"
"$work/tools/bin/pipx" install --python "$PYTHON" \
  --pip-args="--no-index --find-links=$work/wheelhouse" "$wheel"
"$work/pipx-bin/pagetrail" --version
(cd "$work" && PAGETRAIL_DATA_DIR="$work/pipx-data" "$work/pipx-bin/pagetrail" fix notes.md)
export UV_CACHE_DIR="$work/uv-cache" UV_PYTHON_DOWNLOADS=never UV_TOOL_DIR="$work/uv-tools"
"$work/tools/bin/uvx" --python "$PYTHON" --no-index --find-links "$work/wheelhouse" \
  --from "$wheel" pagetrail --version
(cd "$work" && PAGETRAIL_DATA_DIR="$work/uv-data" "$work/tools/bin/uvx" --python "$PYTHON" \
  --no-index --find-links "$work/wheelhouse" --from "$wheel" pagetrail fix notes.md)
echo "== the Action's install step (action.yml) as a runner runs it"
# Its own checkout into a venv of its own (pip builds it from source, as on the runner).
mkdir -p "$work/runner"
: > "$work/runner/path"
: > "$work/runner/env"
install=$("$VENV/bin/python" -c 'import yaml
print(yaml.safe_load(open("action.yml"))["runs"]["steps"][0]["run"])')
RUNNER_TEMP="$work/runner" GITHUB_PATH="$work/runner/path" GITHUB_ENV="$work/runner/env" \
  ACTION_PATH="$PWD" PAGETRAIL_VERSION="" bash -ec "$install"
"$(cat "$work/runner/path")/pagetrail" --version
grep -qx "PAGETRAIL_DATA_DIR=$work/runner/pagetrail-store" "$work/runner/env"
echo "wheel test passed"
