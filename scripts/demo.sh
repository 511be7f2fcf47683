#!/usr/bin/env bash
# Set up, then recover the dead links of the bundled offline demo world (pagetrail demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${PAGETRAIL_VENV:-.venv}
exec "$VENV/bin/pagetrail" demo "$@"
