//! The prover's quotient on a claim's device, whole or in steps, and what became of it.

use super::claim::ClaimInner;
use super::lock;
use super::LockedKernel;
use crate::domain::QuotientSteps;
use crate::gpu::backend::MIN_GPU_FFT;
use crate::gpu::error::GpuError;
use crate::multiexp::ScalarRepr;
use blstrs::Scalar;
use std::time::Instant;

/// What became of a quotient offered to a claim's devices.
#[derive(Debug)]
pub(crate) enum QuotientOnGpu {
    /// A device computed it.
    Done(Vec<ScalarRepr>),
    /// A higher priority took the device in the middle (the device is released).
    Preempted,
    /// Every device that could run it is held by another prover now.
    Busy,
    /// No device will run it (too small, out of memory, failed, or none with an FFT program):
    /// the CPU's.
    NotThere,
}

impl ClaimInner {
    /// The prover's quotient on a held (or newly taken) device, or why not.
    pub(super) fn quotient(&self, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> QuotientOnGpu {
        if a.len().next_power_of_two() < MIN_GPU_FFT {
            return QuotientOnGpu::NotThere;
        }
        let started = Instant::now();
        let result = self.on_fft_device(&mut |k| k.device.quotient(a, b, c, &|| k.should_yield()));
        if matches!(result, QuotientOnGpu::Preempted) {
            self.count_lost_quotient_work("a quotient", started);
        }
        result
    }

    /// The quotient from the steps done in `steps`, keeping each step a device finishes.
    pub(super) fn quotient_steps(&self, steps: &mut QuotientSteps) -> QuotientOnGpu {
        if steps.n < MIN_GPU_FFT {
            return QuotientOnGpu::NotThere;
        }
        let started = Instant::now();
        let result =
            self.on_fft_device(&mut |k| k.device.quotient_steps(steps, &|| k.should_yield()));
        if matches!(result, QuotientOnGpu::Preempted) {
            // What the try did after its last kept step is lost.
            let since = steps
                .last_step_at
                .filter(|at| *at > started)
                .unwrap_or(started);
            self.count_lost_quotient_work("a quotient in steps", since);
        }
        result
    }

    /// Counts and logs the device work a stopped quotient (`what`) did since `since` and lost.
    fn count_lost_quotient_work(&self, what: &str, since: Instant) {
        let lost = since.elapsed();
        log::info!("gpu: {what} stopped; {lost:.2?} of its device work thrown away");
        self.shared().counts.device_work_lost += lost;
    }

    /// Runs `quotient` on a held (or newly taken) device that has an FFT program.
    fn on_fft_device(
        &self,
        quotient: &mut dyn FnMut(&LockedKernel) -> Result<Vec<ScalarRepr>, GpuError>,
    ) -> QuotientOnGpu {
        let mut held = std::mem::take(&mut *lock(&self.idle));
        if !held.iter().any(|k| k.device.has_fft()) {
            // None held, or none that can run it: a free one that can is taken too.
            held.extend(self.try_take());
        }
        // A device without an FFT program still serves the multiexps: not a failure.
        let Some(at) = held.iter().position(|k| k.device.has_fft()) else {
            lock(&self.idle).extend(held);
            let s = self.shared();
            let usable = self
                .devices
                .iter()
                .any(|d| d.has_fft() && !s.failed.contains(&d.id) && !s.holding.contains(&d.id));
            return if usable {
                QuotientOnGpu::Busy
            } else {
                QuotientOnGpu::NotThere
            };
        };
        let k = held.remove(at);
        lock(&self.idle).extend(held);
        if k.should_yield() {
            self.release(k, true);
            return QuotientOnGpu::Preempted;
        }
        let mut result = quotient(&k);
        if matches!(result, Err(GpuError::OutOfMemory(_))) && self.stop_keeping_bases(&k) {
            // The bases kept for the batch took the memory: tried again without them.
            result = quotient(&k);
        }
        match result {
            Ok(h) => {
                self.shared().counts.fft_on_gpu = true;
                lock(&self.idle).push(k);
                QuotientOnGpu::Done(h)
            }
            Err(GpuError::Interrupted) => {
                self.release(k, true);
                QuotientOnGpu::Preempted
            }
            Err(e @ GpuError::OutOfMemory(_)) => {
                // The quotient cannot be cut smaller: the CPU computes it; the device stays
                // with this claim for the multiexps.
                log::info!("gpu: quotient on the CPU: {e}");
                self.shared().counts.out_of_memory += 1;
                lock(&self.idle).push(k);
                QuotientOnGpu::NotThere
            }
            Err(e) => {
                self.fail(k, &e);
                QuotientOnGpu::NotThere
            }
        }
    }
}
