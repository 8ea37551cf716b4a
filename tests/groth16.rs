//! End-to-end proofs: they verify, and changed inputs, tampered proofs and foreign parameters do
//! not.

mod circuits;

use blstrs::{G1Projective, Scalar};
use circuits::{mimc, mimc_constants, MiMC, Sha256Preimage, Squares, Twisted};
use ff::Field;
use group::{Curve, Group};
use preemptible_groth16::groth16::{
    create_proof, create_proof_batch, create_proof_batch_in_priority, create_proof_in_priority,
    create_random_proof, create_random_proof_batch, create_random_proof_batch_in_priority,
    create_random_proof_in_priority, generate_random_parameters, prepare_verifying_key,
    verify_proof, verify_proofs_batch, CircuitShape, Parameters, Proof, VerificationError,
};
use preemptible_groth16::SynthesisError;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

fn rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// The proof verifies, and each single change (an input, each proof element) makes it fail.
fn assert_sound(params: &Parameters, proof: &Proof, inputs: &[Scalar]) {
    let pvk = prepare_verifying_key(&params.vk);
    assert!(
        verify_proof(&pvk, proof, inputs).unwrap(),
        "valid proof rejected"
    );
    for i in 0..inputs.len() {
        let mut changed = inputs.to_vec();
        changed[i] += Scalar::ONE;
        assert!(
            !verify_proof(&pvk, proof, &changed).unwrap(),
            "input {i} changed"
        );
    }
    let g1 = G1Projective::generator();
    let mut t = *proof;
    t.a = (proof.a + g1).to_affine();
    assert!(!verify_proof(&pvk, &t, inputs).unwrap(), "tampered a");
    let mut t = *proof;
    t.c = (proof.c + g1).to_affine();
    assert!(!verify_proof(&pvk, &t, inputs).unwrap(), "tampered c");
    let mut t = *proof;
    t.b = (proof.b + blstrs::G2Projective::generator()).to_affine();
    assert!(!verify_proof(&pvk, &t, inputs).unwrap(), "tampered b");
    let mut t = *proof;
    std::mem::swap(&mut t.a, &mut t.c);
    assert!(!verify_proof(&pvk, &t, inputs).unwrap(), "swapped a and c");
}

#[test]
fn squares_prove_and_verify() {
    let rng = &mut rng(1);
    let c = Squares { n: 100 };
    let params = generate_random_parameters(c, rng).unwrap();
    let proof = create_random_proof(c, &params, rng).unwrap();
    assert_sound(&params, &proof, &[c.output()]);

    // Proofs are randomized: a second proof differs and verifies too.
    let again = create_random_proof(c, &params, rng).unwrap();
    assert_ne!(proof, again);
    assert_sound(&params, &again, &[c.output()]);
}

#[test]
fn mimc_prove_and_verify() {
    let rng = &mut rng(2);
    let constants = mimc_constants::<Scalar>();
    let setup = MiMC::<Scalar> {
        preimage: None,
        constants: constants.clone(),
    };
    let params = generate_random_parameters(setup, rng).unwrap();
    let (xl, xr) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
    let image = mimc(xl, xr, &constants);
    let circuit = MiMC {
        preimage: Some((xl, xr)),
        constants,
    };
    let proof = create_random_proof(circuit, &params, rng).unwrap();
    assert_sound(&params, &proof, &[image]);
}

#[test]
fn sha256_preimage_prove_and_verify() {
    let rng = &mut rng(3);
    let preimage = b"the short proof must get the GPU now".to_vec();
    let len = preimage.len();
    let params = generate_random_parameters(
        Sha256Preimage {
            len,
            preimage: None,
        },
        rng,
    )
    .unwrap();
    let inputs = Sha256Preimage::public_inputs::<Scalar>(&Sha256::digest(&preimage));
    assert_eq!(inputs.len(), 2);
    let circuit = Sha256Preimage {
        len,
        preimage: Some(preimage),
    };
    let proof = create_random_proof(circuit, &params, rng).unwrap();
    assert_sound(&params, &proof, &inputs);

    // The digest of another message is not proven.
    let other = Sha256Preimage::public_inputs::<Scalar>(&Sha256::digest(b"another message"));
    let pvk = prepare_verifying_key(&params.vk);
    assert!(!verify_proof(&pvk, &proof, &other).unwrap());
}

