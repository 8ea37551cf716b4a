//! Proofs from a recorded circuit shape (`CircuitShape`, `PreparedParameters`, and a batch's
//! automatic reuse): the same proofs as full synthesis for the same blinding, reported as made
//! from a shape; a shape of another circuit, an unsatisfied witness and constraints that differ
//! from the shape are errors.

mod circuits;

use circuits::{mimc, mimc_constants, MiMC, Sha256Preimage, Squares, Twisted};
use ff::Field;
use preemptible_groth16::groth16::{
    create_proof, create_proof_batch_with_options, create_random_proof_batch_in_priority,
    generate_random_parameters, prepare_verifying_key, verify_proof, CircuitShape, Parameters,
    PreparedParameters, ProveOptions, ReadError,
};
use preemptible_groth16::{Circuit, ConstraintSystem, Scalar, SynthesisError};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use sha2::Digest;

fn mimc_circuit(seed: u64) -> (MiMC<Scalar>, Scalar) {
    let constants = mimc_constants::<Scalar>();
    let (xl, xr) = (Scalar::from(seed), Scalar::from(seed * 31 + 7));
    let image = mimc(xl, xr, &constants);
    (
        MiMC {
            preimage: Some((xl, xr)),
            constants,
        },
        image,
    )
}

fn mimc_params() -> Parameters {
    let blank = MiMC::<Scalar> {
        preimage: None,
        constants: mimc_constants(),
    };
    generate_random_parameters(blank, &mut ChaCha20Rng::seed_from_u64(1)).unwrap()
}

#[test]
fn a_shape_gives_the_proof_full_synthesis_gives() {
    let params = mimc_params();
    let blank = MiMC::<Scalar> {
        preimage: None,
        constants: mimc_constants(),
    };
    let prepared = PreparedParameters::record(&params, blank).unwrap();
    let shape = prepared.circuit_shape();
    assert_eq!(shape.num_inputs(), 2);
    assert!(shape.num_terms() > 0);
    assert!(shape.memory_bytes() <= 16 * shape.num_terms() + 32 * 1024);
    let pvk = prepare_verifying_key(&params.vk);
    for seed in [3, 4] {
        let (circuit, image) = mimc_circuit(seed);
        let (r, s) = (Scalar::from(seed + 100), Scalar::from(seed + 200));
        let full = create_proof(circuit.clone(), &params, r, s).unwrap();
        let shaped = create_proof(circuit.clone(), &prepared, r, s).unwrap();
        assert_eq!(shaped, full);
        assert!(verify_proof(&pvk, &shaped, &[image]).unwrap());
        let options = ProveOptions::default();
        let (_, report) =
            create_proof_batch_with_options(vec![circuit], &prepared, vec![r], vec![s], &options)
                .unwrap()
                .pop()
                .unwrap();
        assert!(report.shape_used);
    }
}

#[test]
fn a_batch_records_a_circuit_and_reuses_the_shape() {
    let params = mimc_params();
    let pvk = prepare_verifying_key(&params.vk);
    let (circuits, images): (Vec<_>, Vec<_>) = (10..14).map(mimc_circuit).unzip();
    // The first `n` circuits proven with `options`, each proof verified; which used the shape.
    let prove = |n: usize, options: &ProveOptions| {
        let ones = vec![Scalar::ONE; n];
        let proofs = create_proof_batch_with_options(
            circuits[..n].to_vec(),
            &params,
            ones.clone(),
            ones,
            options,
        )
        .unwrap();
        for ((proof, _), image) in proofs.iter().zip(&images) {
            assert!(verify_proof(&pvk, proof, &[*image]).unwrap());
        }
        let used: Vec<bool> = proofs.iter().map(|(_, r)| r.shape_used).collect();
        (proofs, used)
    };
    // One witness ahead (the default where memory allows; named, so that the test does not
    // depend on the machine): the first two synthesized together, the second recording.
    let one_ahead = ProveOptions::default().witnesses_ahead(Some(1));
    let (_, used) = prove(4, &one_ahead);
    assert_eq!(used, [false, false, true, true]);
    // None ahead: the first records.
    let (proofs, used) = prove(4, &ProveOptions::default().witnesses_ahead(Some(0)));
    assert_eq!(used, [false, true, true, true]);
    // Two circuits, one ahead: both synthesized in full (no third circuit to use a shape).
    let (_, used) = prove(2, &one_ahead);
    assert_eq!(used, [false, false]);
    // Without the reuse, the same proofs from full synthesis.
    let (full, _) = prove(4, &ProveOptions::default().reuse_shape_in_batch(false));
    assert!(full.iter().all(|(_, r)| !r.shape_used));
    let same: Vec<bool> = full
        .iter()
        .zip(&proofs)
        .map(|((a, _), (b, _))| a == b)
        .collect();
    assert_eq!(same, [true; 4]);
}

