//! `compat::bellperson`: a program written for bellperson 0.27, with circuits built from
//! bellperson's own gadgets, runs with only its `use` lines changed; its proofs and files pass
//! between the two crates both ways.

mod circuits;

// The lines a bellperson program changes: `bellperson::{...}` and `bellperson::groth16::...`.
use preemptible_groth16::compat::bellperson::groth16::{
    create_proof, create_proof_batch_in_priority, create_random_proof, create_random_proof_batch,
    create_random_proof_batch_with_options, create_random_proof_in_priority, generate_parameters,
    generate_random_parameters, prepare_verifying_key, verify_proof, verify_proofs_batch,
    MappedParameters, Parameters, Proof, VerifyingKey,
};
use preemptible_groth16::compat::bellperson::{Circuit, ConstraintSystem, SynthesisError};
// Lines it keeps: bellperson's gadgets, written on the same traits.
use bellperson::gadgets::blake2s::blake2s;
use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::sha256::sha256;

use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use ff::{Field, PrimeField};
use group::Group;
use preemptible_groth16::groth16 as native;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::Digest;
use std::sync::OnceLock;

/// Knowledge of an 80-byte preimage of a public SHA-256 digest (the size of a block header),
/// written as a bellperson 0.27 user writes it.
#[derive(Clone)]
struct Sha256Preimage {
    preimage: Option<[u8; 80]>,
}

/// Knowledge of a 32-byte preimage of a public BLAKE2s digest.
#[derive(Clone)]
struct Blake2sPreimage {
    preimage: Option<[u8; 32]>,
}

/// The preimage's bits as `Boolean`s, `to_bits` giving each byte's order.
fn alloc_bits<S: PrimeField, CS: ConstraintSystem<S>>(
    cs: &mut CS,
    bytes: Option<&[u8]>,
    len: usize,
    to_bits: fn(&[u8]) -> Vec<bool>,
) -> Result<Vec<Boolean>, SynthesisError> {
    let bits: Vec<Option<bool>> = match bytes {
        Some(b) => to_bits(b).into_iter().map(Some).collect(),
        None => vec![None; len * 8],
    };
    bits.into_iter()
        .enumerate()
        .map(|(i, b)| {
            AllocatedBit::alloc(cs.namespace(|| format!("preimage bit {i}")), b).map(Boolean::from)
        })
        .collect()
}

impl<S: PrimeField> Circuit<S> for Sha256Preimage {
    fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let preimage = self.preimage.as_ref().map(|p| &p[..]);
        let bits = alloc_bits(cs, preimage, 80, multipack::bytes_to_bits)?;
        let digest = sha256(cs.namespace(|| "sha256"), &bits)?;
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

impl<S: PrimeField> Circuit<S> for Blake2sPreimage {
    fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let preimage = self.preimage.as_ref().map(|p| &p[..]);
        let bits = alloc_bits(cs, preimage, 32, multipack::bytes_to_bits_le)?;
        let digest = blake2s(cs.namespace(|| "blake2s"), &bits, b"pg16test")?;
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

fn sha256_inputs(preimage: &[u8; 80]) -> Vec<Scalar> {
    let digest = sha2::Sha256::digest(preimage);
    multipack::compute_multipacking(&multipack::bytes_to_bits(&digest))
}

fn blake2s_inputs(preimage: &[u8; 32]) -> Vec<Scalar> {
    let digest = blake2s_simd::Params::new()
        .hash_length(32)
        .personal(b"pg16test")
        .hash(preimage);
    multipack::compute_multipacking(&multipack::bytes_to_bits_le(digest.as_bytes()))
}

fn preimage<const N: usize>(seed: u8) -> [u8; N] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
}

/// The SHA-256 circuit's parameters, made once for all tests (about 2^16 constraints).
fn sha256_params() -> &'static Parameters<Bls12> {
    static PARAMS: OnceLock<Parameters<Bls12>> = OnceLock::new();
    PARAMS.get_or_init(|| {
        let rng = &mut ChaCha20Rng::seed_from_u64(80);
        generate_random_parameters(Sha256Preimage { preimage: None }, rng).unwrap()
    })
}