#[test]
fn proof_for_other_parameters_does_not_verify() {
    let rng = &mut rng(4);
    let c = Squares { n: 30 };
    let params = generate_random_parameters(c, rng).unwrap();
    let other = generate_random_parameters(c, rng).unwrap();
    let proof = create_random_proof(c, &params, rng).unwrap();
    let pvk_other = prepare_verifying_key(&other.vk);
    assert!(!verify_proof(&pvk_other, &proof, &[c.output()]).unwrap());
}

#[test]
fn wrong_number_of_public_inputs_is_an_error() {
    let rng = &mut rng(5);
    let c = Squares { n: 4 };
    let params = generate_random_parameters(c, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let proof = create_random_proof(c, &params, rng).unwrap();
    assert_eq!(
        verify_proof(&pvk, &proof, &[]),
        Err(VerificationError::WrongInputCount {
            expected: 1,
            got: 0
        })
    );
    assert!(verify_proof(&pvk, &proof, &[c.output(), Scalar::ONE]).is_err());
}

#[test]
fn a_key_without_input_commitments_is_an_error_not_a_panic() {
    let rng = &mut rng(14);
    let c = Squares { n: 4 };
    let params = generate_random_parameters(c, rng).unwrap();
    let proof = create_random_proof(c, &params, rng).unwrap();
    let mut vk = params.vk.clone();
    vk.ic.clear();
    let pvk = prepare_verifying_key(&vk);
    let none = VerificationError::NoInputCommitment;
    assert_eq!(verify_proof(&pvk, &proof, &[]), Err(none.clone()));
    assert_eq!(
        verify_proofs_batch(&pvk, rng, &[&proof], &[vec![]]),
        Err(none)
    );
}

#[test]
fn parameters_of_another_circuit_are_an_error_not_a_panic() {
    let rng = &mut rng(6);
    let params = generate_random_parameters(Squares { n: 10 }, rng).unwrap();
    let err = create_random_proof(Squares { n: 40 }, &params, rng).unwrap_err();
    assert!(
        matches!(err, SynthesisError::IncompatibleLengthVector(_)),
        "{err}"
    );
}

#[test]
fn parameters_of_a_circuit_with_other_constraints_give_an_error_not_a_bad_proof() {
    // The same counts and densities, so every size check passes; only the proof tells.
    let plain = Twisted { x: 5, twist: false };
    let params = generate_random_parameters(plain, &mut rng(11)).unwrap();
    assert!(create_proof(plain, &params, Scalar::ONE, Scalar::ONE).is_ok());
    let twisted = Twisted { x: 5, twist: true };
    let err = create_proof(twisted, &params, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(err, SynthesisError::MalformedProofs(ref m) if m.contains("does not verify")),
        "{err}"
    );
}

/// `x * x = y` and `x * 1 = x`; with `foreign`, the second names an auxiliary variable the
/// circuit never allocated (index 1000, as a variable of another constraint system would).
#[derive(Clone, Copy)]
struct Foreign {
    foreign: bool,
}

impl preemptible_groth16::Circuit<Scalar> for Foreign {
    fn synthesize<CS: preemptible_groth16::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        use preemptible_groth16::{Index, Variable};
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
        cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        let v = if self.foreign {
            Variable::new_unchecked(Index::Aux(1000))
        } else {
            x
        };
        cs.enforce(
            || "v * 1 = v",
            |lc| lc + v,
            |lc| lc + CS::one(),
            |lc| lc + v,
        );
        Ok(())
    }
}

#[test]
fn a_variable_the_circuit_did_not_allocate_is_an_error_not_a_panic() {
    let foreign = Foreign { foreign: true };
    let unallocated = |err: &SynthesisError| matches!(err, SynthesisError::IncompatibleLengthVector(m) if m.contains("did not allocate"));
    let err = generate_random_parameters(foreign, &mut rng(12)).unwrap_err();
    assert!(unallocated(&err), "setup: {err}");
    let err = CircuitShape::record(foreign).unwrap_err();
    assert!(unallocated(&err), "shape: {err}");
    // With the parameters of the honest circuit (the same counts): full synthesis reads the
    // variable as zero, and the proof does not verify.
    let params = generate_random_parameters(Foreign { foreign: false }, &mut rng(13)).unwrap();
    let err = create_proof(foreign, &params, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(matches!(err, SynthesisError::MalformedProofs(_)), "{err}");
    // In a batch, the shape recorded from a foreign circuit is refused before any witness is
    // evaluated by it (which would index past the witness).
    let batch = vec![Foreign { foreign: false }, foreign, foreign];
    let n = batch.len();
    let err =
        create_proof_batch(batch, &params, vec![Scalar::ONE; n], vec![Scalar::ONE; n]).unwrap_err();
    assert!(unallocated(&err), "batch: {err}");
}

/// A circuit whose witness breaks its constraint.
struct Wrong;

impl preemptible_groth16::Circuit<Scalar> for Wrong {
    fn synthesize<CS: preemptible_groth16::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(10u64)))?;
        cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn unsatisfied_witness_is_an_error() {
    let rng = &mut rng(7);
    let params = generate_random_parameters(Wrong, rng).unwrap();
    let err = create_random_proof(Wrong, &params, rng).unwrap_err();
    assert!(matches!(err, SynthesisError::Unsatisfiable), "{err}");
}

