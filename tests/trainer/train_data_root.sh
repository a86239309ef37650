#!/usr/bin/env bash
# train_data_root.sh - the trainer reads only beneath its data root. In a
# tenant's directory, symbolic links lead out: to /etc, to /etc/shadow, to
# another tenant's directory and to one of its shards, a linked directory
# component, and a link a pattern matches beside a real shard. Each is the
# data error (13) with the data path and the link in the message, and no
# file outside is opened; absolute paths and ".." are refused with the spec
# (10). A normal shard under the root trains, with --data-root and by hand
# (the current directory as the root).
set -uo pipefail

# shellcheck source=SCRIPTDIR/../integration/lib.sh
. "$(dirname "$0")/../integration/lib.sh"
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

make_corpus
spec "$TY_TMP/spec.json"
S=$TY_TMP/spec.json
A=$TY_TMP/data-root/tenants/aaaaaaaa-0000-4000-8000-00000000000a
B=$TY_TMP/data-root/tenants/bbbbbbbb-0000-4000-8000-00000000000b
mkdir -p -m 0700 "$A/mix" "$B"
cp "$DATA"/train_*.bin "$A/"
cp "$DATA"/train_*.bin "$B/"
cp "$DATA/train_000000.bin" "$A/mix/a_000.bin"
ln -s /etc "$A/etc"
ln -s /etc/shadow "$A/shadow.bin"
ln -s "../$(basename "$B")" "$A/peer"
ln -s "../$(basename "$B")/train_000000.bin" "$A/peer_000.bin"
ln -s "$B/train_000001.bin" "$A/mix/b_001.bin"

# run ROOT DATA_PATH: 2 steps on one rank; output in $TY_TMP/out, status in RC
run() {
	RC=0
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$TRAIN_BIN" train --data-root "$1" --spec "$S" \
		--set "data.train=$2" --stop-after 2 --metrics - >"$TY_TMP/out" 2>&1 || RC=$?
}

# refused DESC DATA_PATH STATUS WANT: the run exits STATUS and says WANT
refused() {
	run "$A" "$2"
	check_eq "$1: exit status $3" "$3" "$RC"
	check_match "$1: the reason" "$4" "$(cat "$TY_TMP/out")"
	check "$1: nothing outside was opened" bash -c "! grep -q 'is not a token shard' '$TY_TMP/out'"
}

run "$A" "train_*.bin"
check_eq "shards under the tenant's root train (exit 0)" 0 "$RC"
check_match "and take their steps" '"type":"step".*"step":2,' "$(cat "$TY_TMP/out")"

refused "a link to /etc" etc/passwd 13 'data path "etc/passwd" (is or )?passes through a symbolic link'
refused "a link to /etc/shadow" shadow.bin 13 \
	'data path "shadow.bin" is or passes through a symbolic link'
refused "a linked directory into another tenant's root" "peer/train_*.bin" 13 \
	'data path "peer" passes through a symbolic link'
refused "a link to another tenant's shard" peer_000.bin 13 \
	'data path "peer_000.bin" is or passes through a symbolic link'
refused "a link a pattern matches beside a real shard" "mix/*.bin" 13 \
	'data path "mix/b_001.bin" is or passes through a symbolic link'
refused "an absolute path" /etc/shadow 10 'path_not_allowed|it is absolute'
refused "a path climbing out" "../$(basename "$B")/train_*.bin" 10 '"\.\." component'
refused "/proc" /proc/self/environ 10 'it is absolute'

# by hand: the current directory is the root
(cd "$A" && OMP_NUM_THREADS=1 "$TRAIN_BIN" train --spec "$S" --stop-after 2 >"$TY_TMP/out" 2>&1)
check_eq "by hand, the current directory is the root (exit 0)" 0 "$?"
rc=0
(cd "$A" && OMP_NUM_THREADS=1 "$TRAIN_BIN" train --spec "$S" --set data.train=peer_000.bin \
	--stop-after 2 >"$TY_TMP/out" 2>&1) || rc=$?
check_eq "by hand, a link to another tenant's shard is the data error (13)" 13 "$rc"
check_match "with the reason" 'is or passes through a symbolic link' "$(cat "$TY_TMP/out")"
summary