fn blake2s_params() -> &'static Parameters<Bls12> {
    static PARAMS: OnceLock<Parameters<Bls12>> = OnceLock::new();
    PARAMS.get_or_init(|| {
        let rng = &mut ChaCha20Rng::seed_from_u64(32);
        generate_random_parameters(Blake2sPreimage { preimage: None }, rng).unwrap()
    })
}

fn bytes<F: FnOnce(&mut Vec<u8>) -> std::io::Result<()>>(write: F) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    out
}

#[test]
fn sha256_gadget_proves_in_a_batch_and_in_priority_and_batch_verifies() {
    let rng = &mut ChaCha20Rng::seed_from_u64(1);
    let params = sha256_params();
    let pvk = prepare_verifying_key(&params.vk);
    let images: Vec<[u8; 80]> = (0..2).map(preimage::<80>).collect();
    let circuits = images
        .iter()
        .map(|p| Sha256Preimage { preimage: Some(*p) })
        .collect();
    let mut proofs = create_random_proof_batch(circuits, params, rng).unwrap();
    let circuit = Sha256Preimage {
        preimage: Some(images[0]),
    };
    proofs.push(create_random_proof_in_priority(circuit, params, rng, true).unwrap());
    let mut inputs: Vec<Vec<Scalar>> = images.iter().map(sha256_inputs).collect();
    inputs.push(inputs[0].clone());

    for (proof, input) in proofs.iter().zip(&inputs) {
        assert!(verify_proof(&pvk, proof, input).unwrap());
    }
    let refs: Vec<&Proof<Bls12>> = proofs.iter().collect();
    assert!(verify_proofs_batch(&pvk, rng, &refs, &inputs).unwrap());
    // One wrong digest spoils the batch.
    inputs[1][0] += Scalar::ONE;
    assert!(!verify_proofs_batch(&pvk, rng, &refs, &inputs).unwrap());
    assert!(!verify_proof(&pvk, &proofs[1], &inputs[1]).unwrap());
}

#[test]
fn sha256_gadget_proves_from_mapped_parameters_and_bellperson_verifies() {
    let rng = &mut ChaCha20Rng::seed_from_u64(9);
    let params = sha256_params();
    let file = tempfile::Builder::new()
        .prefix("compat-sha256-")
        .suffix(".params")
        .tempfile()
        .unwrap();
    std::fs::write(file.path(), bytes(|w| params.write(w))).unwrap();
    let mapped: MappedParameters<Bls12> =
        Parameters::build_mapped_parameters(file.path().to_path_buf(), false).unwrap();
    // Removed once mapped: the mapping stays valid.
    file.close().unwrap();
    assert_eq!(mapped.vk, params.vk);
    assert!(!mapped.checked);
    let images: Vec<[u8; 80]> = (30..32).map(preimage::<80>).collect();
    let circuits = images
        .iter()
        .map(|p| Sha256Preimage { preimage: Some(*p) })
        .collect();
    let mut proofs = create_random_proof_batch(circuits, &mapped, rng).unwrap();
    let circuit = Sha256Preimage {
        preimage: Some(images[0]),
    };
    proofs.push(create_random_proof_in_priority(circuit, &mapped, rng, true).unwrap());
    let inputs: Vec<Vec<Scalar>> = [0, 1, 0]
        .iter()
        .map(|&i| sha256_inputs(&images[i]))
        .collect();

    let bp_vk =
        bellperson::groth16::VerifyingKey::<Bls12>::read(&bytes(|w| mapped.vk.write(w))[..])
            .unwrap();
    let bp_pvk = bellperson::groth16::prepare_verifying_key(&bp_vk);
    for (proof, input) in proofs.iter().zip(&inputs) {
        assert!(verify_proof(&mapped.pvk, proof, input).unwrap());
        let theirs =
            bellperson::groth16::Proof::<Bls12>::read(&bytes(|w| proof.write(w))[..]).unwrap();
        assert!(bellperson::groth16::verify_proof(&bp_pvk, &theirs, input).unwrap());
    }
}

