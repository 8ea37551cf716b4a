#!/usr/bin/env bash
# The test command (README): installs what the tests need on a fresh Debian machine, then runs
# every test, the OpenCL ones included (on PoCL, Debian's CPU OpenCL, when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install Rust first (https://rustup.rs)" >&2
    exit 1
fi

# The `gpu` feature links the OpenCL loader and its tests need a device (PoCL on any CPU).
scripts/install-opencl.sh

# The test profile is optimised (Cargo.toml), so the proofs in the tests take seconds.
cargo test --all-features
# The full-disk test mounts a tmpfs: ignored unless root runs it (as CI does).
[ "$(id -u)" -ne 0 ] || cargo test --all-features --test preemption -- --ignored --exact a_full_lock_directory_loses_no_proof
scripts/examples-smoke.sh
