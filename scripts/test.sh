#!/usr/bin/env bash
# The test command (README): runs every test on a fresh Debian machine with Rust installed.
# The CPU prover needs no system packages; the OpenCL loader and PoCL are installed here once the
# `gpu` feature has kernels to test.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install Rust first (https://rustup.rs)" >&2
    exit 1
fi

# The test profile is optimised (Cargo.toml), so the proofs in the tests take seconds.
cargo test --all-features
