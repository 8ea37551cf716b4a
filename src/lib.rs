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
//! # GPUs and priorities
//!
//! With the `gpu` feature, the FFTs and multiexps run on every OpenCL GPU the machine has
//! (NVIDIA, AMD, or PoCL on a CPU for tests); without a device, or with `use_gpu` off, everything
//! runs on the CPU with the same results. Provers in one process or in many share the devices
//! through lock files (`gpu::locks`). Each proof has a
//! [`Priority`](groth16::Priority): `Low`, `Normal` or `High`. A prover holding a device hands it
//! to a higher priority at its next chunk of work (milliseconds), frees its device memory, goes
//! on on the CPU without losing finished chunks, and takes the device back once it is free.
//! The `*_in_priority` functions take bellperson's `priority: bool`: `true` proves at `High`,
//! `false` at `Normal`. A service readies its devices once at start
//! (`gpu::backend::devices()`: discovery, programs compiled or read from the disk cache), so
//! that its first proof does not pay for them. Lock files live in the temp directory, or in
//! `PREEMPTIBLE_GROTH16_LOCK_DIR`; OpenCL CPU devices (PoCL) are used only with
//! `PREEMPTIBLE_GROTH16_OPENCL_CPU=1`.
//!
//! # Options and reports
//!
//! `create_proof_with_options` (and its batch and random-`r`/`s` forms) take
//! [`ProveOptions`](groth16::ProveOptions) (priority, GPU use, devices, chunk size) and return a
//! [`ProofReport`](groth16::ProofReport) beside each proof: where each chunk ran, how often the
//! proof was preempted and came back, how long it waited, its device memory, GPU failures it
//! recovered from, and the synthesis's split. The report is how a service (or a test) knows what
//! happened; the log (`log` crate, target `preemptible_groth16`) says why. With the `serde`
//! feature the report serializes as one flat JSON object whose keys carry their units
//! (`total_ms`, `peak_device_bytes`, ...), and `Priority` by its name.
//!
//! ```
//! use preemptible_groth16::groth16::{
//!     create_random_proof_with_options, generate_random_parameters, Priority, ProveOptions,
//! };
//! # use preemptible_groth16::{Circuit, ConstraintSystem, SynthesisError, Scalar};
//! # #[derive(Clone, Copy)]
//! # struct Cube;
//! # impl Circuit<Scalar> for Cube {
//! #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//! #         let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
//! #         let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
//! #         cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
//! #         Ok(())
//! #     }
//! # }
//! let mut rng = rand::thread_rng();
//! let params = generate_random_parameters(Cube, &mut rng)?;
//! let options = ProveOptions::with_priority(Priority::Low).use_gpu(false);
//! let (_proof, report) = create_random_proof_with_options(Cube, &params, &mut rng, &options)?;
//! assert_eq!(report.gpu_chunks_total(), 0);
//! println!("{} chunks, {} preemptions, {:?} in all", report.total_chunks, report.preemptions, report.total);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Large circuits
//!
//! A setup takes minutes at 2^24 constraints:
//! [`generate_random_parameters_with_progress`](groth16::generate_random_parameters_with_progress)
//! tells a callback how many of its points are done, for a progress bar.
//!
//! [`MappedParameters`](groth16::MappedParameters) proves from a parameter file mapped into
//! memory, decoding each query a window at a time, so host memory stays well under the file's
//! size. A [`CircuitShape`](groth16::CircuitShape) records a circuit's constraints once; proofs
//! made from it (through [`PreparedParameters`](groth16::PreparedParameters), or automatically
//! for the second and later circuits of a batch) only compute the witness, then evaluate the
//! constraints on all cores, and are verified before they are returned.
//!
//! # Coming from bellperson
//!
//! [`compat::bellperson`] mirrors bellperson 0.27's paths, names and signatures (its circuits
//! of bellpepper-core 0.2 and its gadgets included): change the `use` lines and keep the code.
//! Files and proofs are byte-compatible both ways, and bellperson's lock files are honoured.
//!
//! # Cargo features and settings
//!
//! - `gpu`: the OpenCL backend ([`gpu`]); without it everything runs on the CPU and nothing
//!   OpenCL is compiled or needed. With it the build links the OpenCL loader (`libOpenCL.so`).
//! - `serde`: `Serialize` on `ProofReport` and `Serialize`/`Deserialize` on `Priority`.
//! - `test-hooks`: failure injection for this crate's own tests; not for services.
//!
//! Per-process settings (threads, devices, lock and cache directories) are environment
//! variables, listed in [`config`].
//!
//! Module map (see [docs/ARCHITECTURE.md](https://github.com/preemptible-groth16/preemptible-groth16/blob/main/docs/ARCHITECTURE.md)): [`multicore`] owns the thread pool, [`multiexp`] the
//! Pippenger multi-scalar multiplication, [`domain`] the FFTs, [`groth16`] the protocol.
#![deny(missing_docs, rustdoc::broken_intra_doc_links)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// `unsafe` is denied except where a block carries a SAFETY note: the mapping of a parameter
// file (`bases.rs`, the one block without the `gpu` feature) and, with `gpu`, the OpenCL layer's
// kernel launches and staging memory (its mapping and the copies through it) and Linux system
// calls (`free.rs`: `madvise`, `sysconf`; `multicore.rs`: the scheduling policy and nice value of
// the background pool's threads).
#![deny(unsafe_code)]

// README's Rust blocks compile and run as doctests, so the page a user reads first stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

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
#[cfg(feature = "serde")]
mod report_json;
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
