//! bellperson's parameter generation, for circuits of bellpepper-core 0.2.

use super::params::Parameters;
use crate::compat::bellperson::{Circuit, SupportedEngine, SynthesisError};
use crate::groth16::{error_to_v02, generate, Bellperson, Toxic};
use ff::Field;
use group::Group;
use rand_core::RngCore;

/// Generates parameters for `circuit` with random toxic waste from `rng`.
pub fn generate_random_parameters<E, C, R>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters<E>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr>,
    R: RngCore,
{
    let g1 = E::G1::random(&mut *rng);
    let g2 = E::G2::random(&mut *rng);
    let alpha = E::Fr::random(&mut *rng);
    let beta = E::Fr::random(&mut *rng);
    let gamma = E::Fr::random(&mut *rng);
    let delta = E::Fr::random(&mut *rng);
    let tau = E::Fr::random(&mut *rng);
    generate_parameters::<E, C>(circuit, g1, g2, alpha, beta, gamma, delta, tau)
}

/// Generates parameters for `circuit` from the given generators and toxic waste, as
/// [`crate::groth16::generate_parameters`] does.
#[allow(clippy::too_many_arguments)]
pub fn generate_parameters<E, C>(
    circuit: C,
    g1: E::G1,
    g2: E::G2,
    alpha: E::Fr,
    beta: E::Fr,
    gamma: E::Fr,
    delta: E::Fr,
    tau: E::Fr,
) -> Result<Parameters<E>, SynthesisError>
where
    E: SupportedEngine,
    C: Circuit<E::Fr>,
{
    let toxic = Toxic::new(alpha, beta, gamma, delta, tau).map_err(error_to_v02)?;
    let params = generate(Bellperson(circuit), g1, g2, &toxic, &|_| {}).map_err(error_to_v02)?;
    Ok(params.into())
}