#[test]
fn blake2s_gadget_proves_in_a_priority_batch_with_reports() {
    let rng = &mut ChaCha20Rng::seed_from_u64(2);
    let params = blake2s_params();
    let pvk = prepare_verifying_key(&params.vk);
    let images: Vec<[u8; 32]> = (10..13).map(preimage::<32>).collect();
    let circuits: Vec<_> = images
        .iter()
        .map(|p| Blake2sPreimage { preimage: Some(*p) })
        .collect();
    let r: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut *rng)).collect();
    let s: Vec<Scalar> = (0..3).map(|_| Scalar::random(&mut *rng)).collect();
    let proofs = create_proof_batch_in_priority(circuits.clone(), params, r, s, true).unwrap();
    for (proof, image) in proofs.iter().zip(&images) {
        assert!(verify_proof(&pvk, proof, &blake2s_inputs(image)).unwrap());
    }
    // This crate's addition: the options and a report beside each proof.
    let options = native::ProveOptions::with_priority(native::Priority::Low)
        .use_gpu(false)
        .witnesses_ahead(Some(1));
    let with_reports =
        create_random_proof_batch_with_options(circuits, params, rng, &options).unwrap();
    for ((proof, report), image) in with_reports.iter().zip(&images) {
        assert!(verify_proof(&pvk, proof, &blake2s_inputs(image)).unwrap());
        assert_eq!(report.priority, native::Priority::Low);
        assert_eq!(report.gpu_chunks_total(), 0);
        assert!(report.total_chunks > 0 && report.cpu_chunks == report.total_chunks);
    }
    // The batch's third circuit (bellperson's gadgets, through the 0.2 traits) ran for its
    // witness only, from the shape recorded while the second was synthesized beside the first.
    let used: Vec<bool> = with_reports.iter().map(|(_, r)| r.shape_used).collect();
    assert_eq!(used, [false, false, true]);
}

#[test]
fn bellperson_verifies_our_proofs_and_we_verify_its_with_the_same_circuit_value() {
    let rng = &mut ChaCha20Rng::seed_from_u64(3);
    let params = blake2s_params();
    let image = preimage::<32>(7);
    let input = blake2s_inputs(&image);
    let circuit = Blake2sPreimage {
        preimage: Some(image),
    };

    // Our file, read by bellperson (checked), gives back the same bytes.
    let file = bytes(|w| params.write(w));
    let bp_params = bellperson::groth16::Parameters::<Bls12>::read(&file[..], true).unwrap();
    assert_eq!(bytes(|w| bp_params.write(w)), file);
    let bp_pvk = bellperson::groth16::prepare_verifying_key(&bp_params.vk);

    // Ours verified by bellperson.
    let proof = create_random_proof(circuit.clone(), params, rng).unwrap();
    let theirs = bellperson::groth16::Proof::<Bls12>::read(&bytes(|w| proof.write(w))[..]).unwrap();
    assert!(bellperson::groth16::verify_proof(&bp_pvk, &theirs, &input).unwrap());

    // The very same circuit value proved by bellperson (one trait, not two), verified here.
    let bp_proof = bellperson::groth16::create_random_proof(circuit, &bp_params, rng).unwrap();
    let ours = Proof::<Bls12>::read(&bytes(|w| bp_proof.write(w))[..]).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    assert!(verify_proof(&pvk, &ours, &input).unwrap());
    let mut wrong = input.clone();
    wrong[0] += Scalar::ONE;
    assert!(!verify_proof(&pvk, &ours, &wrong).unwrap());
}

#[test]
fn files_and_proofs_keep_their_bytes() {
    let rng = &mut ChaCha20Rng::seed_from_u64(4);
    let params = blake2s_params();
    let file = bytes(|w| params.write(w));
    let read = Parameters::<Bls12>::read(&file[..], false).unwrap();
    assert_eq!(&read, params);
    let native = native::Parameters::read(&file[..], false).unwrap();
    assert_eq!(bytes(|w| native.write(w)), file);
    let back: native::Parameters = read.clone().into();
    assert_eq!(back, native);

    let vk_bytes = bytes(|w| params.vk.write(w));
    let vk = VerifyingKey::<Bls12>::read(&vk_bytes[..]).unwrap();
    assert_eq!(vk, params.vk);
    assert_eq!(bytes(|w| vk.write(w)), vk_bytes);

    let circuits = (20..23)
        .map(|seed| Blake2sPreimage {
            preimage: Some(preimage::<32>(seed)),
        })
        .collect();
    let proofs = create_random_proof_batch(circuits, params, rng).unwrap();
    let joined: Vec<u8> = proofs.iter().flat_map(|p| bytes(|w| p.write(w))).collect();
    assert_eq!(joined.len(), 3 * Proof::<Bls12>::size());
    assert_eq!(Proof::<Bls12>::size(), 192);
    assert_eq!(Proof::<Bls12>::read_many(&joined, 3).unwrap(), proofs);
    assert!(Proof::<Bls12>::read_many(&joined[1..], 3).is_err());
    assert!(Proof::<Bls12>::read_many(&joined, 2).is_err());
    // A truncated parameter file is an error, not a panic.
    assert!(Parameters::<Bls12>::read(&file[..file.len() - 1], false).is_err());
}

