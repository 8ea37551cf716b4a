#!/usr/bin/env bash
# Proofs from the cached parameter file read into memory against the same file mapped
# (`MappedParameters`), in turn, and a markdown table of the time after synthesis of each
# process's proofs after its first (a process's first proof pays for first touches).
#
#   scripts/mapped-vs-memory.sh                                  # 2^22, two rounds, 3 proofs each
#   SIZES="22 24" ROUNDS=2 PROOFS=3 PROVER_BIN=.bench/prover scripts/mapped-vs-memory.sh
#
# The parameters are cached in params-cache/ first (one proof, not counted). OUT_MD (default
# target/mapped-vs-memory.md) gets the table too; RUNS_DIR, if set, keeps each process's JSON lines.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-22}
ROUNDS=${ROUNDS:-2}
PROOFS=${PROOFS:-3}
OUT_MD=${OUT_MD:-target/mapped-vs-memory.md}
if [ -z "${PROVER_BIN:-}" ]; then
    cargo build --release --features gpu,serde --example prover >&2
    PROVER_BIN=target/release/examples/prover
fi
mkdir -p target
runs=${RUNS_DIR:-$(mktemp -d)}
mkdir -p "$runs"
for k in $SIZES; do
    "$PROVER_BIN" --log2-constraints "$k" --proofs 1 >&2
    for r in $(seq "$ROUNDS"); do
        "$PROVER_BIN" --log2-constraints "$k" --proofs "$PROOFS" --json > "$runs/$k-memory-$r.json"
        "$PROVER_BIN" --log2-constraints "$k" --proofs "$PROOFS" --json --mapped > "$runs/$k-mapped-$r.json"
    done
done
python3 - "$runs" "$SIZES" > "$OUT_MD" <<'PY'
import glob, json, os, statistics, sys

runs, sizes = sys.argv[1], sys.argv[2].split()
def after_synthesis(k, kind):
    """ms after synthesis of each process's proofs after its first, and of the first ones."""
    later, first = [], []
    for path in sorted(glob.glob(os.path.join(runs, f"{k}-{kind}-*.json"))):
        rows = [json.loads(l) for l in open(path) if l.startswith("{") and "total_ms" in l]
        if not all(r.get("verified") for r in rows):
            sys.exit(f"{path}: a proof did not verify")
        times = [r["total_ms"] - r["synthesis_ms"] for r in rows]
        first += times[:1]
        later += times[1:]
    return later, first

print("| size | in memory, after synthesis (ms) | mapped (ms) | mapped / in memory (medians) | first proofs: in memory, mapped (ms) |")
print("|---|---|---|---|---|")
for k in sizes:
    (mem, mem_first), (mapped, mapped_first) = after_synthesis(k, "memory"), after_synthesis(k, "mapped")
    span = lambda v: f"{min(v):.0f}-{max(v):.0f} (median {statistics.median(v):.0f})"
    ratio = statistics.median(mapped) / statistics.median(mem)
    firsts = ", ".join(f"{t:.0f}" for t in mem_first) + "; " + ", ".join(f"{t:.0f}" for t in mapped_first)
    print(f"| 2^{k} | {span(mem)} | {span(mapped)} | {ratio:.3f}x | {firsts} |")
PY
cat "$OUT_MD"
[ -n "${RUNS_DIR:-}" ] || rm -rf "$runs"
