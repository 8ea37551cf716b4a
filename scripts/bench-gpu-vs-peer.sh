#!/usr/bin/env bash
# GPU measurements of this crate beside the peer in one run on this machine; prints a markdown
# table (also written to OUT_MD, default target/bench-gpu-vs-peer.md).
#
#   scripts/bench-gpu-vs-peer.sh
#   SECTIONS="msm fft" MSM_SIZES="16 20" REPS=2 scripts/bench-gpu-vs-peer.sh
#
# Sections: msm (G1, ours on the GPU beside blst's CPU multiexp, the peer's only multiexp
# command), g2 (ours on the GPU beside ours on the CPU: the peer has no G2 command), fft (ours on
# the GPU, kernels alone and end to end, beside ours on the CPU: the peer has no FFT command),
# prove (ours with the gpu feature beside bellperson 0.27 with its GPU), batch (BATCH_PROOFS proofs,
# default 10, at BATCH_SIZES, ours beside bellperson's create_random_proof_batch; not in the default
# SECTIONS: the peer's setup at 2^22 takes minutes, so cache it with BENCH_PARAMS_DIR). OURS_GPU_BIN, OURS_CPU_BIN
# and PEER_BIN skip the builds (for a machine without cargo, such as the GPU host).
set -euo pipefail
cd "$(dirname "$0")/.."

PEER=${PEER:-../shared/peers/bellperson-bench}
SECTIONS=${SECTIONS:-"msm g2 fft prove"}
MSM_SIZES=${MSM_SIZES:-"16 18 20 22 24"}
G2_SIZES=${G2_SIZES:-"16 18 20 22 24"}
FFT_SIZES=${FFT_SIZES:-"16 18 20 22 24"}
PROVE_SIZES=${PROVE_SIZES:-"16 18 20"}
BATCH_SIZES=${BATCH_SIZES:-"20 22"}
REPS=${REPS:-3}

# The executable cargo builds for these arguments (its file name has a hash that depends on the
# features, so "the newest file" can be the wrong build).
exe_of() {
    cargo build --release "$@" --message-format=json \
        | python3 -c 'import json, sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' \
        | tail -n 1
}
OURS_CPU_BIN=${OURS_CPU_BIN:-$(exe_of --bench compare)}
OURS_GPU_BIN=${OURS_GPU_BIN:-$(exe_of --features gpu --bench compare)}
if [ -z "${PEER_BIN:-}" ]; then
    PEER_TARGET=${PEER_TARGET:-target/peer}
    cargo build --release --manifest-path "$PEER/Cargo.toml" --target-dir "$PEER_TARGET" >&2
    PEER_BIN=$PEER_TARGET/release/bellperson-bench
fi

num() { grep -oE '[0-9]+\.[0-9]+' | head -n 1; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')" 2>/dev/null || echo -; }
# The H200's limit for an operation at 2^k, in seconds (../shared/ANCHORS.md, "The limit on an
# H200"): G1 multiexp 95 ms at 2^24 (16-bit windows, 10 field multiplications per bucket
# addition at 1.7e13 IMAD/s), linear in the terms; G2 three times G1; an FFT 3 ms at 2^24, as
# n log n; a proof of 2^20 constraints 0.28 s (witness synthesis on the CPU, 0.23 s, plus 50 ms of
# GPU arithmetic), linear. On another machine the column is the H200's, not that machine's.
limit() {
    python3 -c "
import sys
what, k = sys.argv[1], int(sys.argv[2])
n = 2 ** k
table = {'g1': 0.095 * n / 2**24, 'g2': 0.285 * n / 2**24,
         'fft': 0.003 * n * k / (2**24 * 24), 'prove': 0.28 * n / 2**20}
print(f'{table[what]:.5f}')" "$1" "$2"
}
out=${OUT_MD:-target/bench-gpu-vs-peer.md}
mkdir -p "$(dirname "$out")"
{
    echo "| operation | size | ours (s) | peer (s) | ours / peer | peer | limit (s) | ours / limit |"
    echo "|---|---|---|---|---|---|---|---|"
} > "$out"
# row OPERATION K OURS PEER RATIO PEER_NAME LIMIT_KIND
row() {
    local l
    l=$(limit "$7" "$2")
    echo "| $1 | 2^$2 | $3 | $4 | $5 | $6 | $l | $(ratio "$3" "$l") |" >> "$out"
    tail -n 1 "$out" >&2
}
line() { grep "$1" | num; }

for section in $SECTIONS; do
    case $section in
    msm)
        for k in $MSM_SIZES; do
            o=$("$OURS_GPU_BIN" gpu-msm "$k" "$REPS" | line "gpu-msm 2^")
            p=$("$PEER_BIN" msm "$k" "$REPS" | num)
            row "G1 multiexp, ours GPU" "$k" "$o" "$p" "$(ratio "$o" "$p")" "blst multi_exp, CPU" g1
        done ;;
    g2)
        for k in $G2_SIZES; do
            o=$("$OURS_GPU_BIN" gpu-msm-g2 "$k" "$REPS" | line "gpu-msm-g2 2^")
            c=$("$OURS_CPU_BIN" msm-g2 "$k" 1 | num)
            row "G2 multiexp, ours GPU" "$k" "$o" "$c" "$(ratio "$o" "$c")" "ours on the CPU (no peer command)" g2
        done ;;
    fft)
        for k in $FFT_SIZES; do
            g=$("$OURS_GPU_BIN" gpu-fft "$k" "$REPS")
            c=$("$OURS_CPU_BIN" fft "$k" "$REPS" | num)
            d=$(line "gpu-fft-device" <<< "$g"); e=$(line "gpu-fft 2^" <<< "$g")
            row "FFT, ours GPU, data on the device" "$k" "$d" "$c" "$(ratio "$d" "$c")" "ours on the CPU (no peer command)" fft
            row "FFT, ours GPU, end to end" "$k" "$e" "$c" "$(ratio "$e" "$c")" "ours on the CPU (no peer command)" fft
        done ;;
    prove)
        for k in $PROVE_SIZES; do
            o=$("$OURS_GPU_BIN" prove "$k" "$REPS" | line "prove 2^")
            p=$("$PEER_BIN" prove "$k" "$REPS" 2>/dev/null | line "bellperson prove")
            row "Groth16 prove (squares), ours GPU" "$k" "$o" "$p" "$(ratio "$o" "$p")" "bellperson 0.27, GPU" prove
        done ;;
    batch)
        # A batch of BATCH_PROOFS proofs sharing one parameter set: ours through
        # create_proof_batch_with_options, the peer's create_random_proof_batch (its parameters
        # cached with BENCH_PARAMS_DIR). The limit column is BATCH_PROOFS proofs' limit.
        n=${BATCH_PROOFS:-10}
        for k in $BATCH_SIZES; do
            o=$("$OURS_GPU_BIN" batch "$k" "$n" "$REPS" | line "batch 2^")
            p=$("$PEER_BIN" batch "$k" "$n" "$REPS" 2>/dev/null | grep "bellperson batch" | grep -oE 'best [0-9.]+' | num)
            l=$(python3 -c "print($(limit prove "$k") * $n)")
            echo "| Groth16 batch of $n (squares), ours GPU | 2^$k | $o | $p | $(ratio "$o" "$p") | bellperson 0.27, GPU | $l | $(ratio "$o" "$l") |" >> "$out"
            tail -n 1 "$out" >&2
        done ;;
    *) echo "unknown section $section" >&2; exit 2 ;;
    esac
done
cat "$out"
