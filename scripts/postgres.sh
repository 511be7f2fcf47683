#!/usr/bin/env bash
# Throw-away PostgreSQL cluster on 127.0.0.1 for the tests.
#   scripts/postgres.sh start DIR PORT   → prints the connection URL
#   scripts/postgres.sh stop DIR
#   scripts/postgres.sh halt DIR     → the server stopped (pg_ctl stop -m fast), data kept
#   scripts/postgres.sh resume DIR   → started again on its port (after halt)
set -euo pipefail
action=$1 dir=$2
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bindir" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >&2
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi
[ -n "$bindir" ] || { echo "PostgreSQL not found" >&2; exit 1; }
as_pg() {
  # initdb refuses to run as root: run the server as the postgres user when we are root.
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi
}
case "$action" in
  start)
    port=$3
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_pg "'$bindir/initdb' -D '$dir/data' -U postgres -A trust -E UTF8 --no-sync" >/dev/null
    as_pg "'$bindir/pg_ctl' -D '$dir/data' -l '$dir/log' -w -o \"-h 127.0.0.1 -p $port -k '$dir' -F\" start" >/dev/null
    echo "$port" > "$dir/port"
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  halt)
    as_pg "'$bindir/pg_ctl' -D '$dir/data' -m fast -w stop" >/dev/null
    ;;
  resume)
    port=$(cat "$dir/port")
    as_pg "'$bindir/pg_ctl' -D '$dir/data' -l '$dir/log' -w -o \"-h 127.0.0.1 -p $port -k '$dir' -F\" start" >/dev/null
    ;;
  stop)
    [ -d "$dir/data" ] && as_pg "'$bindir/pg_ctl' -D '$dir/data' -m fast -w stop" >/dev/null || true
    rm -rf "$dir"
    ;;
esac
