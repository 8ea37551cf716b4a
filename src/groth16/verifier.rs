//! Verification of one proof, and of many at once.
//!
//! A proof `(A, B, C)` for public inputs `x` (with `x_0 = 1`) is valid when
//! `e(A, B) = e(alpha, beta) * e(sum_i x_i IC_i, gamma) * e(C, delta)`.
//!
//! A batch is checked with one random linear combination: with independent random `z_k`,
//! `prod_k e(z_k A_k, B_k) = e(sum_k z_k alpha, beta) * e(sum_k z_k acc_k, gamma) *
//! e(sum_k z_k C_k, delta)`, one multi-Miller loop and one final exponentiation for the whole
//! batch. An invalid proof passes only if the `z_k` happen to cancel its error, with probability
//! about `1 / r` (Bellare, Garay, Rabin: "Fast batch verification for modular exponentiation and
//! digital signatures", 1998).

use super::params::VerifyingKey;
use super::proof::Proof;
use crate::curve::batch_normalize;
use crate::multicore;
use crate::multiexp::{multiexp, scalar_reprs};
use blstrs::{Bls12, G1Affine, G1Projective, G2Prepared, Gt, Scalar};
use ff::Field;
use group::{Curve, Group};
use pairing::{MillerLoopResult, MultiMillerLoop};
use rand_core::RngCore;

/// A verifying key with its pairing-side precomputation done once.
#[derive(Clone, Debug)]
pub struct PreparedVerifyingKey {
    /// `e(alpha, beta)`.
    alpha_g1_beta_g2: Gt,
    /// `-gamma`, prepared for the Miller loop.
    neg_gamma_g2: G2Prepared,
    /// `-delta`, prepared for the Miller loop.
    neg_delta_g2: G2Prepared,
    /// `beta`, prepared for the Miller loop (batch verification).
    beta_g2: G2Prepared,
    /// `alpha` in G1 (batch verification).
    alpha_g1: G1Affine,
    /// The input commitments of the key.
    ic: Vec<G1Affine>,
}

/// Why proofs could not be checked (an invalid proof is `Ok(false)`, not an error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerificationError {
    /// The number of public inputs does not match the verifying key.
    #[error("the verifying key takes {expected} public inputs but {got} were given")]
    WrongInputCount {
        /// Public inputs the key takes.
        expected: usize,
        /// Public inputs given.
        got: usize,
    },
    /// A batch has a different number of proofs and input lists.
    #[error("a batch of {proofs} proofs needs as many input lists, not {inputs}")]
    BatchLengthMismatch {
        /// Proofs given.
        proofs: usize,
        /// Input lists given.
        inputs: usize,
    },
    /// The verifying key has no input commitment, not even the constant input's (a key read from
    /// bytes always has one; one built by hand may not).
    #[error("the verifying key has no input commitment (IC) for the constant input")]
    NoInputCommitment,
}

/// So that `?` works on verification inside functions that return bellpepper's
/// [`SynthesisError`](bellpepper_core::SynthesisError), with the variants bellperson 0.27's
/// verifier returns: a wrong number of public inputs is `MalformedVerifyingKey`, a batch whose
/// lengths differ is `IncompatibleLengthVector`.
impl From<VerificationError> for bellpepper_core::SynthesisError {
    fn from(e: VerificationError) -> Self {
        match e {
            VerificationError::WrongInputCount { .. } | VerificationError::NoInputCommitment => {
                bellpepper_core::SynthesisError::MalformedVerifyingKey
            }
            VerificationError::BatchLengthMismatch { .. } => {
                bellpepper_core::SynthesisError::IncompatibleLengthVector(e.to_string())
            }
        }
    }
}

/// Precomputes what verification needs from `vk`.
pub fn prepare_verifying_key(vk: &VerifyingKey) -> PreparedVerifyingKey {
    PreparedVerifyingKey {
        alpha_g1_beta_g2: <Bls12 as pairing::Engine>::pairing(&vk.alpha_g1, &vk.beta_g2),
        neg_gamma_g2: G2Prepared::from(-vk.gamma_g2),
        neg_delta_g2: G2Prepared::from(-vk.delta_g2),
        beta_g2: G2Prepared::from(vk.beta_g2),
        alpha_g1: vk.alpha_g1,
        ic: vk.ic.clone(),
    }
}