/// A circuit with an auxiliary variable that no constraint uses.
struct Unconstrained;

impl preemptible_groth16::Circuit<Scalar> for Unconstrained {
    fn synthesize<CS: preemptible_groth16::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), SynthesisError> {
        cs.alloc(|| "loose", || Ok(Scalar::ONE))?;
        Ok(())
    }
}

#[test]
fn unconstrained_variable_is_rejected_at_setup() {
    let err = generate_random_parameters(Unconstrained, &mut rng(8)).unwrap_err();
    assert!(
        matches!(err, SynthesisError::UnconstrainedVariable),
        "{err}"
    );
}

#[test]
fn batch_prove_and_batch_verify() {
    let rng = &mut rng(9);
    let c = Squares { n: 50 };
    let params = generate_random_parameters(c, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let proofs = create_random_proof_batch(vec![c; 4], &params, rng).unwrap();
    let inputs = vec![vec![c.output::<Scalar>()]; 4];
    let refs: Vec<&Proof> = proofs.iter().collect();
    assert!(verify_proofs_batch(&pvk, rng, &refs, &inputs).unwrap());
    for p in &proofs {
        assert!(verify_proof(&pvk, p, &inputs[0]).unwrap());
    }

    // One bad member spoils the batch: a wrong input, then a tampered proof.
    let mut bad_inputs = inputs.clone();
    bad_inputs[2][0] += Scalar::ONE;
    assert!(!verify_proofs_batch(&pvk, rng, &refs, &bad_inputs).unwrap());
    let mut tampered = proofs[3];
    tampered.c = (tampered.c + G1Projective::generator()).to_affine();
    let mut refs_bad = refs.clone();
    refs_bad[3] = &tampered;
    assert!(!verify_proofs_batch(&pvk, rng, &refs_bad, &inputs).unwrap());
    // Two proofs whose errors cancel in a plain sum still fail the random combination.
    let mut p0 = proofs[0];
    let mut p1 = proofs[1];
    p0.c = (p0.c + G1Projective::generator()).to_affine();
    p1.c = (p1.c - G1Projective::generator()).to_affine();
    assert!(!verify_proofs_batch(&pvk, rng, &[&p0, &p1], &inputs[..2]).unwrap());

    assert!(verify_proofs_batch(&pvk, rng, &[], &[]).unwrap());
    assert!(verify_proofs_batch(&pvk, rng, &refs, &inputs[..3]).is_err());
    // A member with the wrong number of public inputs is an error, not a false.
    let mut short_inputs = inputs.clone();
    short_inputs[1].clear();
    assert_eq!(
        verify_proofs_batch(&pvk, rng, &refs, &short_inputs),
        Err(VerificationError::WrongInputCount {
            expected: 1,
            got: 0
        })
    );
}

/// bellperson's names: a bool for the priority (true: high), the same proofs.
#[test]
fn bellpersons_priority_entry_points_prove() {
    let rng = &mut rng(11);
    let c = Squares { n: 12 };
    let params = generate_random_parameters(c, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let inputs = [c.output::<Scalar>()];
    let (r, s) = (Scalar::from(7u64), Scalar::from(9u64));
    for priority in [false, true] {
        let fixed = create_proof_in_priority(c, &params, r, s, priority).unwrap();
        assert_eq!(fixed, create_proof(c, &params, r, s).unwrap());
        let random = create_random_proof_in_priority(c, &params, rng, priority).unwrap();
        let batch =
            create_proof_batch_in_priority(vec![c; 2], &params, vec![r; 2], vec![s; 2], priority)
                .unwrap();
        assert_eq!(batch, vec![fixed; 2]);
        // The earlier names stay, deprecated, and prove the same.
        #[allow(deprecated)]
        let old = preemptible_groth16::groth16::create_proof_batch_priority(
            vec![c; 2],
            &params,
            vec![r; 2],
            vec![s; 2],
            priority,
        );
        assert_eq!(old.unwrap(), batch);
        let mut random_batch =
            create_random_proof_batch_in_priority(vec![c; 2], &params, rng, priority).unwrap();
        #[allow(deprecated)]
        let old = preemptible_groth16::groth16::create_random_proof_batch_priority(
            vec![c; 1],
            &params,
            rng,
            priority,
        );
        random_batch.extend(old.unwrap());
        for p in [&fixed, &random].into_iter().chain(&random_batch) {
            assert!(verify_proof(&pvk, p, &inputs).unwrap());
        }
    }
}

#[test]
fn fixed_blinding_is_deterministic() {
    let rng = &mut rng(10);
    let c = Squares { n: 20 };
    let params = generate_random_parameters(c, rng).unwrap();
    let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
    let p1 = create_proof(c, &params, r, s).unwrap();
    let p2 = create_proof(c, &params, r, s).unwrap();
    assert_eq!(p1, p2);
    let pvk = prepare_verifying_key(&params.vk);
    assert!(verify_proof(&pvk, &p1, &[c.output()]).unwrap());
}

/// Verification errors convert into `SynthesisError` (bellperson's variants), so `?` works in a
/// function that returns it; a false proof is `Ok(false)`, not an error.
#[test]
fn verification_errors_convert_for_question_mark() {
    fn check(
        pvk: &preemptible_groth16::groth16::PreparedVerifyingKey,
        proof: &Proof,
        inputs: &[Scalar],
    ) -> Result<bool, SynthesisError> {
        Ok(verify_proof(pvk, proof, inputs)?)
    }
    let rng = &mut rng(12);
    let c = Squares { n: 8 };
    let params = generate_random_parameters(c, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let proof = create_random_proof(c, &params, rng).unwrap();
    assert!(check(&pvk, &proof, &[c.output::<Scalar>()]).unwrap());
    assert!(!check(&pvk, &proof, &[Scalar::ONE]).unwrap());
    assert!(matches!(
        check(&pvk, &proof, &[]),
        Err(SynthesisError::MalformedVerifyingKey)
    ));
    let batch: SynthesisError = VerificationError::BatchLengthMismatch {
        proofs: 2,
        inputs: 1,
    }
    .into();
    assert!(matches!(batch, SynthesisError::IncompatibleLengthVector(_)));
}

#[test]
fn setup_progress_tells_the_size_then_every_point() {
    use preemptible_groth16::groth16::{generate_random_parameters_with_progress, SetupProgress};
    use std::sync::Mutex;
    let c = Squares { n: 5000 };
    let events = Mutex::new(Vec::new());
    let params = generate_random_parameters_with_progress(c, &mut rng(9), &|p| {
        events.lock().unwrap().push(p)
    })
    .unwrap();
    let events = events.into_inner().unwrap();
    // 5000 squarings, the output's constraint and one `input * 0 = 0` per input.
    assert!(
        matches!(
            events.first(),
            Some(SetupProgress::Synthesized {
                constraints: 5003,
                inputs: 2,
                aux: 5001
            })
        ),
        "{:?}",
        events.first()
    );
    // Every point of every query, counted once: the G1 queries (IC, H, L, A and B, before the
    // points at infinity are dropped) and B in G2.
    let points = |p: &SetupProgress| match *p {
        SetupProgress::Points { done, total } => Some((done, total)),
        _ => None,
    };
    let counts: Vec<(u64, u64)> = events.iter().filter_map(points).collect();
    let total = counts[0].1;
    assert!(counts.iter().all(|&(done, t)| t == total && done <= total));
    assert!(counts.iter().any(|&(done, _)| done == total));
    let g1 = params.vk.ic.len() + params.h.len() + params.l.len() + 2 * (2 + 5001);
    assert_eq!(total as usize, g1 + 2 + 5001);
    // The proof from these parameters verifies.
    let proof = create_random_proof(c, &params, &mut rng(10)).unwrap();
    assert_sound(&params, &proof, &[c.output()]);
}
