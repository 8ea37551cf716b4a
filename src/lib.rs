//! Groth16 zk-SNARKs over BLS12-381, built so that a long, low-priority proof can hand its GPU to a
//! short, high-priority one without losing finished work.
//!
//! It has the circuit API of [bellpepper-core](https://docs.rs/bellpepper-core/0.4) 0.4 (so
//! circuits built with bellpepper's gadgets work unchanged), parameter generation, proving on the
//! CPU and (with the `gpu` feature) on OpenCL devices shared by priority, verification (single
//! and batched), and the bellman/bellperson byte format for parameters, verifying keys and proofs.
//! Programs written for bellperson 0.27 switch through [`compat::bellperson`].
//!
//! ```
//! use preemptible_groth16::groth16::{
//!     create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof,
//! };
//! use preemptible_groth16::{Circuit, ConstraintSystem, SynthesisError};
//! use blstrs::Scalar;
//! use ff::{Field, PrimeField};
//!
//! /// Knows `x` such that `x * x = y` for a public `y`.
//! struct Square { x: Option<Scalar> }
//!
//! impl<S: PrimeField> Circuit<S> for Square where Scalar: Into<S> {
//!     fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//!         let x_val = self.x.map(Into::into);
//!         let x = cs.alloc(|| "x", || x_val.ok_or(SynthesisError::AssignmentMissing))?;
//!         let y = cs.alloc_input(|| "y", || {
//!             x_val.map(|v| v.square()).ok_or(SynthesisError::AssignmentMissing)
//!         })?;
//!         cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//!         Ok(())
//!     }
//! }
//!
//! let mut rng = rand::thread_rng();
//! let params = generate_random_parameters(Square { x: None }, &mut rng)?;
//! let pvk = prepare_verifying_key(&params.vk);
//! let x = Scalar::from(7u64);
//! let proof = create_random_proof(Square { x: Some(x) }, &params, &mut rng)?;
//! assert!(verify_proof(&pvk, &proof, &[x.square()])?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Module map (see `docs/ARCHITECTURE.md`): [`multicore`] owns the thread pool, [`multiexp`] the
//! Pippenger multi-scalar multiplication, [`domain`] the FFTs, [`groth16`] the protocol.
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
// `unsafe` is denied except where a block carries a SAFETY note: the mapping of a parameter
// file (`bases.rs`, the one block without the `gpu` feature) and, with `gpu`, the OpenCL layer's
// kernel launches and staging memory (its mapping and the copies through it) and Linux system
// calls (`free.rs`: `madvise`, `sysconf`; `multicore.rs`: the scheduling policy and nice value of
// the background pool's threads).
#![deny(unsafe_code)]

mod backend;
mod bases;
mod batch_affine;
pub mod compat;
pub mod config;
mod curve;
pub mod domain;
mod fixed_base;
mod free;
pub mod groth16;
pub mod multicore;
pub mod multiexp;
mod options;
mod priority;
mod scalar;
mod stop;

#[cfg(feature = "gpu")]
pub mod gpu;
/// The GPU API without the `gpu` feature: [`gpu::PriorityGuard`] and [`gpu::gpu_is_available`]
/// with the same signatures, claiming and finding nothing.
#[cfg(not(feature = "gpu"))]
#[path = "gpu_off.rs"]
pub mod gpu;

pub use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, Namespace, SynthesisError, Variable,
};
/// The pairing-friendly curve this crate proves over, and its groups (re-exported from `blstrs`).
pub use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
