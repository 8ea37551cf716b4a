//! The prover's door to the GPUs: the selected devices' kernels, built once per process, and the
//! rule that any GPU error means "do that piece on the CPU".
//!
//! Multiexps (G1 and G2, from `2^10` terms up; below that a launch costs more than the work) are
//! split across every selected device ([`multiexp_split`]); a part whose device fails is computed
//! on the CPU. The quotient `H = (A B - C) / Z` (seven FFTs, from `2^12` values up) runs on the
//! first device, or wholly on the CPU if that fails. Counters record what ran where, for tests
//! and logs, until the prover's report (the preemption issue) carries them.

use super::device::{self, Selection};
use super::error::GpuError;
use super::fft::FftKernel;
use super::multiexp::{multiexp_split, GpuCurve, MultiexpKernel};
use crate::multiexp::ScalarRepr;
use blstrs::Scalar;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Multiexps smaller than this stay on the CPU.
pub const MIN_GPU_TERMS: usize = 1 << 10;
/// Quotients over smaller domains stay on the CPU.
pub const MIN_GPU_FFT: usize = 1 << 12;

/// The kernels of the selected devices; those that failed to build are left out (logged).
struct Gpus {
    multiexp: Vec<MultiexpKernel>,
    fft: Option<FftKernel>,
}

static GPUS: OnceLock<Gpus> = OnceLock::new();
static INJECT_FAILURES: AtomicBool = AtomicBool::new(false);
static GPU_MULTIEXPS: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);
static GPU_QUOTIENTS: AtomicU64 = AtomicU64::new(0);
static QUOTIENT_FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// What the GPU path has done in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuStats {
    /// Multiexp parts computed on a GPU (one per device a multiexp was split across).
    pub gpu_multiexps: u64,
    /// Multiexp parts that failed on a GPU and were computed on the CPU instead.
    pub cpu_fallbacks: u64,
    /// Quotients (the prover's FFTs) computed on a GPU.
    pub gpu_quotients: u64,
    /// Quotients that failed on the GPU and were computed on the CPU instead.
    pub quotient_fallbacks: u64,
}

/// The counters so far.
pub fn stats() -> GpuStats {
    GpuStats {
        gpu_multiexps: GPU_MULTIEXPS.load(Ordering::Relaxed),
        cpu_fallbacks: FALLBACKS.load(Ordering::Relaxed),
        gpu_quotients: GPU_QUOTIENTS.load(Ordering::Relaxed),
        quotient_fallbacks: QUOTIENT_FALLBACKS.load(Ordering::Relaxed),
    }
}

/// Makes every GPU multiexp and quotient fail as a lost device would, to test the CPU fallback.
#[doc(hidden)]
pub fn inject_failures(on: bool) {
    INJECT_FAILURES.store(on, Ordering::Relaxed);
    if let Some(gpus) = GPUS.get() {
        for k in &gpus.multiexp {
            k.inject_failures(on);
        }
    }
}

/// The number of devices multiexps are split across (0 without a usable GPU); the first call
/// builds the kernels.
pub fn multiexp_devices() -> usize {
    gpus().multiexp.len()
}

fn gpus() -> &'static Gpus {
    GPUS.get_or_init(|| {
        let devices = match device::list(&Selection::from_env()) {
            Ok(d) => d,
            Err(e) => {
                log::info!("gpu: no device ({e}); proving on the CPU");
                Vec::new()
            }
        };
        // The programs compile side by side: the first proof waits for the slowest, not the sum.
        std::thread::scope(|scope| {
            let fft = devices
                .first()
                .map(|dev| scope.spawn(move || FftKernel::new(dev)));
            let multiexp: Vec<_> = devices
                .iter()
                .map(|dev| scope.spawn(move || MultiexpKernel::new(dev)))
                .collect();
            let mut gpus = Gpus {
                multiexp: Vec::new(),
                fft: None,
            };
            for (dev, handle) in devices.iter().zip(multiexp) {
                match join(handle) {
                    Ok(k) => {
                        log::info!("gpu: multiexps on {} ({})", dev.name, dev.id);
                        k.inject_failures(INJECT_FAILURES.load(Ordering::Relaxed));
                        gpus.multiexp.push(k);
                    }
                    Err(e) => log::warn!("gpu: {} unusable for multiexps ({e})", dev.name),
                }
            }
            if let (Some(dev), Some(handle)) = (devices.first(), fft) {
                match join(handle) {
                    Ok(k) => {
                        log::info!("gpu: FFTs on {} ({})", dev.name, dev.id);
                        gpus.fft = Some(k);
                    }
                    Err(e) => log::warn!("gpu: {} unusable for FFTs ({e})", dev.name),
                }
            }
            gpus
        })
    })
}

fn join<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T, GpuError>>) -> Result<T, GpuError> {
    handle
        .join()
        .map_err(|_| GpuError::Ocl("a kernel build thread panicked".into()))?
}

/// The multiexp on the GPUs, or `None` when there is no GPU or the input is small (the caller
/// then computes on the CPU). Parts that fail on a device are computed on the CPU here.
pub(crate) fn multiexp<G: GpuCurve>(bases: &[G], scalars: &[ScalarRepr]) -> Option<G::Curve> {
    if bases.len() < MIN_GPU_TERMS {
        return None;
    }
    let kernels: Vec<&MultiexpKernel> = gpus().multiexp.iter().collect();
    if kernels.is_empty() {
        return None;
    }
    match multiexp_split(&kernels, bases, scalars) {
        Ok((sum, parts)) => {
            for part in &parts {
                let counter = if part.on_gpu {
                    &GPU_MULTIEXPS
                } else {
                    &FALLBACKS
                };
                counter.fetch_add(1, Ordering::Relaxed);
            }
            Some(sum)
        }
        Err(e) => {
            log::warn!(
                "gpu: {} multiexp failed ({e}); computing it on the CPU",
                G::NAME
            );
            None
        }
    }
}

/// The prover's quotient ([`FftKernel::quotient`]) on the first GPU, or `None` when there is no
/// GPU, the domain is small, or the GPU failed (logged; the caller computes on the CPU).
pub(crate) fn quotient(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Option<Vec<Scalar>> {
    if a.len().next_power_of_two() < MIN_GPU_FFT {
        return None;
    }
    let kernel = gpus().fft.as_ref()?;
    let result = if INJECT_FAILURES.load(Ordering::Relaxed) {
        Err(GpuError::Ocl("injected failure".into()))
    } else {
        kernel.quotient(a, b, c)
    };
    match result {
        Ok(h) => {
            GPU_QUOTIENTS.fetch_add(1, Ordering::Relaxed);
            Some(h)
        }
        Err(e) => {
            QUOTIENT_FALLBACKS.fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "gpu: quotient over {} values failed ({e}); computing it on the CPU",
                a.len()
            );
            None
        }
    }
}
