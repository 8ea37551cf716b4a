//! The GPU API a caller can use whether or not the crate is built with the `gpu` feature (run
//! with and without it): the priority guard and the query whether a device is free.

use preemptible_groth16::gpu::{gpu_is_available, PriorityGuard};
use preemptible_groth16::groth16::Priority;

#[test]
fn the_guard_and_the_query_work_with_or_without_the_gpu_feature() {
    let dir = tempfile::Builder::new()
        .prefix("pg16-gpu-api-")
        .tempdir()
        .unwrap();
    std::env::set_var("PREEMPTIBLE_GROTH16_LOCK_DIR", dir.path());
    let available = gpu_is_available().unwrap();
    if !cfg!(feature = "gpu") {
        assert!(!available, "no device without the gpu feature");
    }
    for priority in [Priority::Low, Priority::Normal, Priority::High] {
        // Dropped at the end of each round: the claim ends with the guard.
        let guard = PriorityGuard::acquire(priority).unwrap();
        assert_eq!(guard.priority(), priority);
    }
    assert_eq!(gpu_is_available().unwrap(), available);
}
