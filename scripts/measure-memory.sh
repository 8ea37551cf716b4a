#!/usr/bin/env bash
# Peak host memory of one prover process proving from cached parameters, against the size of the
# parameter file (issue 5's target: at most 1.5x at 2^20). The first run caches the parameters
# (setup takes the most memory, so it is not the one measured); the second is measured with
# getrusage(RUSAGE_CHILDREN).
#
#   scripts/measure-memory.sh                       # 2^20, the prover built here with `gpu`
#   K=18 PROVER_BIN=.bench/prover scripts/measure-memory.sh   # on a host without cargo
set -euo pipefail
cd "$(dirname "$0")/.."
K=${K:-20}
PROOFS=${PROOFS:-2}
if [ -z "${PROVER_BIN:-}" ]; then
    cargo build --release --features gpu --example prover >&2
    PROVER_BIN=target/release/examples/prover
fi
"$PROVER_BIN" --circuit squares --log2-constraints "$K" --proofs 1 --json > /dev/null
python3 - "$PROVER_BIN" "$K" "$PROOFS" <<'PY'
import os, resource, subprocess, sys
prover, k, proofs = sys.argv[1:4]
run = subprocess.run([prover, "--circuit", "squares", "--log2-constraints", k, "--proofs", proofs,
                      "--json"], capture_output=True, text=True, check=True)
for line in run.stdout.splitlines():
    print(line)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
params = os.path.getsize(f"params-cache/squares-{k}.params")
print(f"peak resident memory {peak / 2**20:.0f} MiB, parameter file {params / 2**20:.0f} MiB: "
      f"{peak / params:.2f}x")
PY
