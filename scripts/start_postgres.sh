#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on loopback, in a temporary directory, for the performance
# database tests (tests/lowerbound). Prints the URL on stdout; stop it with `scripts/start_postgres.sh stop DIR`.
#
#   url=$(scripts/start_postgres.sh) && STRATA_TEST_PG_URL=$url build/bin/lowerbound_test
#
# Runs the server as the `postgres` user when started as root (PostgreSQL refuses to run as root),
# else as the calling user. Needs Debian's postgresql package (scripts/setup.sh installs it).
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "start_postgres.sh: PostgreSQL binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2
  exit 1
fi
as_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ "${1:-}" = stop ]; then
  as_user "$bin/pg_ctl" -D "$2/data" -m fast stop >&2
  rm -rf "$2"
  exit 0
fi
dir=$(mktemp -d /tmp/strata-pg-XXXXXX)
chmod 755 "$dir"
[ "$(id -u)" = 0 ] && chown postgres "$dir"
# A free port: ask the kernel for one.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_user "$bin/initdb" -D "$dir/data" -U strata --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
  { echo "start_postgres.sh: initdb failed, see $dir/initdb.log" >&2; exit 1; }
as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off" start >&2 ||
  { echo "start_postgres.sh: server did not start, see $dir/server.log" >&2; exit 1; }
as_user "$bin/createdb" -h 127.0.0.1 -p "$port" -U strata strata_test >&2
echo "start_postgres.sh: server in $dir (stop: scripts/start_postgres.sh stop $dir)" >&2
echo "postgresql://strata@127.0.0.1:$port/strata_test"
