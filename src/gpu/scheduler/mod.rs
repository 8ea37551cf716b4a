//! Where a proof's work goes: chunks of each multiexp to the devices this prover holds and to the
//! CPU, under the lock protocol of [`super::locks`].
//!
//! A [`GpuClaim`] lives for one proof. It takes free devices (never one that a higher priority
//! has asked for), and when only devices held by lower priorities are left it raises its flag on
//! them and, at the start of the proof, waits (sleeping 1 to 4 ms between tries) for the hand-over.
//! `GpuClaim::multiexp` cuts a multiexp into chunks in a queue: a GPU worker per held device
//! takes chunks from the front, this thread computes chunks from the back on the CPU (while
//! more than two per running device are left, so that the slower CPU does not hold up the end). A
//! [`LockedKernel`] probes for higher requests before each chunk and before each kernel launch;
//! when one comes it stops, frees its buffers (they live only inside a call), puts the unfinished
//! chunk back, and releases the device. Between its chunks the CPU side tries to take devices
//! again; a device it gets gets a new worker, which counts as a return to the GPU. The sum of
//! the chunk results is the multiexp, so no finished chunk is computed twice.

use super::backend::{self, GpuDevice};
use super::locks::{self, PriorityFlag};
use super::multiexp::GpuCurve;
use crate::domain::QuotientSteps;
use crate::multiexp::ScalarRepr;
use crate::options::ProofReport;
use crate::priority::Priority;
use blstrs::Scalar;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

mod batch;
mod cpu_share;
mod locked_kernel;
mod multiexp;
mod queue;
mod quotient;
mod release;
mod take;
mod watch;
mod worker;

pub(crate) use cpu_share::cpu_pool;
pub use locked_kernel::LockedKernel;
pub(crate) use quotient::QuotientOnGpu;

thread_local! {
    /// Claims alive on this thread: a proof started inside another proof's thread must not wait
    /// for a device that the outer proof (blocked on it) would have to give up.
    static CLAIMS_ON_THREAD: Cell<usize> = const { Cell::new(0) };
}

/// State the CPU side and the GPU workers both change.
#[derive(Debug, Default)]
struct Shared {
    /// This claim's part of the proof's report, counted as it goes.
    counts: ProofReport,
    /// Devices that failed during this proof: not taken again.
    failed: HashSet<String>,
    /// Devices this claim holds (idle or in a worker's hands).
    holding: HashSet<String>,
    /// Flags raised on devices held by lower priorities (or by holders of unknown level).
    asking: HashMap<String, Asking>,
    /// When this prover last gave a device up to a higher priority (`None`: never; once it has,
    /// a later take is a return, logged with the time since).
    lost_at: Option<Instant>,
    /// The most chunks per call after a device ran out of memory, per device and group.
    batch_cap: HashMap<(String, &'static str), usize>,
}

/// A flag this prover raised on a device someone else holds.
#[derive(Debug)]
struct Asking {
    flag: PriorityFlag,
    /// When it was raised: the hand-over's start.
    since: Instant,
    /// bellperson's priority lock, held while a `High` prover asks for a device that a
    /// bellperson prover holds (its normal provers yield to it).
    bellperson: Option<locks::bellperson::PriorityRequest>,
    /// Whether the holder is a verified lower priority, worth waiting for at the proof's start
    /// (a holder whose text the kernel's lock table does not confirm may be anyone, and may
    /// never yield: the prover starts on the CPU and takes the device if it comes free).
    worth_waiting: bool,
}

/// One proof's use of the GPUs. A watcher thread probes the devices held between pieces of
/// work (while the prover prepares the next multiexp on the CPU) and releases any that a higher
/// priority asks for, so a request never waits for the prover's CPU work.
pub struct GpuClaim {
    inner: Arc<ClaimInner>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

/// The state of a claim, shared with its workers and its watcher.
struct ClaimInner {
    dir: PathBuf,
    priority: Priority,
    devices: Vec<&'static GpuDevice>,
    /// Devices held and not in use by a worker (between pieces of work).
    idle: Mutex<Vec<LockedKernel>>,
    shared: Mutex<Shared>,
    /// Whether the thread that made the claim may wait for a hand-over.
    may_wait: bool,
    /// Tells the watcher to stop.
    stop: AtomicBool,
}

fn max_opt(a: Option<Duration>, b: Duration) -> Option<Duration> {
    Some(a.map_or(b, |a| a.max(b)))
}

impl GpuClaim {
    /// A claim on this process's devices (those in `only`, if given); `None` when there are no
    /// devices or the lock directory cannot be used (warned: the proof runs on the CPU).
    pub(crate) fn new(priority: Priority, only: Option<&[String]>) -> Option<GpuClaim> {
        let devices: Vec<&'static GpuDevice> = backend::devices()
            .iter()
            .filter(|d| only.map_or(true, |ids| ids.contains(&d.id)))
            .collect();
        if devices.is_empty() {
            return None;
        }
        if locks::bellperson::gpu_disabled() {
            log::info!("gpu: BELLMAN_NO_GPU is set; proving on the CPU");
            return None;
        }
        let dir = locks::lock_dir();
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

    /// `sum_i scalars[i] * bases[i]` in chunks over the held devices and the CPU.
    pub(crate) fn multiexp<G: GpuCurve>(
        &mut self,
        bases: &[G],
        scalars: &[ScalarRepr],
        chunk_terms: usize,
    ) -> G::Curve {
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

impl ClaimInner {
    fn shared(&self) -> MutexGuard<'_, Shared> {
        // A worker that panicked cannot leave the counters half-updated in a harmful way.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Releases every device and writes the counters into `report`.
    fn finish(&self) -> ProofReport {
        let held = std::mem::take(&mut *lock(&self.idle));
        for k in held {
            self.release(k, false);
        }
        std::mem::take(&mut self.shared().counts)
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
