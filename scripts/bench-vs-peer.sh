#!/usr/bin/env bash
# Measures this crate beside the peer (bellperson 0.27 on the CPU, blst's native multiexp) in one
# run on this machine and prints a markdown table (also written to OUT_MD, default
# target/bench-vs-peer.md).
#
#   scripts/bench-vs-peer.sh                 # default sizes
#   PROVE_SIZES="16" MSM_SIZES="16" REPS=2 scripts/bench-vs-peer.sh
#
# PEER points at ../shared/peers/bellperson-bench by default (built into PEER_TARGET). Parameter generation of the peer
# takes minutes at 2^18 on a small machine; each size is set up once.
set -euo pipefail
cd "$(dirname "$0")/.."

PEER=${PEER:-../shared/peers/bellperson-bench}
PROVE_SIZES=${PROVE_SIZES:-"16 18"}
MSM_SIZES=${MSM_SIZES:-"16 18 20"}
G2_SIZES=${G2_SIZES:-"16 18"}
FFT_SIZES=${FFT_SIZES:-"16 18 20"}
REPS=${REPS:-3}

# OURS_BIN and PEER_BIN skip the builds (for a machine without cargo, such as the GPU host).
# The executable cargo builds for these arguments (its file name has a hash that depends on the
# features, so "the newest file" can be the wrong build).
exe_of() {
    cargo build --release "$@" --message-format=json \
        | python3 -c 'import json, sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' \
        | tail -n 1
}
ours=${OURS_BIN:-$(exe_of --bench compare)}
if [ -n "${PEER_BIN:-}" ]; then
    peer=$PEER_BIN
else
    PEER_TARGET=${PEER_TARGET:-target/peer}
    cargo build --release --manifest-path "$PEER/Cargo.toml" --target-dir "$PEER_TARGET" >&2
    peer=$PEER_TARGET/release/bellperson-bench
fi

# last number on a line: "... 0.123 s" or "... best 0.123s of 3"
num() { grep -oE '[0-9]+\.[0-9]+' | tail -n 1; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }

out=${OUT_MD:-target/bench-vs-peer.md}
mkdir -p "$(dirname "$out")"
{
    echo "| operation | size | ours (s) | peer (s) | ours / peer | peer |"
    echo "|---|---|---|---|---|---|"
} > "$out"
row() { echo "| $1 | 2^$2 | $3 | $4 | $5 | $6 |" >> "$out"; tail -n 1 "$out" >&2; }

for k in $MSM_SIZES; do
    o=$("$ours" msm "$k" "$REPS" | num)
    p=$("$peer" msm "$k" "$REPS" | num)
    row "G1 multiexp" "$k" "$o" "$p" "$(ratio "$o" "$p")" "blst multi_exp"
done
for k in $G2_SIZES; do
    o=$("$ours" msm-g2 "$k" "$REPS" | num)
    row "G2 multiexp" "$k" "$o" "-" "-" "(no peer command)"
done
for k in $FFT_SIZES; do
    o=$("$ours" fft "$k" "$REPS" | num)
    row "FFT" "$k" "$o" "-" "-" "(no peer command)"
done
for k in $PROVE_SIZES; do
    ours_out=$("$ours" prove "$k" "$REPS")
    peer_out=$(BELLMAN_NO_GPU=1 "$peer" prove "$k" "$REPS" 2>&1)
    os=$(grep setup <<< "$ours_out" | num); ps=$(grep setup <<< "$peer_out" | num)
    op=$(grep prove <<< "$ours_out" | num); pp=$(grep 'bellperson prove' <<< "$peer_out" | num)
    row "Groth16 setup (squares)" "$k" "$os" "$ps" "$(ratio "$os" "$ps")" "bellperson 0.27"
    row "Groth16 prove (squares)" "$k" "$op" "$pp" "$(ratio "$op" "$pp")" "bellperson 0.27, CPU"
done
cat "$out"
