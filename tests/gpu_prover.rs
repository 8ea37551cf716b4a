//! Proofs made with the GPU multiexps verify, and so do proofs whose GPU work fails and falls
//! back to the CPU (feature `gpu`; in CI on PoCL). One test function: the counters it reads are
//! per process.
#![cfg(feature = "gpu")]

#[path = "circuits/mod.rs"]
mod circuits;

use blstrs::Scalar;
use circuits::Squares;
use preemptible_groth16::gpu::backend::{
    inject_failures, multiexp_devices, stats, MIN_GPU_FFT, MIN_GPU_TERMS,
};
use preemptible_groth16::gpu::device::CPU_ENV;
use preemptible_groth16::groth16::{
    create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn gpu_proofs_verify_and_gpu_failures_fall_back_to_the_cpu() {
    // Admit PoCL before the backend picks its device (read once, at first use).
    std::env::set_var(CPU_ENV, "1");
    let rng = &mut ChaCha20Rng::seed_from_u64(51);
    // 2^11 + 3 constraints (squares, output, inputs): a domain of 2^12, so all five multiexps pass MIN_GPU_TERMS and the
    // quotient MIN_GPU_FFT.
    let c = Squares { n: 1 << 11 };
    assert!(c.n as usize >= MIN_GPU_TERMS);
    assert!((c.n as usize + 2).next_power_of_two() >= MIN_GPU_FFT);
    let params = generate_random_parameters(c, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let input: Scalar = c.output();

    // Each multiexp is split across every selected device: one part per device.
    let devices = multiexp_devices() as u64;
    assert!(devices >= 1, "no usable OpenCL device");
    let before = stats();
    let proof = create_random_proof(c, &params, rng).unwrap();
    assert!(verify_proof(&pvk, &proof, &[input]).unwrap());
    let after = stats();
    assert_eq!(
        after.gpu_multiexps - before.gpu_multiexps,
        5 * devices,
        "H, L, A, B in G1, B in G2"
    );
    assert_eq!(after.cpu_fallbacks, before.cpu_fallbacks);
    assert_eq!(after.gpu_quotients - before.gpu_quotients, 1, "the FFTs");
    assert_eq!(after.quotient_fallbacks, before.quotient_fallbacks);

    inject_failures(true);
    let proof = create_random_proof(c, &params, rng);
    inject_failures(false);
    let proof = proof.unwrap();
    assert!(verify_proof(&pvk, &proof, &[input]).unwrap());
    let last = stats();
    assert_eq!(
        last.cpu_fallbacks - after.cpu_fallbacks,
        5 * devices,
        "every GPU failure fell back"
    );
    assert_eq!(last.gpu_multiexps, after.gpu_multiexps);
    assert_eq!(last.quotient_fallbacks - after.quotient_fallbacks, 1);
    assert_eq!(last.gpu_quotients, after.gpu_quotients);
}
