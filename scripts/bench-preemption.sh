#!/usr/bin/env bash
# Preemption measured beside the peer in one run: for each low-priority size, the demo of
# examples/prover.rs (a low-priority prover process, high-priority 2^HIGH prover processes one
# after another while it lives, each prover also timed alone) and then bellperson's own scenario
# (`bellperson-bench preempt LOW HIGH`). Prints the demo's summary lines and the peer's line.
#
#   scripts/bench-preemption.sh
#   LOWS="20 24" HIGH=16 ROUNDS="60 40" scripts/bench-preemption.sh
#   PROVER_BIN=.bench/prover PEER_BIN=.bench/bellperson-bench scripts/bench-preemption.sh  # no cargo
#
# Parameters are cached in params-cache/ (generated once, which takes minutes at 2^24). The
# timeline charts go to target/preemption-LOW-HIGH.svg. PEER_SIZES lists the low sizes to run
# the peer at (default 20: its scenario generates its parameters on every run, 80 s at 2^20);
# ALONE_SIZES the low sizes whose provers are also timed alone (default: all of LOWS; the median
# of ALONE_PROOFS proofs, default 2, after a first, in the same service processes as the rounds;
# the loss is measured against that median, so more proofs give a steadier figure). LOW_HOLDS_MS: how
# long the low prover holds the GPU before each high proof starts (default: 100 up to 2^20, whose
# low proofs hold it about 200 ms after synthesis, and 300 above). LOW_MAPPED=1: the low service
# proves from its parameter file mapped (`--mapped`). HIGH_GUARD=1: the high service holds a
# priority guard from before each proof's synthesis (`--high-guard`), so that the low prover hands
# the GPU over while the high proof is synthesized. RUNS=N (default 1) runs each low size's demo
# N times in a row and, after each run from the second, prints the medians over the runs so far
# of the figures issue 31 sets goals for (the high proof beside the low one over its time alone,
# the low proofs' loss after synthesis over the hold, the hand-over's p50 and p99), each run's
# figure in brackets: a script cut off by a time limit has printed those of the runs it finished.
set -euo pipefail
cd "$(dirname "$0")/.."
PEER=${PEER:-../shared/peers/bellperson-bench}
LOWS=${LOWS:-"20 24"}
HIGH=${HIGH:-16}
ROUNDS=(${ROUNDS:-60 40})
PEER_SIZES=${PEER_SIZES-20}
ALONE_SIZES=${ALONE_SIZES-$LOWS}
if [ -z "${PROVER_BIN:-}" ]; then
    cargo build --release --features gpu,serde --example prover >&2
    PROVER_BIN=target/release/examples/prover
fi
if [ -z "${PEER_BIN:-}" ] && [ -n "$PEER_SIZES" ]; then
    cargo build --release --manifest-path "$PEER/Cargo.toml" --target-dir target/peer >&2
    PEER_BIN=target/peer/release/bellperson-bench
fi
mkdir -p target
i=0
for low in $LOWS; do
    rounds=${ROUNDS[$i]:-${ROUNDS[-1]}}
    i=$((i + 1))
    alone=()
    for a in $ALONE_SIZES; do
        if [ "$a" = "$low" ]; then alone=(--alone-proofs "${ALONE_PROOFS:-2}"); fi
    done
    runs_log=target/preemption-$low-$HIGH.runs.txt
    : > "$runs_log"
    for run in $(seq 1 "${RUNS:-1}"); do
        echo "## low 2^$low, high 2^$HIGH, $rounds rounds${RUNS:+, run $run of $RUNS}"
        "$PROVER_BIN" --demo --low "$low" --high "$HIGH" --rounds "$rounds" "${alone[@]}" \
            --low-holds-ms "${LOW_HOLDS_MS:-$([ "$low" -le 20 ] && echo 100 || echo 300)}" \
            ${LOW_MAPPED:+--mapped} ${HIGH_GUARD:+--high-guard} \
            --svg "target/preemption-$low-$HIGH.svg" | tee -a "$runs_log"
        echo "## end of run" >> "$runs_log"
        if [ "$run" -gt 1 ]; then
            python3 scripts/preemption-medians.py "low 2^$low" < "$runs_log"
        fi
    done
    for p in $PEER_SIZES; do
        if [ "$p" = "$low" ]; then
            "$PEER_BIN" preempt "$low" "$HIGH"
        fi
    done
done
