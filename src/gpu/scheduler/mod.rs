//! Where a proof's work goes: chunks of each multiexp to the devices this prover holds and to the
//! CPU, under the lock protocol of [`super::locks`].
//!
//! A [`GpuClaim`] lives for one batch of proofs (one proof, or several over one parameter set,
//! whose devices keep the bases between proofs). It takes free devices (never one that a higher
//! priority has asked for), and when only devices held by lower priorities are left it raises its
//! flag on them and, at the start of each proof, waits for the hand-over (trying every 250 us for
//! 50 ms, then every 1 to 4 ms). `GpuClaim::multiexp` cuts a multiexp into chunks in a queue: a
//! GPU worker per held device takes chunks from the front, this thread computes chunks from the
//! back on the CPU (while more than two per running device are left, so that the slower CPU does
//! not hold up the end). A [`LockedKernel`] probes for higher requests before each chunk and
//! before each kernel launch; when one comes it stops, frees its buffers (those of a call, and
//! the bases kept for the batch), puts the unfinished chunk back, and releases the device.
//! Between its chunks the CPU side tries to take devices again; a device it gets gets a new
//! worker, which counts as a return to the GPU. The sum of the chunk results is the multiexp, so
//! no finished chunk is computed twice.

use super::backend::{self, GpuDevice};
use super::locks;
use super::multiexp::GpuCurve;
use crate::bases::Bases;
use crate::config::Config;
use crate::domain::QuotientSteps;
use crate::multiexp::ScalarRepr;
use crate::options::ProofReport;
use crate::priority::Priority;
use blstrs::Scalar;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

mod claim;
mod cpu_share;
mod locked_kernel;
mod multiexp;
mod queue;
mod quotient;
mod rates;
mod worker;

use claim::{ClaimInner, Shared};
pub(crate) use cpu_share::cpu_pool;
pub use locked_kernel::LockedKernel;
pub(crate) use quotient::QuotientOnGpu;

thread_local! {
    /// Claims alive on this thread: a proof started inside another proof's thread must not wait
    /// for a device that the outer proof (blocked on it) would have to give up.
    static CLAIMS_ON_THREAD: Cell<usize> = const { Cell::new(0) };
}

/// One batch's use of the GPUs. A watcher thread probes the devices held between pieces of
/// work (while the prover prepares the next multiexp on the CPU) and releases any that a higher
/// priority asks for, so a request never waits for the prover's CPU work.
pub struct GpuClaim {
    inner: Arc<ClaimInner>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl GpuClaim {
    /// A claim on this process's devices (those in `only`, if given); `None` when there are no
    /// devices or the lock directory cannot be used (warned: the proof runs on the CPU).
    /// `keep_bases`, for a batch's claim, is the device memory its quotient needs: held devices
    /// then keep each multiexp's bases for the batch's later proofs, in what memory is left.
    pub(crate) fn new(
        priority: Priority,
        only: Option<&[String]>,
        config: &Config,
        keep_bases: Option<u64>,
    ) -> Option<GpuClaim> {
        let devices: Vec<&'static GpuDevice> = backend::devices()
            .iter()
            .filter(|d| only.is_none_or(|ids| ids.contains(&d.id)))
            .collect();
        if devices.is_empty() {
            return None;
        }
        if config.bellman_no_gpu {
            log::info!("gpu: BELLMAN_NO_GPU is set; proving on the CPU");
            return None;
        }
        locks::bellperson::log_files(
            config.bellperson_gpus_per_lock,
            devices
                .iter()
                .map(|d| (d.id.as_str(), d.bellperson_id.as_deref())),
        );
        let dir = config.lock_dir.clone();
        locks::warn_if_unsafe_dir(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            log::warn!(
                "gpu: lock directory {} unusable ({e}); proving on the CPU",
                dir.display()
            );
            return None;
        }
        let may_wait = CLAIMS_ON_THREAD.with(|c| {
            c.set(c.get() + 1);
            c.get() == 1
        });
        let inner = Arc::new(ClaimInner {
            dir,
            priority,
            devices,
            idle: Mutex::new(Vec::new()),
            shared: Mutex::new(Shared::default()),
            may_wait,
            keep_bases,
            cpu_wait: config.cpu_wait.unwrap_or(claim::DEFAULT_CPU_WAIT),
            stop: AtomicBool::new(false),
        });
        inner.start();
        let watched = inner.clone();
        let watcher = std::thread::Builder::new()
            .name("gpu-claim-watcher".into())
            .spawn(move || watched.watch())
            .map_err(|e| log::warn!("gpu: no watcher thread ({e}); probing between chunks only"))
            .ok();
        Some(GpuClaim { inner, watcher })
    }

    /// `sum_i scalars[i] * bases[i]` in chunks over the held devices and the CPU; the error
    /// names a mapped base that is not a point on the curve.
    pub(crate) fn multiexp<G: GpuCurve>(
        &mut self,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        chunk_terms: usize,
    ) -> Result<G::Curve, String> {
        self.inner.multiexp(bases, scalars, chunk_terms)
    }

    /// The prover's quotient on a held (or newly taken) device, or why not.
    pub(crate) fn quotient(&mut self, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> QuotientOnGpu {
        self.inner.quotient(a, b, c)
    }

    /// The quotient from the steps done in `steps` on a device of this claim; each step the
    /// device finishes stays in `steps`, also when it is preempted.
    pub(crate) fn quotient_steps(&mut self, steps: &mut QuotientSteps) -> QuotientOnGpu {
        self.inner.quotient_steps(steps)
    }

    /// This claim's part of the report of the proof just done, the devices kept for the next
    /// proof of its batch (a higher priority still takes them at any time).
    pub(crate) fn proof_done(&mut self) -> ProofReport {
        self.inner.proof_done()
    }

    /// Before a batch's next proof: takes the devices that are free, and waits, as at the
    /// claim's start, for a lower priority to hand one over if none is held.
    pub(crate) fn next_proof(&mut self) {
        if self.inner.shared().holding.is_empty() {
            self.inner.start();
        } else {
            let taken = self.inner.try_take();
            lock(&self.inner.idle).extend(taken);
        }
    }

    /// Releases every device; returns this claim's part of the proof's report.
    pub(crate) fn finish(mut self) -> ProofReport {
        self.stop_watcher();
        self.inner.finish()
    }

    fn stop_watcher(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

impl Drop for GpuClaim {
    fn drop(&mut self) {
        self.stop_watcher();
        // The devices go with the last reference (the workers and the watcher are done).
        lock(&self.inner.idle).clear();
        CLAIMS_ON_THREAD.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// Locks `m`, also after a thread panicked while holding it (the state stays usable: counters
/// and lists that a panic leaves at worst one update short).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