#[test]
fn gadget_circuits_prove_from_a_shape_in_priority() {
    let blank = Sha256Preimage {
        len: 64,
        preimage: None,
    };
    let rng = &mut ChaCha20Rng::seed_from_u64(2);
    let params = generate_random_parameters(blank.clone(), rng).unwrap();
    let prepared = PreparedParameters::record(&params, blank).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let images: Vec<Vec<u8>> = (0..2u8).map(|i| vec![i; 64]).collect();
    let circuits = images
        .iter()
        .map(|p| Sha256Preimage {
            len: 64,
            preimage: Some(p.clone()),
        })
        .collect();
    let proofs = create_random_proof_batch_in_priority(circuits, &prepared, rng, true).unwrap();
    for (proof, image) in proofs.iter().zip(&images) {
        let inputs = Sha256Preimage::public_inputs::<Scalar>(&sha2::Sha256::digest(image));
        assert!(verify_proof(&pvk, proof, &inputs).unwrap());
    }
}

#[test]
fn a_shape_of_another_circuit_is_an_error() {
    let small = Squares { n: 10 };
    let params = generate_random_parameters(small, &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
    let other = CircuitShape::record(Squares { n: 12 }).unwrap();
    let prepared = PreparedParameters::new(&params, other);
    let err = create_proof(small, &prepared, Scalar::ONE, Scalar::ONE).unwrap_err();
    // Caught against the parameters before any witness is made: a shape file's counts size the
    // witness, and a hostile one could claim billions of variables.
    assert!(
        matches!(err, SynthesisError::IncompatibleLengthVector(ref m)
            if m.contains("shape") && m.contains("the parameters")),
        "{err}"
    );
}

#[test]
fn constraints_that_differ_from_the_shape_give_an_error_not_a_bad_proof() {
    let plain = Twisted { x: 5, twist: false };
    let params = generate_random_parameters(plain, &mut ChaCha20Rng::seed_from_u64(4)).unwrap();
    let prepared = PreparedParameters::record(&params, plain).unwrap();
    assert!(create_proof(plain, &prepared, Scalar::ONE, Scalar::ONE).is_ok());
    // The twisted circuit's witness does not satisfy the shape's constraint: the shape's check
    // says so.
    let twisted = Twisted { x: 5, twist: true };
    let err = create_proof(twisted, &prepared, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(matches!(err, SynthesisError::Unsatisfiable), "{err}");
    // A shape with the parameters' counts but other constraints, and a witness that satisfies
    // it: the proof does not verify, and the prover says so instead of returning it.
    let wrong = PreparedParameters::new(&params, CircuitShape::record(twisted).unwrap());
    let err = create_proof(twisted, &wrong, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(err, SynthesisError::MalformedProofs(ref m) if m.contains("shape")),
        "{err}"
    );
}

/// `x * x = y`, enforced `times` times: the same variables whatever `times` is.
#[derive(Clone, Copy)]
struct Repeated {
    times: usize,
}

impl Circuit<Scalar> for Repeated {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
        for _ in 0..self.times {
            cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        }
        Ok(())
    }
}

#[test]
fn a_shape_with_the_parameters_counts_but_another_domain_is_an_error() {
    let once = Repeated { times: 1 };
    let params = generate_random_parameters(once, &mut ChaCha20Rng::seed_from_u64(6)).unwrap();
    let many = CircuitShape::record(Repeated { times: 40 }).unwrap();
    let prepared = PreparedParameters::new(&params, many);
    let err = create_proof(once, &prepared, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(err, SynthesisError::IncompatibleLengthVector(ref m) if m.contains("domain")),
        "{err}"
    );
}

/// Knows `x` with `x * x = y`, but claims any `y`.
#[derive(Clone, Copy)]
struct Claim {
    x: u64,
    y: u64,
}

impl Circuit<Scalar> for Claim {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(self.x)))?;
        let y = cs.alloc_input(|| "y", || Ok(Scalar::from(self.y)))?;
        cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
        Ok(())
    }
}

