#!/usr/bin/env bash
# Build the image (Dockerfile) and smoke-test it: its version, a non-root user, every face's
# extra installed, and against a throw-away PostgreSQL and Redis on 127.0.0.1 (host network):
# the migration one-shot (`db upgrade`), a Celery worker that answers a ping, the MCP server
# over HTTP answering `initialize` with its bearer token (and 401 without).
#   ENGINE=podman|docker (podman)   BASE=image with python3 + venv (the Dockerfile's default)
#   ENGINE_ARGS: global engine options (e.g. "--storage-driver vfs --runtime runc")
#   RUN_ARGS: options for build and run (e.g. "--ulimit nofile=20000:20000")
#   BUILD=0: test the image already built as IMAGE
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE=${ENGINE:-podman}
read -r -a engine <<< "$ENGINE ${ENGINE_ARGS:-}"
read -r -a extra <<< "${RUN_ARGS:-}"
image=${IMAGE:-localhost/pagetrail:test}
build=()
if [ -n "${BASE:-}" ]; then build=(--build-arg "BASE=$BASE"); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

if [ "${BUILD:-1}" != 0 ]; then
  echo "== build"
  "${engine[@]}" build --network host "${extra[@]}" "${build[@]}" -t "$image" .
fi
run() { "${engine[@]}" run --rm --network host "${extra[@]}" "$@"; }

echo "== the image"
run "$image" --version
uid=$(run --entrypoint id "$image" -u)
echo "runs as uid $uid"
[ "$uid" != 0 ]
run --entrypoint python "$image" -c \
  'import slack_bolt, celery, redis, psycopg, matplotlib, trustme, sklearn, mcp; print("every extra imports")'

pgdir=$(mktemp -d /tmp/pagetrail-ct-pg.XXXXXX)
redisdir=$(mktemp -d /tmp/pagetrail-ct-redis.XXXXXX)
names=()
cleanup() {
  for name in "${names[@]}"; do "${engine[@]}" rm -f "$name" > /dev/null 2>&1 || true; done
  bash scripts/postgres.sh stop "$pgdir" || true
  bash scripts/redis.sh stop "$redisdir" || true
}
trap cleanup EXIT
database=$(bash scripts/postgres.sh start "$pgdir" "$(free_port)")
broker=$(bash scripts/redis.sh start "$redisdir" "$(free_port)")
env=(-e "PAGETRAIL_DATABASE_URL=$database" -e "PAGETRAIL_BROKER_URL=$broker")

echo "== migration one-shot"
migrated=$(run "${env[@]}" "$image" db upgrade)
echo "$migrated"
grep -q "at revision" <<< "$migrated"

echo "== worker"
names+=(pagetrail-ct-worker)
"${engine[@]}" run -d --name pagetrail-ct-worker --network host "${extra[@]}" "${env[@]}" \
  "$image" worker --concurrency 1 > /dev/null
for _ in $(seq 60); do
  # Captured first: `| grep -q` would end celery early, and pipefail call that a failure.
  answer=$("${engine[@]}" exec pagetrail-ct-worker celery -A pagetrail.tools.workers.celery_app \
             inspect ping --timeout 2 2> /dev/null || true)
  if grep -q pong <<< "$answer"; then pinged=1; break; fi
  sleep 2
done
[ "${pinged:-}" = 1 ] || { "${engine[@]}" logs pagetrail-ct-worker >&2; exit 1; }
echo "the worker answered"

echo "== MCP over HTTP"
port=$(free_port)
names+=(pagetrail-ct-mcp)
"${engine[@]}" run -d --name pagetrail-ct-mcp --network host "${extra[@]}" "${env[@]}" \
  -e PAGETRAIL_MCP_TOKEN=smoke-token "$image" serve mcp --http --host 127.0.0.1 --port "$port" \
  > /dev/null
initialize='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"0"}}}'
ask() {
  curl -s -o "$pgdir/answer" -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    "$@" -d "$initialize" || true
}
for _ in $(seq 60); do
  [ "$(ask)" = 401 ] && break
  sleep 1
done
[ "$(ask)" = 401 ] || { "${engine[@]}" logs pagetrail-ct-mcp >&2; exit 1; }
[ "$(ask -H 'Authorization: Bearer smoke-token')" = 200 ]
grep -q '"serverInfo"' "$pgdir/answer"
echo "the MCP server answered (401 without the token)"
echo "container test passed"
