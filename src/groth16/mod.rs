//! The Groth16 proving system ([eprint 2016/260](https://eprint.iacr.org/2016/260)) over
//! BLS12-381: parameter generation, proving and verification, with bellman's byte formats.

mod assignment;
mod circuit;
mod generator;
mod mapped;
mod params;
mod prepared;
mod proof;
mod prover;
mod shape;
mod shape_file;
mod verifier;
mod witness;

pub use crate::bases::Bases;
pub use crate::options::{
    ParsePriorityError, Priority, ProofReport, ProveOptions, DEFAULT_CHUNK_TERMS,
    DEFAULT_STEPPED_QUOTIENT_FROM,
};
pub use generator::{
    generate_parameters, generate_random_parameters, generate_random_parameters_with_progress,
    SetupProgress,
};
pub use mapped::MappedParameters;
pub use params::{ParameterSource, Parameters, ReadError, VerifyingKey};
pub use prepared::PreparedParameters;
pub use proof::Proof;
pub use prover::{
    create_proof, create_proof_batch, create_proof_batch_in_priority,
    create_proof_batch_with_options, create_proof_in_priority, create_proof_with_options,
    create_random_proof, create_random_proof_batch, create_random_proof_batch_in_priority,
    create_random_proof_in_priority, create_random_proof_with_options,
};
#[allow(deprecated)]
pub use prover::{create_proof_batch_priority, create_random_proof_batch_priority};
pub use shape::CircuitShape;
pub use verifier::{
    prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey,
    VerificationError,
};

// For `compat::bellperson`, which runs circuits of bellpepper-core 0.2 through the same code.
pub(crate) use circuit::{error_to_v02, Bellperson};
pub(crate) use generator::{generate, Toxic};
pub(crate) use params::write_points;
pub(crate) use prover::prove_batch;
