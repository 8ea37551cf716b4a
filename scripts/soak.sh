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
PG16_SOAK_SECONDS=${SECONDS_TO_RUN:-600} PG16_SOAK_PROVERS=${PROVERS:-6} \
    cargo test --release --features gpu --test soak -- --nocapture soak_many_provers_with_kills 2>&1 \
    | grep -E '^soak:|panicked|failed|test result'
