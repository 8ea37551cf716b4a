//! `MappedParameters`: proofs from a mapped file equal those from the same parameters in memory;
//! a truncated, corrupt or malformed file is an error at open or at the proof, never a panic or
//! a `SIGBUS`.

mod circuits;

use circuits::Squares;
use ff::Field;
use preemptible_groth16::groth16::{
    create_proof, create_proof_batch, create_random_proof_batch_in_priority,
    generate_random_parameters, prepare_verifying_key, verify_proof, MappedParameters,
    ParameterSource, Parameters, ReadError,
};
use preemptible_groth16::Scalar;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::sync::OnceLock;
use tempfile::NamedTempFile;

const CIRCUIT: Squares = Squares { n: 300 };

/// The circuit's parameters and their file's bytes, made once.
fn params() -> &'static (Parameters, Vec<u8>) {
    static PARAMS: OnceLock<(Parameters, Vec<u8>)> = OnceLock::new();
    PARAMS.get_or_init(|| {
        let rng = &mut ChaCha20Rng::seed_from_u64(5);
        let params = generate_random_parameters(CIRCUIT, rng).unwrap();
        let mut bytes = Vec::new();
        params.write(&mut bytes).unwrap();
        (params, bytes)
    })
}

/// A file of `bytes` under the temp directory, removed when dropped.
fn temp_file(name: &str, bytes: &[u8]) -> NamedTempFile {
    let file = tempfile::Builder::new()
        .prefix(&format!("mapped-params-{name}-"))
        .suffix(".params")
        .tempfile()
        .unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    file
}

/// Byte offset of the first point of each query (h, l, a, b_g1, b_g2).
fn query_starts(params: &Parameters) -> Vec<usize> {
    let mut at = 96 * 3 + 192 * 3 + 4 + 96 * params.vk.ic.len();
    let mut starts = Vec::new();
    for (len, size) in [
        (params.h.len(), 96),
        (params.l.len(), 96),
        (params.a.len(), 96),
        (params.b_g1.len(), 96),
        (params.b_g2.len(), 192),
    ] {
        starts.push(at + 4);
        at += 4 + len * size;
    }
    starts
}

#[test]
fn proofs_from_a_mapped_file_equal_those_from_memory() {
    let (params, bytes) = params();
    let file = temp_file("equal", bytes);
    let pvk = prepare_verifying_key(&params.vk);
    for checked in [false, true] {
        let mapped = MappedParameters::open(file.path(), checked).unwrap();
        assert_eq!(mapped.vk(), &params.vk);
        assert_eq!(mapped.checked(), checked);
        assert_eq!(mapped.h().len(), params.h.len());
        assert_eq!(mapped.b_g2().len(), params.b_g2.len());
        let (r, s) = (Scalar::from(17u64), Scalar::from(23u64));
        let from_memory = create_proof(CIRCUIT, params, r, s).unwrap();
        let from_file = create_proof(CIRCUIT, &mapped, r, s).unwrap();
        assert_eq!(from_file, from_memory);
        assert!(verify_proof(&pvk, &from_file, &[CIRCUIT.output()]).unwrap());
    }
}

#[test]
fn a_mapped_file_serves_batches_and_priorities() {
    let (params, bytes) = params();
    let file = temp_file("batch", bytes);
    let mapped = MappedParameters::open(file.path(), false).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let rng = &mut ChaCha20Rng::seed_from_u64(6);
    let proofs =
        create_random_proof_batch_in_priority(vec![CIRCUIT; 3], &mapped, rng, true).unwrap();
    for proof in &proofs {
        assert!(verify_proof(&pvk, proof, &[CIRCUIT.output()]).unwrap());
    }
    // Parameters of another circuit are refused, naming the query, as in memory.
    let other = Squares { n: 40 };
    let err = create_proof_batch(vec![other], &mapped, vec![Scalar::ONE], vec![Scalar::ONE])
        .unwrap_err()
        .to_string();
    assert!(err.contains("query"), "{err}");
}

