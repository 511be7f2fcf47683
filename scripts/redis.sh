#!/usr/bin/env bash
# Throw-away Redis on 127.0.0.1 for the tests (the Debian redis-server package).
#   scripts/redis.sh start DIR PORT   → prints the connection URL (AOF on: queued jobs survive
#                                       a restart of the server)
#   scripts/redis.sh restart DIR      → shut down (AOF flushed) and start again on the same port
#   scripts/redis.sh stop DIR         → shut down and remove DIR
set -euo pipefail
action=$1 dir=$2
if ! command -v redis-server >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server) >&2
fi
command -v redis-server >/dev/null || { echo "redis-server not found" >&2; exit 1; }
up() {
  redis-server "$dir/redis.conf" >/dev/null
  for _ in $(seq 100); do
    redis-cli -p "$(cat "$dir/port")" ping >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "redis-server did not start (see $dir/log)" >&2; exit 1
}
down() {
  [ -f "$dir/port" ] || return 0
  redis-cli -p "$(cat "$dir/port")" shutdown >/dev/null 2>&1 || true
  for _ in $(seq 100); do
    [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null || return 0
    sleep 0.05
  done
}
case "$action" in
  start)
    port=$3
    mkdir -p "$dir"
    echo "$port" > "$dir/port"
    cat > "$dir/redis.conf" <<CONF
bind 127.0.0.1
port $port
protected-mode yes
daemonize yes
pidfile $dir/pid
logfile $dir/log
dir $dir
save ""
appendonly yes
appendfsync always
CONF
    up
    echo "redis://127.0.0.1:$port/0"
    ;;
  restart)
    down
    up
    ;;
  stop)
    down
    rm -rf "$dir"
    ;;
esac
