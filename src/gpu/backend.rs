//! The prover's door to the GPU: the first selected device's kernels, built once per process,
//! and the rule that any GPU error means "do it on the CPU".
//!
//! So far the multiexps go through here (G1 and G2, from `2^10` terms up; below that the launch
//! costs more than the work). The FFTs stay on the CPU until the GPU FFT beats it
//! (docs/BENCHMARKS.md has the first version 1.5x slower end to end). Counters record what ran
//! where, for tests and logs, until the prover's report (the preemption issue) carries them.

use super::device::{self, Selection};
use super::error::GpuError;
use super::multiexp::{GpuCurve, MultiexpKernel};
use crate::multiexp::ScalarRepr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Multiexps smaller than this stay on the CPU.
pub const MIN_GPU_TERMS: usize = 1 << 10;

static KERNEL: OnceLock<Option<MultiexpKernel>> = OnceLock::new();
static INJECT_FAILURES: AtomicBool = AtomicBool::new(false);
static GPU_MULTIEXPS: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// What the GPU path has done in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuStats {
    /// Multiexps computed on a GPU.
    pub gpu_multiexps: u64,
    /// Multiexps that failed on the GPU and were computed on the CPU instead.
    pub cpu_fallbacks: u64,
}

/// The counters so far.
pub fn stats() -> GpuStats {
    GpuStats {
        gpu_multiexps: GPU_MULTIEXPS.load(Ordering::Relaxed),
        cpu_fallbacks: FALLBACKS.load(Ordering::Relaxed),
    }
}

/// Makes every GPU multiexp fail as a lost device would, to test the CPU fallback.
#[doc(hidden)]
pub fn inject_failures(on: bool) {
    INJECT_FAILURES.store(on, Ordering::Relaxed);
}

fn kernel() -> Option<&'static MultiexpKernel> {
    KERNEL
        .get_or_init(|| {
            let dev = device::list(&Selection::from_env())
                .ok()?
                .into_iter()
                .next()?;
            match MultiexpKernel::new(&dev) {
                Ok(k) => {
                    log::info!("gpu: multiexps on {} ({})", dev.name, dev.id);
                    Some(k)
                }
                Err(e) => {
                    log::warn!("gpu: {} unusable ({e}); multiexps on the CPU", dev.name);
                    None
                }
            }
        })
        .as_ref()
}

/// The multiexp on the GPU, or `None` when there is no GPU, the input is small, or the GPU
/// failed (logged; the caller then computes on the CPU).
pub(crate) fn multiexp<G: GpuCurve>(bases: &[G], scalars: &[ScalarRepr]) -> Option<G::Curve> {
    if bases.len() < MIN_GPU_TERMS {
        return None;
    }
    let kernel = kernel()?;
    let result = if INJECT_FAILURES.load(Ordering::Relaxed) {
        Err(GpuError::Ocl("injected failure".into()))
    } else {
        kernel.multiexp(bases, scalars)
    };
    match result {
        Ok(r) => {
            GPU_MULTIEXPS.fetch_add(1, Ordering::Relaxed);
            Some(r)
        }
        Err(e) => {
            FALLBACKS.fetch_add(1, Ordering::Relaxed);
            log::warn!(
                "gpu: {} multiexp of {} terms failed ({e}); computing it on the CPU",
                G::NAME,
                bases.len()
            );
            None
        }
    }
}
