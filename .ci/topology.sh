# The database topology CI tests the service on (sourced by .ci/run; `bash .ci/topology.sh` runs
# it alone, for a try): a PgBouncer of the run's own in transaction mode in front of the CI
# database, and a hot-standby replica of that server, built with `pg_basebackup -R` into a second
# cluster on a port of its own. Both live in one temporary directory and are stopped by
# topology_stop. Needs the server's superuser `postgres` over trust on 127.0.0.1 (as on this
# machine) and, to install PgBouncer or to let the server stream to a replica, root.
#
# Sets PGBOUNCER_PORT_CI and REPLICA_PORT_CI (defaults 6433 and 5499); the URLs are built by the
# caller for its database.

PGBOUNCER_PORT_CI=${PGBOUNCER_PORT_CI:-6433}
REPLICA_PORT_CI=${REPLICA_PORT_CI:-5499}
TOPOLOGY_DIR=''

# Runs a command as the user that owns the server's files: postgres when we are root (PgBouncer
# and PostgreSQL refuse to run as root), ourselves otherwise.
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

topology_start() {
  local host=$1 port=$2
  TOPOLOGY_DIR=$(mktemp -d /tmp/payout-ci-topology.XXXXXX)
  chmod 755 "$TOPOLOGY_DIR"
  [ "$(id -u)" = 0 ] && chown postgres: "$TOPOLOGY_DIR"
  topology_pgbouncer "$host" "$port"
  topology_replica "$host" "$port"
}

# Server pool 20 for every database and user, up to 500 clients: the suite's instances test runs
# 4 instances of 22 connections each on it, more clients than server connections.
topology_pgbouncer() {
  local host=$1 port=$2 dir=$TOPOLOGY_DIR/pgbouncer
  command -v pgbouncer >/dev/null || (apt-get update && apt-get install -y pgbouncer)
  as_postgres mkdir -p "$dir"
  as_postgres tee "$dir/pgbouncer.ini" >/dev/null <<EOF
[databases]
* = host=$host port=$port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGBOUNCER_PORT_CI
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
pidfile = $dir/pgbouncer.pid
logfile = $dir/pgbouncer.log
EOF
  echo '"postgres" ""' | as_postgres tee "$dir/users.txt" >/dev/null
  as_postgres pgbouncer -d "$dir/pgbouncer.ini"
  for _ in $(seq 50); do
    psql -h 127.0.0.1 -p "$PGBOUNCER_PORT_CI" -U postgres -Atc 'select 1' postgres >/dev/null 2>&1 && break
    sleep 0.1
  done
  psql -h 127.0.0.1 -p "$PGBOUNCER_PORT_CI" -U postgres -Atc 'select 1' postgres >/dev/null
  pgbouncer --version | head -1
  echo "PgBouncer on 127.0.0.1:$PGBOUNCER_PORT_CI, pool_mode=transaction, 20 server connections per database"
}

topology_replica() {
  local host=$1 port=$2 data=$TOPOLOGY_DIR/replica
  local psql_primary=(psql -h "$host" -p "$port" -U postgres -Atc)
  # The server must let a replica stream: wal_level replica (or logical), WAL senders, and a
  # `replication` line in pg_hba.conf (Debian's default cluster has one, this machine's had not).
  [ "$("${psql_primary[@]}" 'show wal_level')" != minimal ] || { echo 'wal_level is minimal: no replica'; return 1; }
  [ "$("${psql_primary[@]}" 'show max_wal_senders')" -gt 0 ] || { echo 'max_wal_senders is 0: no replica'; return 1; }
  if [ "$("${psql_primary[@]}" "select count(*) from pg_hba_file_rules where 'replication' = any(database) and error is null")" = 0 ]; then
    local hba
    hba=$("${psql_primary[@]}" 'show hba_file')
    echo "adding 'host replication all 127.0.0.1/32 trust' to $hba"
    printf '%s\n' 'host replication all 127.0.0.1/32 trust' >>"$hba"
    "${psql_primary[@]}" 'select pg_reload_conf()' >/dev/null
  fi
  as_postgres pg_basebackup -h "$host" -p "$port" -U postgres -D "$data" -R -X stream -c fast
  # Debian keeps the primary's postgresql.conf and pg_hba.conf outside its data directory: the
  # replica gets its own (a copied postgresql.auto.conf would still apply over it).
  as_postgres tee "$data/postgresql.conf" >/dev/null <<EOF
port = $REPLICA_PORT_CI
listen_addresses = '127.0.0.1'
unix_socket_directories = '$TOPOLOGY_DIR'
hot_standby = on
max_connections = 100
EOF
  printf '%s\n' 'local all all trust' 'host all all 127.0.0.1/32 trust' | as_postgres tee "$data/pg_hba.conf" >/dev/null
  local bin
  bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
  [ -x "$bin/pg_ctl" ] || bin=/usr/lib/postgresql/15/bin
  as_postgres "$bin/pg_ctl" -D "$data" -l "$TOPOLOGY_DIR/replica.log" -w start >/dev/null
  [ "$(psql -h 127.0.0.1 -p "$REPLICA_PORT_CI" -U postgres -Atc 'select pg_is_in_recovery()' postgres)" = t ]
  REPLICA_PGDATA_CI=$data
  REPLICA_PG_CTL_CI=$bin/pg_ctl
  echo "replica on 127.0.0.1:$REPLICA_PORT_CI, streaming from $host:$port (hot standby)"
}

# Stops what topology_start started; safe to call twice, or when it failed half-way.
topology_stop() {
  [ -n "$TOPOLOGY_DIR" ] || return 0
  if [ -f "$TOPOLOGY_DIR/pgbouncer/pgbouncer.pid" ]; then
    kill "$(cat "$TOPOLOGY_DIR/pgbouncer/pgbouncer.pid")" 2>/dev/null || true
  fi
  if [ -f "$TOPOLOGY_DIR/replica/postmaster.pid" ]; then
    as_postgres "${REPLICA_PG_CTL_CI:-/usr/lib/postgresql/15/bin/pg_ctl}" -D "$TOPOLOGY_DIR/replica" -m immediate stop >/dev/null 2>&1 || true
  fi
  rm -rf "$TOPOLOGY_DIR"
  TOPOLOGY_DIR=''
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  trap topology_stop EXIT
  SECONDS=0
  topology_start "${PGHOST_CI:-127.0.0.1}" "${PGPORT_CI:-5432}"
  echo "started in ${SECONDS}s"
  psql -h 127.0.0.1 -p "$PGBOUNCER_PORT_CI" -U postgres -Atc 'select 1' postgres
  psql -h 127.0.0.1 -p "$REPLICA_PORT_CI" -U postgres -Atc 'select pg_is_in_recovery()' postgres
fi
