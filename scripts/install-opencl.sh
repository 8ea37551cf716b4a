#!/usr/bin/env bash
# Installs, on Debian, what the `gpu` feature needs when it is missing: the OpenCL loader
# (libOpenCL.so, from ocl-icd-opencl-dev), which the build links, and PoCL (pocl-opencl-icd), an
# OpenCL device on any CPU for the tests and for machines without a GPU.
set -euo pipefail
if ! ldconfig -p | grep -q 'libOpenCL\.so ' || ! ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing the OpenCL loader and PoCL (apt)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ocl-icd-opencl-dev pocl-opencl-icd >/dev/null
fi