#[test]
fn an_unsatisfied_witness_is_caught_by_the_shape() {
    let good = Claim { x: 3, y: 9 };
    let params = generate_random_parameters(good, &mut ChaCha20Rng::seed_from_u64(5)).unwrap();
    let prepared = PreparedParameters::record(&params, good).unwrap();
    assert!(create_proof(good, &prepared, Scalar::ONE, Scalar::ONE).is_ok());
    let bad = Claim { x: 3, y: 10 };
    assert!(matches!(
        create_proof(bad, &prepared, Scalar::ONE, Scalar::ONE),
        Err(SynthesisError::Unsatisfiable)
    ));
}

fn shape_bytes(shape: &CircuitShape) -> Vec<u8> {
    let mut bytes = Vec::new();
    shape.write(&mut bytes).unwrap();
    bytes
}

#[test]
fn a_shape_file_round_trips_and_proves() {
    let params = mimc_params();
    let blank = MiMC::<Scalar> {
        preimage: None,
        constants: mimc_constants(),
    };
    let shape = CircuitShape::record(blank).unwrap();
    let bytes = shape_bytes(&shape);
    let read = CircuitShape::read(&bytes[..]).unwrap();
    assert_eq!(read, shape);
    assert_eq!(shape_bytes(&read), bytes);
    let (circuit, image) = mimc_circuit(9);
    let proof = create_proof(
        circuit,
        PreparedParameters::new(&params, read),
        Scalar::ONE,
        Scalar::ONE,
    )
    .unwrap();
    assert!(verify_proof(&prepare_verifying_key(&params.vk), &proof, &[image]).unwrap());
}

#[test]
fn a_cut_or_corrupt_shape_file_is_an_error() {
    let shape = CircuitShape::record(MiMC::<Scalar> {
        preimage: None,
        constants: mimc_constants(),
    })
    .unwrap();
    let bytes = shape_bytes(&shape);
    for len in 0..bytes.len() {
        assert!(
            matches!(
                CircuitShape::read(&bytes[..len]),
                Err(ReadError::Truncated { .. })
            ),
            "cut to {len} of {}",
            bytes.len()
        );
    }
    // Header: magic, 8 + 8 counts, the table's length and its entries; then A's rows and terms.
    let table = u32::from_be_bytes(bytes[24..28].try_into().unwrap()) as usize;
    let a_rows_at = 28 + 32 * table;
    let a_rows = u64::from_be_bytes(bytes[a_rows_at..a_rows_at + 8].try_into().unwrap()) as usize;
    let first_term = a_rows_at + 16 + 4 * a_rows;
    let corrupt = |at: usize, value: &[u8]| {
        let mut b = bytes.clone();
        b[at..at + value.len()].copy_from_slice(value);
        CircuitShape::read(&b[..])
    };
    // A variable past the auxiliary count, a coefficient past the table, a row ending past
    // the terms, a wrong magic, and a count claiming 2^40 terms (an error at the end of the
    // input, not an allocation).
    for (at, value) in [
        (first_term, &u32::MAX.to_be_bytes()[..] as &[u8]),
        (first_term + 4, &9999u32.to_be_bytes()[..]),
        (a_rows_at + 16, &u32::MAX.to_be_bytes()[..]),
        (0, &b"PG16SHP9"[..]),
    ] {
        assert!(
            matches!(corrupt(at, value), Err(ReadError::Malformed(_))),
            "at {at}"
        );
    }
    assert!(matches!(
        corrupt(a_rows_at + 8, &(1u64 << 40).to_be_bytes()),
        Err(ReadError::Truncated { .. }) | Err(ReadError::Malformed(_))
    ));
    // A coefficient that is not a canonical field element.
    if table > 0 {
        assert!(matches!(
            corrupt(28, &[0xff; 32]),
            Err(ReadError::InvalidPoint {
                section: "coefficients",
                ..
            })
        ));
    }
}
