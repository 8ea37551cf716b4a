//! A device whose programs do not build is left out with a warning, and proofs are made on the
//! CPU (feature `gpu`; on PoCL in CI). The build is broken on purpose through the compiler
//! options, which are part of the program cache's key, so no cached binary hides the failure.
#![cfg(feature = "gpu")]

#[path = "circuits/mod.rs"]
mod circuits;

use blstrs::Scalar;
use circuits::Squares;
use preemptible_groth16::gpu::backend::devices;
use preemptible_groth16::gpu::device::{self, Selection, CPU_ENV};
use preemptible_groth16::gpu::locks::LOCK_DIR_ENV;
use preemptible_groth16::gpu::program::OPTIONS_ENV;
use preemptible_groth16::groth16::{
    create_random_proof_with_options, generate_random_parameters, prepare_verifying_key,
    verify_proof, ProveOptions,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn a_program_that_does_not_build_means_a_cpu_proof() {
    std::env::set_var(CPU_ENV, "1");
    // FIELD_LIMBS defined twice with different values: every kernel source fails to compile.
    std::env::set_var(OPTIONS_ENV, "-D FIELD_LIMBS=1 -D NOT_A_MACRO(=");
    let dir = tempfile::Builder::new()
        .prefix("pg16-build-failure-")
        .tempdir()
        .unwrap();
    std::env::set_var(LOCK_DIR_ENV, dir.path());
    let present = device::list(&Selection::from_env()).unwrap();
    assert!(!present.is_empty(), "no OpenCL device to break");
    assert!(
        devices().is_empty(),
        "a device whose programs fail must be left out"
    );

    let rng = &mut ChaCha20Rng::seed_from_u64(61);
    let c = Squares { n: 1 << 11 };
    let params = generate_random_parameters(c, rng).unwrap();
    let (proof, report) =
        create_random_proof_with_options(c, &params, rng, &ProveOptions::default()).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    assert!(verify_proof(&pvk, &proof, &[c.output::<Scalar>()]).unwrap());
    assert_eq!(report.gpu_chunks_total(), 0);
    assert!(!report.fft_on_gpu);
    assert_eq!(report.cpu_chunks, report.total_chunks);
}
