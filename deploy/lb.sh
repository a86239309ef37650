# deploy/lb.sh - haproxy in front of several API processes, for deploy/stack.
# shellcheck shell=bash
# Sourced by deploy/stack, never run; uses its VAR, TLS_DIR, CA_FILE,
# API_PORT, die, note, daemon_pid and daemon_stop.
#
# haproxy terminates TLS on the stack's address with the API's own
# certificate, balances every request round robin over the processes
# (each reached over TLS, verified against the stack's CA), adds
# X-Forwarded-For (the API processes trust it from 127.0.0.1:
# TRAINYARD_TRUSTED_PROXIES) and checks each process's /healthz every
# second: a process that stops answering is out within two seconds, and a
# request whose connection to a process failed is sent to another.

LB_DIR=$VAR/lb
LB_CFG=$LB_DIR/haproxy.cfg
LB_PID=$VAR/lb.pid
LB_LOG=$VAR/lb.log

lb_pid() { daemon_pid "$LB_PID" haproxy; }

# lb_config PORT...: the configuration for API processes on 127.0.0.1:PORT...
lb_config() {
	local i=0 port
	mkdir -p "$LB_DIR"
	(
		umask 077
		cat "$TLS_DIR/server.pem" "$TLS_DIR/server.key" >"$LB_DIR/api.pem"
	)
	{
		cat <<CFG
# written by deploy/stack: the API processes behind one address
global
	log stdout format raw local0 info
	maxconn 4096
	ssl-default-bind-options ssl-min-ver TLSv1.2

defaults
	mode http
	log global
	option httplog
	option forwardfor
	option redispatch
	retries 2
	retry-on conn-failure
	timeout connect 2s
	timeout http-request 30s
	timeout client 10m
	timeout server 10m
	timeout tunnel 1h

frontend api
	bind 127.0.0.1:$API_PORT ssl crt $LB_DIR/api.pem
	default_backend api_processes

backend api_processes
	balance roundrobin
	option httpchk GET /healthz
	http-check expect status 200
	default-server check inter 1s fall 2 rise 1 ssl verify required ca-file $CA_FILE
CFG
		for port in "$@"; do
			i=$((i + 1))
			printf '\tserver api%d 127.0.0.1:%d\n' "$i" "$port"
		done
	} >"$LB_CFG.tmp"
	haproxy -c -q -f "$LB_CFG.tmp" || die "haproxy refused the configuration $LB_CFG.tmp"
	mv "$LB_CFG.tmp" "$LB_CFG"
}

# lb_start PORT...: haproxy on API_PORT in front of the processes on PORT...
lb_start() {
	local i pid
	command -v haproxy >/dev/null || die "haproxy is not installed (deploy/deps installs it)"
	lb_stop
	lb_config "$@"
	echo "==== $(date -u '+%Y-%m-%dT%H:%M:%SZ') starting haproxy" >>"$LB_LOG"
	# shellcheck disable=SC2016 # $$ and $0 are the child shell's
	setsid -f bash -c 'echo $$ >"$0" && exec haproxy -db -f "$1"' "$LB_PID" "$LB_CFG" \
		</dev/null >>"$LB_LOG" 2>&1
	for ((i = 0; i < 50; i++)); do
		[[ -s $LB_PID ]] && break
		sleep 0.1
	done
	sleep 0.2
	pid=$(lb_pid) || {
		log_tail "$LB_LOG"
		die "haproxy exited during startup"
	}
	note "haproxy on 127.0.0.1:$API_PORT (pid $pid) in front of ports $*"
}

lb_stop() { daemon_stop "$LB_PID" haproxy "haproxy"; }
