//! OpenCL backend (feature `gpu`).
//!
//! So far: device discovery and selection ([`device`]), program building with in-memory and
//! on-disk caches ([`program`]), Montgomery field arithmetic for `Fr` and `Fq` as OpenCL sources
//! ([`source`], `src/gpu/cl/`), tested against blstrs, a first radix-2 FFT ([`FftKernel`]) and a
//! first G1 multiexp over chunks ([`MultiexpKernel`]). G2, the prover's dispatch with CPU
//! fallback, the lock protocol and preemption build on these.

pub mod backend;
pub mod device;
mod error;
mod fft;
mod multiexp;
pub mod program;
pub mod source;

pub use device::{Device, Selection};
pub use error::GpuError;
pub use fft::FftKernel;
pub use multiexp::{multiexp_split, GpuCurve, MultiexpKernel, SplitPart};
