//! bellperson's proving functions, for circuits of bellpepper-core 0.2, over this crate's prover
//! (the same synthesis, scheduler and GPU use as [`crate::groth16`]'s).

use super::params::ParameterSource;
use super::proof::Proof;
use crate::compat::bellperson::{Circuit, SupportedEngine, SynthesisError};
use crate::groth16::{error_to_v02, prove_batch, Bellperson, Priority, ProofReport, ProveOptions};
use ff::Field;
use rand_core::RngCore;

/// `count` random values of `r`, then `count` of `s`.
fn blinding_factors<E: SupportedEngine, R: RngCore>(
    count: usize,
    rng: &mut R,
) -> (Vec<E::Fr>, Vec<E::Fr>) {
    let mut draw = || -> Vec<E::Fr> { (0..count).map(|_| E::Fr::random(&mut *rng)).collect() };
    let r = draw();
    (r, draw())
}

/// Proves `circuits` with `options`, circuit `i` with blinding factors `r[i]`, `s[i]`, returning
/// beside each proof the report of where its work ran (this crate's addition to bellperson's
/// API; see [`crate::groth16::create_proof_batch_with_options`]).
pub fn create_proof_batch_with_options<E, C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<E::Fr>,
    s: Vec<E::Fr>,
    options: &ProveOptions,
) -> Result<Vec<(Proof<E>, ProofReport)>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    P: ParameterSource<E>,
{
    let circuits = circuits.into_iter().map(Bellperson).collect();
    let proofs = prove_batch(circuits, params.lend(), r, s, options).map_err(error_to_v02)?;
    Ok(proofs
        .into_iter()
        .map(|(proof, report)| (proof.into(), report))
        .collect())
}

/// [`create_proof_batch_with_options`] with blinding factors drawn from `rng`.
pub fn create_random_proof_batch_with_options<E, C, R, P>(
    circuits: Vec<C>,
    params: P,
    rng: &mut R,
    options: &ProveOptions,
) -> Result<Vec<(Proof<E>, ProofReport)>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    R: RngCore,
    P: ParameterSource<E>,
{
    let (r, s) = blinding_factors::<E, R>(circuits.len(), rng);
    create_proof_batch_with_options(circuits, params, r, s, options)
}

/// Proves a batch at `priority` (true: [`Priority::High`]; false: [`Priority::Normal`]).
fn batch_at<E, C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<E::Fr>,
    s: Vec<E::Fr>,
    priority: bool,
) -> Result<Vec<Proof<E>>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    P: ParameterSource<E>,
{
    let options = ProveOptions::with_priority(Priority::from_bool(priority));
    let proofs = create_proof_batch_with_options(circuits, params, r, s, &options)?;
    Ok(proofs.into_iter().map(|(proof, _)| proof).collect())
}

/// The one proof of a batch of one.
fn only<E: SupportedEngine>(proofs: Vec<Proof<E>>) -> Result<Proof<E>, SynthesisError> {
    proofs
        .into_iter()
        .next()
        .ok_or(SynthesisError::AssignmentMissing)
}

/// Proves `circuit` with the blinding factors `r` and `s`.
pub fn create_proof<E, C, P>(
    circuit: C,
    params: P,
    r: E::Fr,
    s: E::Fr,
) -> Result<Proof<E>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    P: ParameterSource<E>,
{
    only(batch_at(vec![circuit], params, vec![r], vec![s], false)?)
}

/// Proves `circuit` with blinding factors drawn from `rng`.
pub fn create_random_proof<E, C, R, P>(
    circuit: C,
    params: P,
    rng: &mut R,
) -> Result<Proof<E>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    R: RngCore,
    P: ParameterSource<E>,
{
    create_random_proof_in_priority(circuit, params, rng, false)
}

/// Proves several circuits that share `params`, circuit `i` with blinding factors `r[i]`, `s[i]`.
pub fn create_proof_batch<E, C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<E::Fr>,
    s: Vec<E::Fr>,
) -> Result<Vec<Proof<E>>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    P: ParameterSource<E>,
{
    batch_at(circuits, params, r, s, false)
}

/// Proves several circuits that share `params`, with blinding factors drawn from `rng`.
pub fn create_random_proof_batch<E, C, R, P>(
    circuits: Vec<C>,
    params: P,
    rng: &mut R,
) -> Result<Vec<Proof<E>>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    R: RngCore,
    P: ParameterSource<E>,
{
    create_random_proof_batch_in_priority(circuits, params, rng, false)
}

/// [`create_proof`] at [`Priority::High`] when `priority` is true, else at `Normal`.
pub fn create_proof_in_priority<E, C, P>(
    circuit: C,
    params: P,
    r: E::Fr,
    s: E::Fr,
    priority: bool,
) -> Result<Proof<E>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    P: ParameterSource<E>,
{
    only(batch_at(vec![circuit], params, vec![r], vec![s], priority)?)
}

/// [`create_random_proof`] at the priority `priority` maps to.
pub fn create_random_proof_in_priority<E, C, R, P>(
    circuit: C,
    params: P,
    rng: &mut R,
    priority: bool,
) -> Result<Proof<E>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    R: RngCore,
    P: ParameterSource<E>,
{
    only(create_random_proof_batch_in_priority(
        vec![circuit],
        params,
        rng,
        priority,
    )?)
}

/// [`create_proof_batch`] at the priority `priority` maps to.
pub fn create_proof_batch_in_priority<E, C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<E::Fr>,
    s: Vec<E::Fr>,
    priority: bool,
) -> Result<Vec<Proof<E>>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    P: ParameterSource<E>,
{
    batch_at(circuits, params, r, s, priority)
}

/// [`create_random_proof_batch`] at the priority `priority` maps to.
pub fn create_random_proof_batch_in_priority<E, C, R, P>(
    circuits: Vec<C>,
    params: P,
    rng: &mut R,
    priority: bool,
) -> Result<Vec<Proof<E>>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr> + Send,
    R: RngCore,
    P: ParameterSource<E>,
{
    let (r, s) = blinding_factors::<E, R>(circuits.len(), rng);
    batch_at(circuits, params, r, s, priority)
}
