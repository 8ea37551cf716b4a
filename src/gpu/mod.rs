//! OpenCL backend (feature `gpu`).
//!
//! Proofs use it on their own (`groth16::ProveOptions::use_gpu`, on by default); what a service
//! calls here: [`backend::devices`] once at start (discovery, programs compiled or read from the
//! disk cache, so that the first proof does not pay for them) and [`backend::device_ids`] (the
//! ids `ProveOptions::devices` takes); [`gpu_is_available`] (is a device free now?);
//! [`PriorityGuard::acquire`] (keep a claim at a priority across several proofs); [`Selection`]
//! (which devices, from `PREEMPTIBLE_GROTH16_GPUS` and `PREEMPTIBLE_GROTH16_OPENCL_CPU`); and the
//! lock files' status ([`locks`], as the `gpu_status` example shows them).
//!
//! Inside: device discovery and selection ([`device`]), program building with in-memory and on-disk caches
//! ([`program`]), Montgomery arithmetic for `Fr`, `Fq` and `Fq2` as OpenCL sources ([`source`],
//! `src/gpu/cl/`, with an inline-PTX multiplication on NVIDIA), the FFT and the prover's quotient
//! ([`FftKernel`]), G1 and G2 multiexps over chunks and across devices ([`MultiexpKernel`],
//! [`multiexp_split`]), and the prover's dispatch with CPU fallback ([`backend`]). The lock
//! protocol and preemption build on these.

pub mod backend;
mod buffer;
pub mod device;
mod engine;
mod error;
pub mod fake;
mod fft;
mod guard;
pub mod locks;
mod multiexp;
pub mod program;
mod proof_backend;
pub mod scheduler;
pub mod source;
mod staging;
#[doc(hidden)]
pub mod test_hooks;

pub use device::{Device, Selection};
pub use error::GpuError;
pub use fft::{FftKernel, QuotientValue};
pub use guard::{gpu_is_available, PriorityGuard};
pub use multiexp::{
    multiexp_split, piece_ends, AnyBases, AnySums, GpuCurve, KeepOnDevice, MultiexpKernel,
    PieceSums, QueryKey, SplitPart, FINISH_GRACE_ENV,
};
pub(crate) use proof_backend::GpuBackend;
