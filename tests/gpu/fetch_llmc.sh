#!/usr/bin/env bash
# fetch_llmc.sh - llm.c's source at a pinned commit into third_party/llm.c,
# for the device check's llm.c row (tests/gpu/llmc.sh). Run it where there
# is a network; the GPU machine has none, so the device's run carries
# third_party/llm.c (ignored by git) in the working tree. Never run by the
# tests.
#
# It clones llm.c, checks the pinned commit out, and keeps what
# train_gpt2.cu needs to build (train_gpt2.cu, llmc/, the Makefile and
# the LICENSE), with the commit in third_party/llm.c/COMMIT. Run again, it
# does nothing when that commit is already there, and replaces the copy
# otherwise.
#
#   tests/gpu/fetch_llmc.sh
#   LLMC_URL=/path/to/llm.c tests/gpu/fetch_llmc.sh   # from a local clone
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COMMIT=f1e2ace651495b74ae22d45d1723443fd00ecd3a # master, 2025-05-10
URL=${LLMC_URL:-https://github.com/karpathy/llm.c.git}
DEST=$ROOT/third_party/llm.c
KEEP=(train_gpt2.cu llmc Makefile LICENSE)

if [[ -f $DEST/train_gpt2.cu && "$(cat "$DEST/COMMIT" 2>/dev/null)" == "$COMMIT" ]]; then
	echo "third_party/llm.c is already llm.c at $COMMIT: nothing to do"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "cloning $URL"
git clone --quiet --no-checkout "$URL" "$tmp/llm.c"
git -C "$tmp/llm.c" -c advice.detachedHead=false checkout --quiet "$COMMIT"
mkdir -p "$tmp/keep"
(cd "$tmp/llm.c" && cp -R "${KEEP[@]}" "$tmp/keep/")
echo "$COMMIT" >"$tmp/keep/COMMIT"
if [[ -e $DEST ]]; then
	echo "replacing third_party/llm.c (was: $(cat "$DEST/COMMIT" 2>/dev/null || echo "no COMMIT file"))"
	rm -rf "$DEST"
fi
mkdir -p "$(dirname "$DEST")"
mv "$tmp/keep" "$DEST"
echo "third_party/llm.c: llm.c at $COMMIT (${KEEP[*]})"
echo "copy it to the GPU machine with the working tree (git ignores it), then run tests/gpu/run"
