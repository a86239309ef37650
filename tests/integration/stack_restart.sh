#!/usr/bin/env bash
# stack_restart.sh - deploy/stack starts a server again right after it was
# killed. A process killed with SIGKILL stays in the process table as a
# zombie until its parent (init, for the stack's daemons) reaps it, which
# may take a second or more; the stack must not take that zombie for a
# running server and wait on it (sched_chaos.sh restarts the API half a
# second after a SIGKILL).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

needs TRAINYARD_URL TRAINYARD_VAR

PIDFILE=$TRAINYARD_VAR/api.pid
for round in 1 2 3; do
	old=$(cat "$PIDFILE")
	kill -KILL "$old"
	check "round $round: the API killed with SIGKILL starts again at once" stack api-start
	new=$(cat "$PIDFILE" 2>/dev/null)
	check "round $round: as a new process" test -n "$new" -a "$new" != "$old"
	check "round $round: which answers" api_healthy
done
summary
