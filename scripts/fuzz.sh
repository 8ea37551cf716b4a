#!/usr/bin/env bash
# Runs each fuzz target (fuzz/fuzz_targets: parameters, verifying keys, proofs from untrusted
# bytes) for SECONDS_EACH seconds (default 60) with cargo-fuzz on the nightly toolchain, seeded with
# valid encodings from the tests' circuits. A crash stops the run with the input saved under
# fuzz/artifacts/; turn it into a regression test in tests/serialization.rs.
#
#   scripts/fuzz.sh                  # a minute each
#   SECONDS_EACH=600 scripts/fuzz.sh read_parameters
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
targets=${*:-"read_parameters read_verifying_key read_proof"}
PG16_FUZZ_SEEDS=fuzz/corpus cargo test --test serialization write_fuzz_seeds -q >/dev/null
for t in $targets; do
    mkdir -p "fuzz/corpus/$t"
    echo "fuzzing $t for ${SECONDS_EACH:-60} s" >&2
    # -rss_limit_mb keeps an allocation driven by a length field from passing unnoticed.
    cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="${SECONDS_EACH:-60}" -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
        2>&1 | grep -E 'stat::number_of_executed_units|stat::peak_rss_mb|ERROR|SUMMARY|crash-' || true
    if ls "fuzz/artifacts/$t"/crash-* >/dev/null 2>&1; then
        echo "$t: crash found, see fuzz/artifacts/$t" >&2
        exit 1
    fi
done