/// `sum_i weights[i] * IC_i` where `weights[0]` weighs the constant input.
fn input_commitment(pvk: &PreparedVerifyingKey, weights: &[Scalar]) -> G1Projective {
    // The lengths are checked by the callers, so the multiexp cannot fail.
    multiexp(&pvk.ic, &scalar_reprs(weights)).unwrap_or_else(|_| G1Projective::identity())
}

fn check_inputs(pvk: &PreparedVerifyingKey, inputs: &[Scalar]) -> Result<(), VerificationError> {
    if pvk.ic.is_empty() {
        return Err(VerificationError::NoInputCommitment);
    }
    let expected = pvk.ic.len().saturating_sub(1);
    if inputs.len() != expected {
        return Err(VerificationError::WrongInputCount {
            expected,
            got: inputs.len(),
        });
    }
    Ok(())
}

/// Checks `proof` against the public inputs (the constant `one` not included).
pub fn verify_proof(
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    public_inputs: &[Scalar],
) -> Result<bool, VerificationError> {
    check_inputs(pvk, public_inputs)?;
    let mut weights = Vec::with_capacity(public_inputs.len() + 1);
    weights.push(Scalar::ONE);
    weights.extend_from_slice(public_inputs);
    let acc = input_commitment(pvk, &weights).to_affine();
    let b = G2Prepared::from(proof.b);
    let ml = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&acc, &pvk.neg_gamma_g2),
        (&proof.c, &pvk.neg_delta_g2),
    ]);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2)
}

/// Checks many proofs for one key at once; `Ok(true)` only if every proof is valid.
///
/// `rng` supplies the random weights that make the combined check sound; it must not be
/// predictable to whoever made the proofs.
pub fn verify_proofs_batch<R: RngCore>(
    pvk: &PreparedVerifyingKey,
    rng: &mut R,
    proofs: &[&Proof],
    public_inputs: &[Vec<Scalar>],
) -> Result<bool, VerificationError> {
    if proofs.len() != public_inputs.len() {
        return Err(VerificationError::BatchLengthMismatch {
            proofs: proofs.len(),
            inputs: public_inputs.len(),
        });
    }
    for inputs in public_inputs {
        check_inputs(pvk, inputs)?;
    }
    if proofs.is_empty() {
        return Ok(true);
    }
    let z: Vec<Scalar> = proofs.iter().map(|_| Scalar::random(&mut *rng)).collect();
    let z_sum: Scalar = z.iter().sum();

    // Weights of IC: sum_k z_k x_k,i with x_k,0 = 1.
    let mut weights = vec![Scalar::ZERO; pvk.ic.len()];
    weights[0] = z_sum;
    for (zk, inputs) in z.iter().zip(public_inputs) {
        for (w, x) in weights[1..].iter_mut().zip(inputs) {
            *w += *zk * x;
        }
    }
    let acc = input_commitment(pvk, &weights).to_affine();
    let c_bases: Vec<G1Affine> = proofs.iter().map(|p| p.c).collect();
    let z_reprs = scalar_reprs(&z);
    let acc_c = multiexp(&c_bases, &z_reprs)
        .unwrap_or_else(|_| G1Projective::identity())
        .to_affine();
    let neg_alpha = (pvk.alpha_g1 * -z_sum).to_affine();

    let (za, b): (Vec<G1Affine>, Vec<G2Prepared>) = multicore::install(|| {
        let za: Vec<G1Projective> = proofs.iter().zip(&z).map(|(p, zk)| p.a * zk).collect();
        let b = proofs.iter().map(|p| G2Prepared::from(p.b)).collect();
        (batch_normalize::<G1Affine>(&za), b)
    });
    let mut terms: Vec<(&G1Affine, &G2Prepared)> = za.iter().zip(&b).collect();
    terms.push((&acc, &pvk.neg_gamma_g2));
    terms.push((&acc_c, &pvk.neg_delta_g2));
    terms.push((&neg_alpha, &pvk.beta_g2));
    Ok(bool::from(
        Bls12::multi_miller_loop(&terms)
            .final_exponentiation()
            .is_identity(),
    ))
}
