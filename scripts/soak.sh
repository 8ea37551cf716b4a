#!/usr/bin/env bash
# The soak test (docs/RELIABILITY.md): provers as separate processes with random priorities on
# fake devices for SECONDS (default 600), PROVERS at a time (default 6), about a third of them
# killed with SIGKILL at random moments. Fails if a finished proof does not verify, a device stays
# locked or wanted after its holder died, or the lock directory grows; prints a summary line.
#
#   scripts/soak.sh                 # ten minutes
#   SECONDS_TO_RUN=60 PROVERS=8 scripts/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-opencl.sh
# The soak test needs `serde` too (its children print JSON reports); without it the test binary
# is empty and "passes" with nothing run, so the count of tests run is checked below.
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
PG16_SOAK_SECONDS=${SECONDS_TO_RUN:-600} PG16_SOAK_PROVERS=${PROVERS:-6} \
    cargo test --release --features gpu,serde --test soak -- --nocapture --exact \
    soak_many_provers_with_kills >"$out" 2>&1 || status=$?
grep -E '^soak:|panicked|failed|test result' "$out" || true
if [ "$status" -ne 0 ]; then
    tail -n 40 "$out" >&2
    exit "$status"
fi
if ! grep -q '^test result: ok. 1 passed' "$out"; then
    echo "soak: the soak test did not run" >&2
    exit 1
fi
