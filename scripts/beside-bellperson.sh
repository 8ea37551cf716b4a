#!/usr/bin/env bash
# Our `High` prover beside bellperson 0.27's own OpenCL prover on one GPU, with `/proc/locks`
# sampled all along, so that "never both on the GPU" is read from the kernel's lock table rather
# than from either program's log. bellperson proves `PEER_PROOFS` proofs of 2^PEER_K constraints
# at its normal priority; once it holds a GPU lock, ours proves `OUR_PROOFS` of 2^OUR_K at `High`.
# With `BELLPERSON_GPUS_PER_LOCK` set (exported to both), bellperson locks the device through
# `bellman.gpu.lock.<id>` and ours share that file too.
#
#   scripts/beside-bellperson.sh                                    # builds what it runs
#   BIN=.bench BELLPERSON_GPUS_PER_LOCK=1 scripts/beside-bellperson.sh   # a GPU host without cargo
#   scripts/beside-bellperson.py target/beside-bellperson           # the table, from the samples
#
# Writes to OUT_DIR (default target/beside-bellperson): peer.log, ours.jsonl (a report a proof),
# ours.log, locks.txt (the samples) and inodes.txt (which file each locked inode is).
set -euo pipefail
cd "$(dirname "$0")/.."
PEER=${PEER:-../shared/peers/bellperson-bench}
PEER_K=${PEER_K:-18}
PEER_PROOFS=${PEER_PROOFS:-30}
OUR_K=${OUR_K:-16}
OUR_PROOFS=${OUR_PROOFS:-20}
OUT_DIR=${OUT_DIR:-target/beside-bellperson}
if [ -z "${BIN:-}" ]; then
    cargo build --release --features gpu,serde --example prover >&2
    cargo build --release --manifest-path "$PEER/Cargo.toml" --target-dir target/peer >&2
    mkdir -p target/beside-bin
    cp target/release/examples/prover target/peer/release/bellperson-bench target/beside-bin/
    BIN=target/beside-bin
fi
mkdir -p "$OUT_DIR"
tmp=$(dirname "$(mktemp -u)")
lock_dir=${PREEMPTIBLE_GROTH16_LOCK_DIR:-$tmp}

# Our parameters first, so that our prover's first proof starts at once.
"$BIN/prover" --circuit squares --log2-constraints "$OUR_K" --proofs 1 >/dev/null 2>&1

RUST_LOG=${PEER_LOG:-info} "$BIN/bellperson-bench" prove "$PEER_K" "$PEER_PROOFS" \
    >"$OUT_DIR/peer.log" 2>&1 &
peer=$!
# bellperson's first GPU lock: an exclusive flock taken by its process.
until awk -v p="$peer" '$2 == "FLOCK" && $4 == "WRITE" && $5 == p { f = 1 } END { exit !f }' \
    /proc/locks; do
    kill -0 "$peer" 2>/dev/null || { echo "bellperson ended before locking a GPU" >&2; exit 1; }
    sleep 0.05
done
: >"$OUT_DIR/locks.txt"
(
    while kill -0 "$peer" 2>/dev/null; do
        { echo "@ $(date +%s.%N)"; cat /proc/locks; } >>"$OUT_DIR/locks.txt"
        sleep 0.005
    done
) &
sampler=$!
sleep "${OURS_AFTER_S:-2}"
"$BIN/prover" --circuit squares --log2-constraints "$OUR_K" --priority high \
    --proofs "$OUR_PROOFS" --json >"$OUT_DIR/ours.jsonl" 2>"$OUT_DIR/ours.log" &
ours=$!
echo "peer $peer ours $ours" >"$OUT_DIR/pids.txt"
wait "$ours"
wait "$peer"
wait "$sampler" || true
for f in "$tmp"/bellman.* "$lock_dir"/*.lock; do
    [ -e "$f" ] && echo "$(stat -c %i "$f") $f"
done >"$OUT_DIR/inodes.txt"
echo "done: $OUT_DIR" >&2
