#!/usr/bin/env bash
# The main command (README): two provers as separate processes share a GPU. A long low-priority
# proof starts; once it holds the GPU a short high-priority one asks for it, takes it within a
# chunk, and the low one goes on on the CPU and comes back. Prints who held the GPU when and writes
# demo-timeline.svg. Without an OpenCL GPU it runs on a fake device of known speed.
#
#   scripts/demo.sh                          # low 2^18, high 2^14 constraints
#   scripts/demo.sh --low 20 --high 16 --rounds 10 --alone
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install Rust first (https://rustup.rs)" >&2
    exit 1
fi
scripts/install-opencl.sh
cargo run --release --features gpu,serde --example prover -- --demo "$@"
