#!/usr/bin/env bash
# The test command (README): installs what the tests need on a fresh Debian machine, then runs
# every test, the OpenCL ones included (on PoCL, Debian's CPU OpenCL, when there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install Rust first (https://rustup.rs)" >&2
    exit 1
fi

# The `gpu` feature links the OpenCL loader (libOpenCL.so, from ocl-icd-opencl-dev) and its
# tests need a device: PoCL (pocl-opencl-icd) provides one on any CPU.
if ! ldconfig -p | grep -q 'libOpenCL\.so ' || ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing the OpenCL loader and PoCL (apt)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ocl-icd-opencl-dev pocl-opencl-icd >/dev/null
fi

# The test profile is optimised (Cargo.toml), so the proofs in the tests take seconds.
cargo test --all-features
