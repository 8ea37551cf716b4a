//! bellperson's verification functions over [`crate::groth16`]'s verifier.

use super::params::VerifyingKey;
use super::proof::Proof;
use crate::compat::bellperson::{SupportedEngine, SynthesisError};
use crate::groth16::{self as native, error_to_v02};
use rand_core::RngCore;
use std::fmt;
use std::marker::PhantomData;

/// A verifying key with its pairing-side precomputation done once.
pub struct PreparedVerifyingKey<E: SupportedEngine> {
    inner: native::PreparedVerifyingKey,
    engine: PhantomData<E>,
}

impl<E: SupportedEngine> Clone for PreparedVerifyingKey<E> {
    fn clone(&self) -> Self {
        PreparedVerifyingKey {
            inner: self.inner.clone(),
            engine: PhantomData,
        }
    }
}

impl<E: SupportedEngine> fmt::Debug for PreparedVerifyingKey<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

/// Precomputes what verification needs from `vk`.
pub fn prepare_verifying_key<E: SupportedEngine>(vk: &VerifyingKey<E>) -> PreparedVerifyingKey<E> {
    PreparedVerifyingKey {
        inner: native::prepare_verifying_key(&vk.into()),
        engine: PhantomData,
    }
}

/// Checks one proof; a wrong number of public inputs is `MalformedVerifyingKey`, as in
/// bellperson.
pub fn verify_proof<E: SupportedEngine>(
    pvk: &PreparedVerifyingKey<E>,
    proof: &Proof<E>,
    public_inputs: &[E::Fr],
) -> Result<bool, SynthesisError> {
    native::verify_proof(&pvk.inner, &proof.into(), public_inputs)
        .map_err(|e| error_to_v02(e.into()))
}

/// Checks many proofs of one key at once (one random linear combination, as
/// [`crate::groth16::verify_proofs_batch`]).
pub fn verify_proofs_batch<E, R>(
    pvk: &PreparedVerifyingKey<E>,
    rng: &mut R,
    proofs: &[&Proof<E>],
    public_inputs: &[Vec<E::Fr>],
) -> Result<bool, SynthesisError>
where
    E: SupportedEngine,
    R: RngCore,
{
    let proofs: Vec<native::Proof> = proofs.iter().map(|&p| p.into()).collect();
    let proofs: Vec<&native::Proof> = proofs.iter().collect();
    native::verify_proofs_batch(&pvk.inner, rng, &proofs, public_inputs)
        .map_err(|e| error_to_v02(e.into()))
}
