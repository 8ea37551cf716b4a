#!/usr/bin/env bash
# Runs each fuzz target (fuzz/fuzz_targets: parameters, verifying keys, proofs from untrusted
# bytes) for SECONDS_EACH seconds (default 60) with cargo-fuzz on the nightly toolchain, seeded with
# valid encodings from the tests' circuits. Exits nonzero on a build failure and on any finding of
# libFuzzer (a crash, an out-of-memory, a timeout or a leak, each saved under fuzz/artifacts/, or
# any other nonzero exit of `cargo fuzz run`); turn a finding into a regression test in
# tests/serialization.rs. Prints libFuzzer's stats lines, and the end of its log on a failure.
#
#   scripts/fuzz.sh                  # a minute each
#   SECONDS_EACH=600 scripts/fuzz.sh read_parameters
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz
rustup toolchain list | grep -q nightly || rustup toolchain install nightly --profile minimal
targets=${*:-"read_parameters read_verifying_key read_proof"}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Runs a step with its output in a log; on failure shows the end of the log and stops.
quietly() {
    local step=$1
    shift
    if ! "$@" >"$logs/$step.log" 2>&1; then
        tail -n 40 "$logs/$step.log" >&2
        echo "fuzz: $step failed: $*" >&2
        exit 1
    fi
}

quietly seeds env PG16_FUZZ_SEEDS=fuzz/corpus \
    cargo test --test serialization -- --ignored --exact write_fuzz_seeds
quietly build cargo +nightly fuzz build
failed=0
for t in $targets; do
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    touch "$logs/start"
    echo "fuzzing $t for ${SECONDS_EACH:-60} s" >&2
    # -rss_limit_mb keeps an allocation driven by a length field from passing unnoticed; a read
    # of 64 KiB taking 10 s is a hang.
    rc=0
    cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- \
        -max_total_time="${SECONDS_EACH:-60}" -rss_limit_mb=1024 -timeout=10 -max_len=65536 \
        -print_final_stats=1 >"$logs/$t.log" 2>&1 || rc=$?
    grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$logs/$t.log" >&2 || true
    findings=$(find "fuzz/artifacts/$t" -maxdepth 1 -type f -newer "$logs/start" \
        \( -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' -o -name 'leak-*' \) | sort)
    if [ "$rc" -ne 0 ] || [ -n "$findings" ]; then
        if [ -n "$findings" ]; then
            grep -E 'panicked|ERROR|SUMMARY' "$logs/$t.log" | head -n 10 >&2 || true
        else
            tail -n 20 "$logs/$t.log" >&2
        fi
        echo "$t: cargo fuzz run exited with $rc; findings: ${findings:-none saved}" >&2
        failed=1
    fi
done
exit "$failed"
