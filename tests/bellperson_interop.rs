//! Parameters and proofs move between this crate and bellperson 0.27 in both directions.

mod circuits;

use bellperson::groth16 as bp;
use blstrs::{Bls12, Scalar};
use circuits::Squares;
use preemptible_groth16::groth16 as ours;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

const CIRCUIT: Squares = Squares { n: 200 };

fn bytes<F: FnOnce(&mut Vec<u8>) -> std::io::Result<()>>(write: F) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    out
}

#[test]
fn our_parameters_and_proofs_work_in_bellperson() {
    let rng = &mut ChaCha20Rng::seed_from_u64(21);
    let input = CIRCUIT.output::<Scalar>();
    let params = ours::generate_random_parameters(CIRCUIT, rng).unwrap();
    let param_bytes = bytes(|w| params.write(w));

    // bellperson reads our file (checked), proves with it, and both verify its proof.
    let bp_params = bp::Parameters::<Bls12>::read(&param_bytes[..], true).unwrap();
    assert_eq!(bytes(|w| bp_params.write(w)), param_bytes);
    let bp_pvk = bp::prepare_verifying_key(&bp_params.vk);
    let bp_proof = bp::create_random_proof(circuits::SquaresV02(CIRCUIT), &bp_params, rng).unwrap();
    assert!(bp::verify_proof(&bp_pvk, &bp_proof, &[input]).unwrap());
    let bp_proof_bytes = bytes(|w| bp_proof.write(w));
    let read = ours::Proof::read(&bp_proof_bytes[..]).unwrap();
    let pvk = ours::prepare_verifying_key(&params.vk);
    assert!(ours::verify_proof(&pvk, &read, &[input]).unwrap());

    // Our proof verifies in bellperson.
    let proof = ours::create_random_proof(CIRCUIT, &params, rng).unwrap();
    let theirs = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    assert!(bp::verify_proof(&bp_pvk, &theirs, &[input]).unwrap());
    let wrong = input + Scalar::from(1u64);
    assert!(!bp::verify_proof(&bp_pvk, &theirs, &[wrong]).unwrap());
}

#[test]
fn bellperson_parameters_and_proofs_work_here() {
    let rng = &mut ChaCha20Rng::seed_from_u64(22);
    let input = CIRCUIT.output::<Scalar>();
    let bp_params =
        bp::generate_random_parameters::<Bls12, _, _>(circuits::SquaresV02(CIRCUIT), rng).unwrap();
    let param_bytes = bytes(|w| bp_params.write(w));

    let params = ours::Parameters::read(&param_bytes[..], true).unwrap();
    assert_eq!(bytes(|w| params.write(w)), param_bytes);
    let mut vk_bytes = Vec::new();
    bp_params.vk.write(&mut vk_bytes).unwrap();
    assert_eq!(ours::VerifyingKey::read(&vk_bytes[..]).unwrap(), params.vk);

    // We prove with bellperson's parameters; bellperson and we verify.
    let proof = ours::create_random_proof(CIRCUIT, &params, rng).unwrap();
    let pvk = ours::prepare_verifying_key(&params.vk);
    assert!(ours::verify_proof(&pvk, &proof, &[input]).unwrap());
    let bp_pvk = bp::prepare_verifying_key(&bp_params.vk);
    let theirs = bp::Proof::<Bls12>::read(&proof.to_bytes()[..]).unwrap();
    assert!(bp::verify_proof(&bp_pvk, &theirs, &[input]).unwrap());

    // bellperson's own proof verifies here.
    let bp_proof = bp::create_random_proof(circuits::SquaresV02(CIRCUIT), &bp_params, rng).unwrap();
    let read = ours::Proof::read(&bytes(|w| bp_proof.write(w))[..]).unwrap();
    assert!(ours::verify_proof(&pvk, &read, &[input]).unwrap());
}
