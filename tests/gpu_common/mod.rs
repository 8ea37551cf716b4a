//! What the GPU tests share: the device they run on.

use preemptible_groth16::gpu::{device, Device, Selection};

/// The first OpenCL device, CPU devices (PoCL) admitted, GPUs first. The test command installs
/// PoCL, so a missing device is a failure, not a skip.
pub fn any_device() -> Device {
    let selection = Selection {
        include_cpu: true,
        ..Selection::from_env()
    };
    device::list(&selection)
        .expect("list OpenCL devices")
        .into_iter()
        .next()
        .expect("no OpenCL device: run scripts/test.sh, which installs PoCL")
}
