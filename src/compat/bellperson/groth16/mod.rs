//! bellperson 0.27's `groth16` module: its names and signatures over this crate's prover,
//! generator and verifier.

mod generator;
mod mapped;
mod params;
mod proof;
mod prover;
mod verifier;

pub use super::SupportedEngine;
pub use generator::{generate_parameters, generate_random_parameters};
pub use mapped::MappedParameters;
pub use params::{ParameterSource, Parameters, VerifyingKey};
pub use proof::Proof;
pub use prover::{
    create_proof, create_proof_batch, create_proof_batch_in_priority,
    create_proof_batch_with_options, create_proof_in_priority, create_random_proof,
    create_random_proof_batch, create_random_proof_batch_in_priority,
    create_random_proof_batch_with_options, create_random_proof_in_priority,
};
pub use verifier::{
    prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey,
};
