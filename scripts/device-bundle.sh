#!/usr/bin/env bash
# Builds, here, the stripped binaries a GPU host without cargo runs (the benchmarks' `compare`
# with and without the `gpu` feature, the `prover` example, the OpenCL test binaries and the
# peer), into .bench/ (ignored by git), for the device tool to carry (64 MiB at most). The
# commands in docs/BENCHMARKS.md name these files.
#
#   scripts/device-bundle.sh            # then carry .bench to the GPU host
set -euo pipefail
cd "$(dirname "$0")/.."
out=.bench
mkdir -p "$out"
PEER=${PEER:-../shared/peers/bellperson-bench}
PEER_TARGET=${PEER_TARGET:-target/peer}
# The executable cargo builds for these arguments (the file name's hash depends on the features).
exe_of() {
    cargo build --release "$@" --message-format=json \
        | python3 -c 'import json, sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' \
        | tail -n 1
}
cp "$(exe_of --features gpu --bench compare)" "$out/compare"
cp "$(exe_of --bench compare)" "$out/compare-cpu"
cp "$(exe_of --features gpu,serde --example prover)" "$out/prover"
for t in gpu_fields gpu_fft gpu_multiexp gpu_prover; do
    exe=$(cargo test --all-features --test "$t" --no-run --message-format=json \
        | python3 -c 'import json, sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable")]' \
        | tail -n 1)
    cp "$exe" "$out/$t"
done
cargo build --release --manifest-path "$PEER/Cargo.toml" --target-dir "$PEER_TARGET" >&2
cp "$PEER_TARGET/release/bellperson-bench" "$out/bellperson-bench"
strip "$out"/compare "$out"/compare-cpu "$out"/prover "$out"/gpu_* "$out"/bellperson-bench
du -sh "$out" >&2
