//! bellperson 0.27's API over this crate's prover.
//!
//! A program written for bellperson 0.27 switches by its `use` lines:
//!
//! ```text
//! -use bellperson::groth16::{create_random_proof, generate_random_parameters, Parameters};
//! -use bellperson::{Circuit, ConstraintSystem, SynthesisError};
//! +use preemptible_groth16::compat::bellperson::groth16::{
//! +    create_random_proof, generate_random_parameters, Parameters,
//! +};
//! +use preemptible_groth16::compat::bellperson::{Circuit, ConstraintSystem, SynthesisError};
//! ```
//!
//! A bellperson program, as it runs here:
//!
//! ```
//! use preemptible_groth16::compat::bellperson::groth16::{
//!     create_random_proof_in_priority, generate_random_parameters, prepare_verifying_key,
//!     verify_proof, Parameters,
//! };
//! use preemptible_groth16::compat::bellperson::{Circuit, ConstraintSystem, SynthesisError};
//! use blstrs::{Bls12, Scalar};
//! use ff::{Field, PrimeField};
//!
//! /// Knows `x` such that `x * x = y` for a public `y`.
//! struct Square<S: PrimeField> { x: Option<S> }
//!
//! impl<S: PrimeField> Circuit<S> for Square<S> {
//!     fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//!         let x = cs.alloc(|| "x", || self.x.ok_or(SynthesisError::AssignmentMissing))?;
//!         let y = cs.alloc_input(|| "y", || {
//!             self.x.map(|v| v.square()).ok_or(SynthesisError::AssignmentMissing)
//!         })?;
//!         cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//!         Ok(())
//!     }
//! }
//!
//! let mut rng = rand::thread_rng();
//! let params: Parameters<Bls12> = generate_random_parameters(Square { x: None }, &mut rng)?;
//! let x = Scalar::from(7u64);
//! let proof = create_random_proof_in_priority(Square { x: Some(x) }, &params, &mut rng, true)?;
//! let pvk = prepare_verifying_key(&params.vk);
//! assert!(verify_proof(&pvk, &proof, &[x.square()])?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The circuit traits here are bellpepper-core 0.2's, the ones bellperson 0.27 re-exports, so its
//! circuits and its gadgets (`bellperson::gadgets::sha256`, `blake2s`, `uint32`, `multipack`,
//! `boolean`, `num`, `lookup`) work unchanged; a program that uses those gadgets keeps bellperson
//! as a dependency for them (without its GPU features). Such circuits are synthesized straight
//! into this crate's constraint system, which implements both trait versions.
//!
//! The types are generic over the engine as bellperson's are, bound to [`SupportedEngine`], which
//! only [`blstrs::Bls12`] implements. Parameters, verifying keys and proofs have bellperson's
//! byte formats, so files and proofs pass between the two crates both ways.
//!
//! What differs: priorities have three levels here (bellperson's `priority: bool` maps `true` to
//! [`Priority::High`](crate::groth16::Priority) and `false` to `Normal`); the `*_with_options`
//! functions return a [`ProofReport`](crate::groth16::ProofReport) beside each proof; `Proof` has
//! no serde implementation; reading and verifying give errors where bellperson panics on some
//! malformed input. SnarkPack aggregation and the CUDA/SupraSeal prover stay with bellperson.

mod engine;
pub mod groth16;

pub use bellpepper_core_02::{
    Circuit, ConstraintSystem, Index, LinearCombination, Namespace, SynthesisError, Variable,
};
pub use engine::SupportedEngine;
