#!/usr/bin/env bash
# Set up and run the whole test suite: lint (ruff, the import contract), then pytest on SQLite and PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=${PAGETRAIL_VENV:-.venv}
export PATH="$PWD/$VENV/bin:$PATH"

echo "== ruff"
ruff check .
echo "== import contract"
python scripts/lint_imports.py
echo "== export stubs (scripts/gen_exports.py)"
python scripts/gen_exports.py --check

pgdir=$(mktemp -d /tmp/pagetrail-pg.XXXXXX)
redisdir=$(mktemp -d /tmp/pagetrail-redis.XXXXXX)
cleanup() { bash scripts/postgres.sh stop "$pgdir" || true; bash scripts/redis.sh stop "$redisdir" || true; }
trap cleanup EXIT INT TERM
port=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PAGETRAIL_TEST_POSTGRES_URL=$(bash scripts/postgres.sh start "$pgdir" "$port")
export PAGETRAIL_TEST_POSTGRES_URL
echo "== PostgreSQL at $PAGETRAIL_TEST_POSTGRES_URL"
port=$(python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PAGETRAIL_TEST_REDIS_URL=$(bash scripts/redis.sh start "$redisdir" "$port")
export PAGETRAIL_TEST_REDIS_URL
echo "== Redis at $PAGETRAIL_TEST_REDIS_URL"

# In parallel (pytest-xdist): whole files to each worker (a module's fixtures are built
# once), the files with slow tests first (tests/conftest.py orders them) so that no long
# file starts last. The tests mostly wait (servers, workers, timeouts), so more workers
# than cores pays; PAGETRAIL_TEST_WORKERS=0 runs everything in this one process.
workers=${PAGETRAIL_TEST_WORKERS:-4}
echo "== pytest ($workers workers)"
set +e
python -m pytest -p no:cacheprovider -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
status=$?
set -e
if [ "$status" = 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
