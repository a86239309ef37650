# deploy/patroni.sh - PostgreSQL in high availability for deploy/stack
# (TRAINYARD_PG_HA=1): Debian's patroni with one etcd member
# (etcd-server) and two PostgreSQL members on this machine, synchronous
# replication on.
# shellcheck shell=bash
# Sourced by deploy/stack, never run; uses its VAR, PG_PORT, PG_BIN, die,
# note, log_tail, port_busy, as_pg, pg_reach, daemon_pid and daemon_stop.
#
# Member i (1, 2) serves PostgreSQL on PG_PORT + 10 (i - 1) and Patroni's
# REST API on PG_PORT + 100 + 10 (i - 1); etcd listens on PG_PORT + 200
# (clients) and PG_PORT + 201 (peers). Every program reaches the database
# through a libpq multi-host string with target_session_attrs=read-write
# (HA_CONNINFO), so it finds the primary again after a failover.
#
# Patroni's leader key lives 10 s (ttl) in etcd and is renewed every 2 s
# (loop_wait): a primary whose member died is replaced after at most
# about 10 s, by the synchronous standby (synchronous_mode), so no commit
# a client was told of is lost.

HA_DIR=$VAR/ha
HA_MEMBERS=2
HA_ETCD_PORT=$((PG_PORT + 200))
HA_ETCD_PEER=$((PG_PORT + 201))
HA_ETCD_PID=$HA_DIR/etcd.pid
HA_ETCD_LOG=$HA_DIR/etcd.log

ha_pg_port() { echo $((PG_PORT + 10 * ($1 - 1))); }
ha_rest_port() { echo $((PG_PORT + 100 + 10 * ($1 - 1))); }
ha_member_dir() { echo "$HA_DIR/pg$1"; }
ha_member_pid() { echo "$HA_DIR/pg$1/patroni.pid"; }

# The connection string of the stack's database under HA.
ha_conninfo() {
	local hosts=() ports=() i
	for ((i = 1; i <= HA_MEMBERS; i++)); do
		hosts+=(127.0.0.1)
		ports+=("$(ha_pg_port "$i")")
	done
	local IFS=,
	echo "host=${hosts[*]} port=${ports[*]} dbname=$1 user=postgres target_session_attrs=read-write"
}

ha_etcd_start() {
	daemon_pid "$HA_ETCD_PID" etcd >/dev/null && return 0
	command -v etcd >/dev/null || die "etcd is not installed (deploy/deps installs etcd-server)"
	port_busy "$HA_ETCD_PORT" && die "could not start etcd: port $HA_ETCD_PORT is in use"
	mkdir -p "$HA_DIR/etcd"
	chmod 700 "$HA_DIR/etcd"
	# shellcheck disable=SC2016 # $$ and $0 are the child shell's
	setsid -f bash -c 'echo $$ >"$0" && exec "$@"' "$HA_ETCD_PID" etcd \
		--name trainyard --data-dir "$HA_DIR/etcd" \
		--listen-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
		--advertise-client-urls "http://127.0.0.1:$HA_ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$HA_ETCD_PEER" \
		--initial-advertise-peer-urls "http://127.0.0.1:$HA_ETCD_PEER" \
		--initial-cluster "trainyard=http://127.0.0.1:$HA_ETCD_PEER" \
		</dev/null >>"$HA_ETCD_LOG" 2>&1
	local i
	for ((i = 0; i < 100; i++)); do
		curl -fsS --max-time 1 "http://127.0.0.1:$HA_ETCD_PORT/health" 2>/dev/null |
			grep -q '"health":"true"' && return 0
		sleep 0.1
	done
	log_tail "$HA_ETCD_LOG"
	die "etcd did not become healthy on 127.0.0.1:$HA_ETCD_PORT"
}

# ha_member_config I: Patroni's configuration of member I.
ha_member_config() {
	local dir pg rest
	dir=$(ha_member_dir "$1")
	pg=$(ha_pg_port "$1")
	rest=$(ha_rest_port "$1")
	cat <<YAML
# written by deploy/stack (TRAINYARD_PG_HA=1)
scope: trainyard
name: pg$1
log:
  level: INFO
restapi:
  listen: 127.0.0.1:$rest
  connect_address: 127.0.0.1:$rest
etcd3:
  hosts: 127.0.0.1:$HA_ETCD_PORT
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: trust
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication replicator 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$pg
  connect_address: 127.0.0.1:$pg
  data_dir: $dir/data
  bin_dir: $PG_BIN
  pgpass: $dir/pgpass
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
  parameters:
    unix_socket_directories: '$dir'
YAML
}

