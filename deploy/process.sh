# deploy/process.sh - what deploy/stack and deploy/slurm know of processes.
# shellcheck shell=bash
# Sourced, never run.

# pid_running PID [COMM]: true when PID is a process that still runs, and
# is named COMM when COMM is given (a pid may have been reused by an
# unrelated process; ps truncates names, so COMM matches as a prefix).
# A process that has exited but not yet been reaped (a zombie: the
# daemons are reparented to init, which may reap them late) does not run:
# `kill -0` alone would count it, and a restart right after a SIGKILL
# would wait on a server that is gone.
pid_running() {
	local stat comm
	read -r stat comm < <(ps -o stat= -o comm= -p "$1" 2>/dev/null) || return 1
	[[ $stat != Z* ]] || return 1
	[[ -z ${2:-} || $comm == "$2"* ]]
}
