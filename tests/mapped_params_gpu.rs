//! A proof from a mapped file through the GPU scheduler (a fake device: the real scheduler and
//! lock files) equals the one from the same parameters in memory, and the device computed part
//! of it; a point off the curve in the file fails the proof, naming it. Alone in its binary: the
//! fake device is chosen by an environment variable read once per process.
#![cfg(feature = "gpu")]

mod circuits;

use circuits::Squares;
use preemptible_groth16::gpu::fake::FAKE_GPUS_ENV;
use preemptible_groth16::gpu::locks::LOCK_DIR_ENV;
use preemptible_groth16::groth16::{
    create_proof_with_options, generate_random_parameters, prepare_verifying_key, verify_proof,
    MappedParameters, ParameterSource, ProveOptions,
};
use preemptible_groth16::Scalar;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[test]
fn a_mapped_proof_on_a_fake_device_equals_the_one_from_memory() {
    std::env::set_var(FAKE_GPUS_ENV, "1:1000");
    let dir = tempfile::Builder::new()
        .prefix("pg16-mapped-gpu-")
        .tempdir()
        .unwrap();
    std::env::set_var(LOCK_DIR_ENV, dir.path());

    let circuit = Squares::log2(12);
    let params = generate_random_parameters(circuit, &mut ChaCha20Rng::seed_from_u64(8)).unwrap();
    let path = dir.path().join("squares-12.params");
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let mapped = MappedParameters::open(&path, false).unwrap();

    let options = ProveOptions::default().chunk_terms(1 << 10);
    let (r, s) = (Scalar::from(5u64), Scalar::from(9u64));
    let (from_memory, _) = create_proof_with_options(circuit, &params, r, s, &options).unwrap();
    let (from_file, report) = create_proof_with_options(circuit, &mapped, r, s, &options).unwrap();
    assert_eq!(from_file, from_memory);
    assert!(verify_proof(
        &prepare_verifying_key(&params.vk),
        &from_file,
        &[circuit.output()]
    )
    .unwrap());
    let on_device: u64 = report.gpu_chunks.iter().map(|(_, n)| n).sum();
    assert!(on_device > 0, "no chunk on the device: {report:?}");
    // Nothing preempted the device: each base went up at most once.
    let uploaded = report.bases_uploaded_bytes;
    assert!(
        uploaded > 0 && uploaded < bytes.len() as u64,
        "{uploaded} bytes of bases uploaded from a file of {}",
        bytes.len()
    );

    // A point of the L query off the curve: the proof fails, naming it, wherever its chunk ran
    // (a device decodes its chunks' bases itself, the CPU its own).
    let l = params.l().as_slice().unwrap();
    let bad = l.len() - 5;
    let encoding = l[bad].to_uncompressed();
    let at = bytes
        .windows(96)
        .position(|w| w == encoding.as_ref())
        .unwrap();
    bytes[at + 95] ^= 1;
    let path = dir.path().join("squares-12-corrupt.params");
    std::fs::write(&path, &bytes).unwrap();
    let corrupt = MappedParameters::open(&path, false).unwrap();
    for chunk_terms in [1 << 10, 1 << 6] {
        let options = ProveOptions::default().chunk_terms(chunk_terms);
        let e = create_proof_with_options(circuit, &corrupt, r, s, &options).unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains(&format!("l[{bad}]")),
            "chunks of {chunk_terms}: {message}"
        );
    }
}