ha_member_start() { # ha_member_start I
	local dir pidfile
	dir=$(ha_member_dir "$1")
	pidfile=$(ha_member_pid "$1")
	daemon_pid "$pidfile" patroni >/dev/null && return 0
	port_busy "$(ha_pg_port "$1")" && die "could not start member pg$1: port $(ha_pg_port "$1") is in use"
	mkdir -p "$dir"
	ha_member_config "$1" >"$dir/patroni.yml"
	((EUID == 0)) && chown -R postgres:postgres "$dir"
	chmod 700 "$dir"
	# The libpq variables of stack.env name the multi-host string; the
	# server would take PGPORT for its own port.
	# shellcheck disable=SC2016 # $$ and $0 are the child shell's
	as_pg env -u PGHOST -u PGPORT -u PGUSER -u PGDATABASE -u PGTARGETSESSIONATTRS \
		setsid -f bash -c 'echo $$ >"$0" && exec patroni "$1"' "$pidfile" "$dir/patroni.yml" \
		</dev/null >>"$dir/patroni.log" 2>&1
}

# ha_role I: "leader", "sync_standby", "replica"... as Patroni's REST API says; "" when down.
ha_role() {
	curl -sS --max-time 1 "http://127.0.0.1:$(ha_rest_port "$1")/patroni" 2>/dev/null |
		jq -r '.role // empty' 2>/dev/null
}

# ha_primary: the member that is the primary now (its number), or fail.
ha_primary() {
	local i
	for ((i = 1; i <= HA_MEMBERS; i++)); do
		curl -fsS --max-time 1 -o /dev/null "http://127.0.0.1:$(ha_rest_port "$i")/primary" 2>/dev/null &&
			echo "$i" && return 0
	done
	return 1
}

# ha_synced: a primary and a synchronous standby streaming from it.
ha_synced() {
	local p
	p=$(ha_primary) || return 1
	curl -fsS --max-time 1 "http://127.0.0.1:$(ha_rest_port "$p")/cluster" 2>/dev/null |
		jq -e '[.members[] | select(.role == "sync_standby" and (.state == "streaming" or .state == "running"))] | length >= 1' \
			>/dev/null 2>&1
}

ha_pg_start() {
	command -v patroni >/dev/null || die "patroni is not installed (deploy/deps installs it)"
	mkdir -p "$HA_DIR"
	if ((EUID == 0)); then
		chown postgres:postgres "$HA_DIR"
		pg_reach "$HA_DIR"
	fi
	ha_etcd_start
	local i
	for ((i = 1; i <= HA_MEMBERS; i++)); do
		ha_member_start "$i"
	done
	for ((i = 0; i < 600; i++)); do
		ha_synced && return 0
		sleep 0.2
	done
	for ((i = 1; i <= HA_MEMBERS; i++)); do
		log_tail "$(ha_member_dir "$i")/patroni.log"
	done
	die "Patroni did not bring up a primary with a synchronous standby within 120 s"
}

# ha_member_stop I: TERM to the member's Patroni, which stops its
# PostgreSQL first (a checkpoint: up to 60 s); then KILL to both.
ha_member_stop() {
	local pidfile pid pm i
	pidfile=$(ha_member_pid "$1")
	if pid=$(daemon_pid "$pidfile" patroni); then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 600; i++)); do
			pid_running "$pid" || break
			sleep 0.1
		done
		if pid_running "$pid"; then
			note "Patroni member pg$1 (pid $pid) ignored TERM for 60 s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$pidfile"
	pm=$(head -n 1 "$(ha_member_dir "$1")/data/postmaster.pid" 2>/dev/null) || return 0
	if pid_running "$pm" postgres; then
		kill -KILL "$pm" 2>/dev/null || true
		pkill -KILL -P "$pm" 2>/dev/null || true
	fi
	return 0
}

ha_pg_stop() {
	local i
	for ((i = HA_MEMBERS; i >= 1; i--)); do
		ha_member_stop "$i"
	done
	daemon_stop "$HA_ETCD_PID" etcd "etcd"
}

ha_pg_running() {
	local i
	for ((i = 1; i <= HA_MEMBERS; i++)); do
		daemon_pid "$(ha_member_pid "$i")" patroni >/dev/null && return 0
	done
	return 1
}

ha_pg_status() {
	local i rc=1 role
	for ((i = 1; i <= HA_MEMBERS; i++)); do
		role=$(ha_role "$i")
		if [[ -n $role ]]; then
			printf '%-11s up    127.0.0.1:%s  %s (Patroni member pg%s)\n' postgresql \
				"$(ha_pg_port "$i")" "$role" "$i"
			rc=0
		else
			printf '%-11s down  127.0.0.1:%s  (Patroni member pg%s)\n' postgresql \
				"$(ha_pg_port "$i")" "$i"
		fi
	done
	return "$rc"
}