#[test]
fn a_circuit_gives_the_same_parameters_and_proof_through_either_trait_version() {
    let squares = circuits::Squares { n: 300 };
    let rng = &mut ChaCha20Rng::seed_from_u64(5);
    let g1 = G1Projective::random(&mut *rng);
    let g2 = G2Projective::random(&mut *rng);
    let waste: Vec<Scalar> = (0..5).map(|_| Scalar::random(&mut *rng)).collect();
    let [alpha, beta, gamma, delta, tau] = waste[..] else {
        unreachable!()
    };
    let new = native::generate_parameters(squares, g1, g2, alpha, beta, gamma, delta, tau).unwrap();
    let old: Parameters<Bls12> = generate_parameters(
        circuits::SquaresV02(squares),
        g1,
        g2,
        alpha,
        beta,
        gamma,
        delta,
        tau,
    )
    .unwrap();
    let file = bytes(|w| new.write(w));
    assert_eq!(bytes(|w| old.write(w)), file);

    let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
    let new_proof = native::create_proof(squares, &new, r, s).unwrap();
    let old_proof = create_proof(circuits::SquaresV02(squares), &old, r, s).unwrap();
    assert_eq!(bytes(|w| old_proof.write(w)), new_proof.to_bytes().to_vec());
}

/// `x * x = y` with `x = 2`: broken unless `y` is 4; `missing` leaves `x` without a value.
struct Broken {
    missing: bool,
    y: u64,
}

impl<S: PrimeField> Circuit<S> for Broken {
    fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let missing = self.missing;
        let x = cs.alloc(
            || "x",
            || {
                if missing {
                    Err(SynthesisError::AssignmentMissing)
                } else {
                    Ok(S::from(2u64))
                }
            },
        )?;
        let y = cs.alloc_input(|| "y", || Ok(S::from(self.y)))?;
        cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn errors_are_bellpersons_variants() {
    let rng = &mut ChaCha20Rng::seed_from_u64(6);
    let broken = |missing, y| Broken { missing, y };
    let params: Parameters<Bls12> = generate_random_parameters(broken(false, 4), rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let proof = create_random_proof(broken(false, 4), &params, rng).unwrap();
    assert!(verify_proof(&pvk, &proof, &[Scalar::from(4u64)]).unwrap());
    let unsatisfied = create_random_proof(broken(false, 5), &params, rng).unwrap_err();
    assert!(
        matches!(unsatisfied, SynthesisError::Unsatisfiable),
        "{unsatisfied:?}"
    );
    let missing = create_random_proof(broken(true, 4), &params, rng).unwrap_err();
    assert!(
        matches!(missing, SynthesisError::AssignmentMissing),
        "{missing:?}"
    );

    // Parameters of another circuit.
    let other = create_random_proof(broken(false, 4), blake2s_params(), rng).unwrap_err();
    assert!(
        matches!(other, SynthesisError::IncompatibleLengthVector(_)),
        "{other:?}"
    );

    // A wrong number of public inputs, as bellperson says it.
    let pvk = prepare_verifying_key(&blake2s_params().vk);
    let image = preimage::<32>(1);
    let proof = create_random_proof(
        Blake2sPreimage {
            preimage: Some(image),
        },
        blake2s_params(),
        rng,
    )
    .unwrap();
    let err = verify_proof(&pvk, &proof, &[]).unwrap_err();
    assert!(
        matches!(err, SynthesisError::MalformedVerifyingKey),
        "{err:?}"
    );
    let err = verify_proofs_batch(&pvk, rng, &[&proof], &[]).unwrap_err();
    assert!(
        matches!(err, SynthesisError::IncompatibleLengthVector(_)),
        "{err:?}"
    );
}