#[test]
fn every_truncation_is_an_error_at_open() {
    let (_, bytes) = params();
    // Every cut inside the key and the length fields, and a few inside each query.
    let starts = query_starts(&params().0);
    let mut cuts: Vec<usize> = (0..starts[0] + 8).collect();
    for &s in &starts {
        cuts.extend([s - 4, s - 1, s, s + 95, s + 96 * 7 + 3]);
    }
    cuts.push(bytes.len() - 1);
    for len in cuts {
        let file = temp_file("cut", &bytes[..len]);
        match MappedParameters::open(file.path(), false) {
            Err(ReadError::Truncated { .. }) => {}
            other => panic!("truncated to {len} of {} bytes: {other:?}", bytes.len()),
        }
    }
    // Bytes after the last query are ignored, as `Parameters::read` ignores them.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0xff; 100]);
    let file = temp_file("longer", &longer);
    assert!(MappedParameters::open(file.path(), true).is_ok());
}

#[test]
fn a_length_field_claiming_more_than_the_file_is_truncation() {
    let (params, bytes) = params();
    let starts = query_starts(params);
    let mut hostile = bytes.clone();
    hostile[starts[1] - 4..starts[1]].copy_from_slice(&u32::MAX.to_be_bytes());
    let file = temp_file("hostile", &hostile);
    assert!(matches!(
        MappedParameters::open(file.path(), false),
        Err(ReadError::Truncated { section: "l" })
    ));
}

#[test]
fn mismatched_query_lengths_are_malformed() {
    let (params, _) = params();
    let mut shorter_b = params.clone();
    shorter_b.b_g2.pop();
    let mut bytes = Vec::new();
    shorter_b.write(&mut bytes).unwrap();
    let file = temp_file("malformed", &bytes);
    assert!(matches!(
        MappedParameters::open(file.path(), false),
        Err(ReadError::Malformed(_))
    ));
}

#[test]
fn a_corrupt_point_fails_the_checked_open_and_the_unchecked_proof() {
    let (params, bytes) = params();
    let starts = query_starts(params);
    for (query, name, size) in [(1, "l", 96), (4, "b_g2", 192)] {
        let mut corrupt = bytes.clone();
        // A bit of the y coordinate of the query's third point: off the curve.
        corrupt[starts[query] + 2 * size + size - 1] ^= 1;
        let file = temp_file(name, &corrupt);
        match MappedParameters::open(file.path(), true) {
            Err(ReadError::InvalidPoint { section, index: 2 }) if section == name => {}
            other => panic!("{name}: {other:?}"),
        }
        let unchecked = MappedParameters::open(file.path(), false).unwrap();
        let err = create_proof(CIRCUIT, &unchecked, Scalar::ONE, Scalar::ONE)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("{name}[2]")), "{name}: {err}");
    }
}

#[test]
fn a_file_cut_short_after_open_fails_the_proof_naming_the_points_never_a_sigbus() {
    use preemptible_groth16::groth16::{create_proof_with_options, ProveOptions};
    let (params, bytes) = params();
    let starts = query_starts(params);
    // Cut inside b_g1, after its fifth point: the points are read from the file, not through
    // the mapping, so the lost part is a read error (through the mapping it would be a SIGBUS,
    // which ends the test process).
    let cut = starts[3] + 5 * 96 + 10;
    for use_gpu in [false, true] {
        let file = temp_file("cut", bytes);
        let mapped = MappedParameters::open(file.path(), false).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(file.path())
            .unwrap()
            .set_len(cut as u64)
            .unwrap();
        let options = ProveOptions::default().use_gpu(use_gpu);
        let err = create_proof_with_options(CIRCUIT, &mapped, Scalar::ONE, Scalar::ONE, &options)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("could not be read") && err.contains("b_g"),
            "GPU allowed: {use_gpu}: {err}"
        );
    }
}

#[test]
fn a_missing_file_is_an_io_error() {
    let dir = tempfile::Builder::new()
        .prefix("mapped-params-")
        .tempdir()
        .unwrap();
    let missing = dir.path().join("no-such-file.params");
    assert!(matches!(
        MappedParameters::open(&missing, false),
        Err(ReadError::Io { .. })
    ));
}
