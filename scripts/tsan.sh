#!/usr/bin/env bash
# Runs the many-thread stress test of the scheduler and lock logic (fake devices, real lock
# files) and the thread-level preemption tests under ThreadSanitizer: nightly Rust with the
# standard library rebuilt instrumented (-Zbuild-std), so that std's own synchronisation is seen.
# blst's C code is not instrumented (races inside it would go unseen; it keeps no shared state).
#
#   scripts/tsan.sh                      # 6 threads x 2 proofs in the stress test
#   THREADS=10 PROOFS=3 scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup toolchain list | grep -q '^nightly'; then
    rustup toolchain install nightly --profile minimal
fi
rustup component add rust-src --toolchain nightly
target=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Zsanitizer=thread"
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
export PG16_STRESS_THREADS=${THREADS:-6} PG16_STRESS_PROOFS=${PROOFS:-2}
cargo +nightly test -Zbuild-std --target "$target" --release --features gpu \
    --target-dir target/tsan --test stress --test preemption -- --test-threads=1
