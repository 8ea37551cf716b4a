//! What computes on a device ([`Engine`]): the OpenCL kernels ([`OpenClEngine`]) or a fake
//! device of known speed ([`super::fake::FakeDevice`], for the demo and the tests on machines
//! without a GPU). The rest of the crate sees a device only through this trait.

use super::error::GpuError;
use super::fft::FftKernel;
use super::multiexp::{AnyBases, AnySums, KeepOnDevice, MultiexpKernel};
use crate::domain::QuotientSteps;
use crate::multiexp::ScalarRepr;
use blstrs::Scalar;
use std::fmt;

/// What computes on one device. Object-safe: a device holds a `Box<dyn Engine>`, so a
/// multiexp's group comes as a value ([`AnyBases`]) rather than as a type parameter.
pub(crate) trait Engine: Send + Sync + fmt::Debug {
    /// Terms of one piece of a multiexp call, for a group whose kernels' pieces are
    /// `group_piece_terms` terms: a call stopped early keeps its finished pieces.
    fn piece_terms(&self, group_piece_terms: usize) -> usize;

    /// Device memory one multiexp call over `run_terms` terms needs, where the OpenCL kernels'
    /// estimate for its pieces is `kernel_bytes`.
    fn multiexp_bytes(&self, kernel_bytes: u64, run_terms: usize) -> u64;

    /// The multiexp over `bases` in pieces ending at `ends`; `interrupt` is asked between
    /// kernel launches. With `keep`, the bases are kept on the device for later calls over the
    /// same query, and those kept already are not uploaded again (`multiexp/resident.rs`).
    fn multiexp(
        &self,
        bases: AnyBases<'_>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        keep: Option<KeepOnDevice>,
    ) -> AnySums;

    /// Frees the bases kept on the device; returns the bytes they took.
    fn free_kept_bases(&self) -> u64;

    /// The device's memory in bytes, for the budget of kept bases.
    fn memory_bytes(&self) -> u64;

    /// The prover's quotient, its coefficients as the H multiexp reads them.
    fn quotient(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError>;

    /// The prover's quotient from the steps done in `steps`, keeping each step it finishes
    /// there.
    fn quotient_steps(
        &self,
        steps: &mut QuotientSteps,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError>;

    /// Whether the quotient can run here.
    fn has_fft(&self) -> bool;

    /// Bytes of device memory held now.
    fn live_device_bytes(&self) -> u64;

    /// The most device memory held at once since the last call.
    fn take_peak_device_bytes(&self) -> u64;
}

/// An OpenCL device's kernels: the multiexp's, and the FFT's when its program built.
#[derive(Debug)]
pub(crate) struct OpenClEngine {
    pub(crate) name: String,
    pub(crate) multiexp: MultiexpKernel,
    pub(crate) fft: Option<FftKernel>,
}

impl OpenClEngine {
    fn fft(&self) -> Result<&FftKernel, GpuError> {
        self.fft
            .as_ref()
            .ok_or_else(|| GpuError::NoDevice(format!(": {} has no FFT program", self.name)))
    }
}

impl Engine for OpenClEngine {
    fn piece_terms(&self, group_piece_terms: usize) -> usize {
        group_piece_terms
    }

    fn multiexp_bytes(&self, kernel_bytes: u64, _run_terms: usize) -> u64 {
        kernel_bytes
    }

    fn multiexp(
        &self,
        bases: AnyBases<'_>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        keep: Option<KeepOnDevice>,
    ) -> AnySums {
        let kernel = &self.multiexp;
        match (bases, keep) {
            (AnyBases::G1(b), None) => {
                AnySums::G1(kernel.multiexp_in_pieces(b, scalars, ends, interrupt))
            }
            (AnyBases::G2(b), None) => {
                AnySums::G2(kernel.multiexp_in_pieces(b, scalars, ends, interrupt))
            }
            (AnyBases::G1(b), Some(keep)) => {
                AnySums::G1(kernel.multiexp_keeping_bases(b, scalars, ends, interrupt, keep))
            }
            (AnyBases::G2(b), Some(keep)) => {
                AnySums::G2(kernel.multiexp_keeping_bases(b, scalars, ends, interrupt, keep))
            }
        }
    }

    fn free_kept_bases(&self) -> u64 {
        self.multiexp.free_kept_bases()
    }

    fn memory_bytes(&self) -> u64 {
        self.multiexp.device().memory
    }

    fn quotient(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError> {
        self.fft()?.quotient_as(a, b, c, interrupt)
    }

    fn quotient_steps(
        &self,
        steps: &mut QuotientSteps,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError> {
        self.fft()?.quotient_steps_as(steps, interrupt)
    }

    fn has_fft(&self) -> bool {
        self.fft.is_some()
    }

    fn live_device_bytes(&self) -> u64 {
        self.multiexp.live_device_bytes() + self.fft.as_ref().map_or(0, |f| f.live_device_bytes())
    }

    /// The FFT's and the multiexp's peaks, the larger (a claim runs one at a time on a device).
    fn take_peak_device_bytes(&self) -> u64 {
        let fft = self.fft.as_ref().map_or(0, |f| f.take_peak_device_bytes());
        self.multiexp.take_peak_device_bytes().max(fft)
    }
}
