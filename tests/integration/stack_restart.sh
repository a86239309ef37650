#!/usr/bin/env bash
# stack_restart.sh - deploy/stack starts a server again right after it was
# killed. A process killed with SIGKILL stays in the process table as a
# zombie until its parent (init, for the stack's daemons) reaps it, which
# may take a second or more; the stack must not take that zombie for a
# running server and wait on it (sched_chaos.sh restarts the API half a
# second after a SIGKILL). The new process takes its killed predecessor's
# place among the API processes at once (api/peers.h): counted for
# seconds more, the dead one would halve every limit of the new one.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

needs TRAINYARD_URL TRAINYARD_VAR TRAINYARD_DB

TOKEN=$(admin_token)
# the API processes as the database and the serving process count them
rows() { q "SELECT count(*) FROM api_processes WHERE seen_at > now() - interval '6 seconds'"; }
counted() {
	api GET /metrics
	[[ $(printf '%s\n' "$BODY" | awk '$1 == "trainyard_api_processes" { print $2 }') == 1 ]]
}

PIDFILE=$TRAINYARD_VAR/api.pid
for round in 1 2 3; do
	old=$(cat "$PIDFILE")
	kill -KILL "$old"
	check "round $round: the API killed with SIGKILL starts again at once" stack api-start
	new=$(cat "$PIDFILE" 2>/dev/null)
	check "round $round: as a new process" test -n "$new" -a "$new" != "$old"
	check "round $round: which answers" api_healthy
	check "round $round: and counts itself alone among the API processes" wait_until 2 counted
	check_eq "round $round: the killed one's row is gone" 1 "$(rows)"
done
summary
