//! Where a proof's work goes: chunks of each multiexp to the devices this prover holds and to the
//! CPU, under the lock protocol of [`super::locks`].
//!
//! A [`GpuClaim`] lives for one proof. It takes free devices (never one that a higher priority
//! has asked for), and when only devices held by lower priorities are left it raises its flag on
//! them and, at the start of the proof, waits (sleeping, 1 ms between tries) for the hand-over.
//! [`GpuClaim::multiexp`] cuts a multiexp into chunks in a queue: a GPU worker per held device
//! takes chunks from the front, this thread computes chunks from the back on the CPU. A
//! [`LockedKernel`] probes for higher requests before each chunk and before each kernel launch;
//! when one comes it stops, frees its buffers (they live only inside a call), puts the unfinished
//! chunk back, and releases the device. Between its chunks the CPU side tries to take devices
//! again; a device it gets gets a new worker, which counts as a return to the GPU. The sum of
//! the chunk results is the multiexp, so no finished chunk is computed twice.

use super::backend::{self, GpuDevice, MIN_GPU_FFT, MIN_GPU_TERMS};
use super::error::GpuError;
use super::locks::{self, GpuLock, HigherPriorityProbe, PriorityFlag};
use super::multiexp::GpuCurve;
use crate::groth16::{Priority, ProofReport};
use crate::multiexp::{multiexp, ScalarRepr};
use blstrs::Scalar;
use group::Group;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a prover waits at its start for a lower priority to hand a device over before it
/// starts on the CPU (and keeps asking between chunks).
const MAX_START_WAIT: Duration = Duration::from_secs(10);
/// Sleep between tries while waiting for a hand-over.
const WAIT_STEP: Duration = Duration::from_millis(1);

thread_local! {
    /// Claims alive on this thread: a proof started inside another proof's thread must not wait
    /// for a device that the outer proof (blocked on it) would have to give up.
    static CLAIMS_ON_THREAD: Cell<usize> = const { Cell::new(0) };
}

/// A device this prover holds: the lock, and the probe for higher requests.
pub struct LockedKernel {
    device: &'static GpuDevice,
    lock: GpuLock,
    probe: HigherPriorityProbe,
    /// Our own flag, raised while we hold the device, for the status view.
    _flag: Option<PriorityFlag>,
    /// When a higher request was first seen.
    asked_at: Mutex<Option<Instant>>,
}

impl LockedKernel {
    /// Whether a higher priority has asked for this device. A probe that fails (the lock
    /// directory vanished) is logged and read as "no": the device is ours until we are done.
    fn should_yield(&self) -> bool {
        match self.probe.anyone_waiting() {
            Ok(true) => {
                lock(&self.asked_at).get_or_insert_with(Instant::now);
                true
            }
            Ok(false) => false,
            Err(e) => {
                log::warn!("gpu: cannot probe {}: {e}", self.device.id);
                false
            }
        }
    }
}

/// Counters of one claim, shared by its threads.
#[derive(Debug, Default)]
struct Stats {
    gpu_chunks: BTreeMap<String, u64>,
    cpu_chunks: u64,
    total_chunks: u64,
    fft_on_gpu: bool,
    preemptions: u64,
    returns_to_gpu: u64,
    wait: Duration,
    handover: Option<Duration>,
    yield_latency: Option<Duration>,
    live_at_release: u64,
    failures: u64,
}

/// State the CPU side and the GPU workers both change.
#[derive(Debug, Default)]
struct Shared {
    stats: Stats,
    /// Devices that failed during this proof: not taken again.
    failed: HashSet<String>,
    /// Devices with a running worker.
    in_use: HashSet<String>,
    /// Flags raised on devices held by lower priorities, with when they were raised.
    asking: HashMap<String, (PriorityFlag, Instant)>,
    /// Whether this prover lost a device (a later take is a return).
    lost: bool,
}

/// One proof's use of the GPUs.
pub struct GpuClaim {
    dir: PathBuf,
    priority: Priority,
    devices: Vec<&'static GpuDevice>,
    /// Devices held between multiexps.
    held: Vec<LockedKernel>,
    shared: Mutex<Shared>,
    /// Whether the thread that made the claim may wait for a hand-over.
    may_wait: bool,
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
        let dir = locks::lock_dir();
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
        let mut claim = GpuClaim {
            dir,
            priority,
            devices,
            held: Vec::new(),
            shared: Mutex::new(Shared::default()),
            may_wait,
        };
        claim.start();
        Some(claim)
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        // A worker that panicked cannot leave the counters half-updated in a harmful way.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the free devices, and if none, waits for a lower priority's hand-over.
    fn start(&mut self) {
        let taken = self.try_take();
        self.held.extend(taken);
        if !self.held.is_empty() || !self.may_wait || self.shared().asking.is_empty() {
            return;
        }
        let start = Instant::now();
        while start.elapsed() < MAX_START_WAIT {
            std::thread::sleep(WAIT_STEP);
            let taken = self.try_take();
            if !taken.is_empty() {
                self.held.extend(taken);
                break;
            }
            if self.shared().asking.is_empty() {
                break;
            }
        }
        let waited = start.elapsed();
        self.shared().stats.wait += waited;
        if self.held.is_empty() {
            log::info!(
                "gpu: {} prover waited {waited:.2?} for a device; starting on the CPU",
                self.priority
            );
        }
    }

    /// Takes every device that is free, not in use by this claim, not failed and not wanted by a
    /// higher priority; raises this prover's flag on devices that lower priorities hold.
    fn try_take(&self) -> Vec<LockedKernel> {
        let mut taken = Vec::new();
        for &device in &self.devices {
            {
                let s = self.shared();
                if s.failed.contains(&device.id)
                    || s.in_use.contains(&device.id)
                    || self.held.iter().any(|k| k.device.id == device.id)
                {
                    continue;
                }
            }
            match GpuLock::try_acquire(&self.dir, &device.id, self.priority) {
                Ok(Some(lock)) => match self.admit(device, lock) {
                    Ok(Some(k)) => taken.push(k),
                    Ok(None) => {}
                    Err(e) => self.give_up(device, &e.to_string()),
                },
                Ok(None) => self.ask_lower_holder(device),
                Err(e) => self.give_up(device, &e.to_string()),
            }
        }
        taken
    }

    /// Keeps a just-acquired lock unless a higher priority wants the device.
    fn admit(
        &self,
        device: &'static GpuDevice,
        lock: GpuLock,
    ) -> Result<Option<LockedKernel>, locks::LockError> {
        let probe = HigherPriorityProbe::open(&self.dir, &device.id, self.priority)?;
        if probe.anyone_waiting()? {
            return Ok(None);
        }
        let flag = PriorityFlag::raise(&self.dir, &device.id, self.priority).ok();
        let mut s = self.shared();
        if let Some((_, asked)) = s.asking.remove(&device.id) {
            let took = asked.elapsed();
            s.stats.handover = max_opt(s.stats.handover, took);
            log::info!(
                "gpu: {} prover got {} {took:.2?} after asking for it",
                self.priority,
                device.id
            );
        }
        if s.lost {
            s.stats.returns_to_gpu += 1;
            log::info!("gpu: {} prover back on {}", self.priority, device.id);
        }
        Ok(Some(LockedKernel {
            device,
            lock,
            probe,
            _flag: flag,
            asked_at: Mutex::new(None),
        }))
    }

    /// A device held by someone: if a lower priority, raise our flag on it (once).
    fn ask_lower_holder(&self, device: &GpuDevice) {
        let lower =
            locks::holder_text(&self.dir, &device.id).is_some_and(|h| h.priority < self.priority);
        let mut s = self.shared();
        if !lower {
            // Held at our level or above (or between holders): do not wait on it.
            s.asking.remove(&device.id);
            return;
        }
        if s.asking.contains_key(&device.id) {
            return;
        }
        match PriorityFlag::raise(&self.dir, &device.id, self.priority) {
            Ok(flag) => {
                s.asking.insert(device.id.clone(), (flag, Instant::now()));
            }
            Err(e) => log::warn!("gpu: cannot ask for {}: {e}", device.id),
        }
    }

    fn give_up(&self, device: &GpuDevice, why: &str) {
        log::warn!(
            "gpu: {} unusable for this proof ({why}); its work goes to the CPU",
            device.id
        );
        self.shared().failed.insert(device.id.clone());
    }

    /// Releases a device; `preempted` when a higher priority asked for it.
    fn release(&self, k: LockedKernel, preempted: bool) {
        let live = k.device.live_device_bytes();
        let held = k.lock.held_for();
        let asked = *lock(&k.asked_at);
        let id = k.device.id.clone();
        drop(k);
        let mut s = self.shared();
        s.stats.live_at_release = s.stats.live_at_release.max(live);
        if preempted {
            s.stats.preemptions += 1;
            s.lost = true;
            let latency = asked.map_or(Duration::ZERO, |a| a.elapsed());
            s.stats.yield_latency = max_opt(s.stats.yield_latency, latency);
            log::info!(
                "gpu: {} prover yielded {id} {latency:.2?} after the request (held {held:.2?}, \
                 {live} device bytes left); going on on the CPU",
                self.priority
            );
        }
    }

    /// Marks a device failed and releases it; the work goes to the CPU.
    fn fail(&self, k: LockedKernel, e: &GpuError) {
        log::warn!(
            "gpu: {} failed ({e}); its work goes to the CPU",
            k.device.id
        );
        {
            let mut s = self.shared();
            s.stats.failures += 1;
            s.failed.insert(k.device.id.clone());
        }
        self.release(k, false);
    }

    /// `sum_i scalars[i] * bases[i]` in chunks of `chunk_terms` over the held devices and the
    /// CPU. The lengths must match (the caller checks).
    pub(crate) fn multiexp<G: GpuCurve>(
        &mut self,
        bases: &[G],
        scalars: &[ScalarRepr],
        chunk_terms: usize,
    ) -> G::Curve {
        let n = bases.len().min(scalars.len());
        let (bases, scalars) = (&bases[..n], &scalars[..n]);
        let chunk = chunk_terms.max(1);
        if n < MIN_GPU_TERMS {
            let mut s = self.shared();
            s.stats.cpu_chunks += 1;
            s.stats.total_chunks += 1;
            drop(s);
            return cpu_part(bases, scalars, 0..n);
        }
        let queue: Mutex<VecDeque<Range<usize>>> = Mutex::new(
            (0..n)
                .step_by(chunk)
                .map(|s| s..(s + chunk).min(n))
                .collect(),
        );
        self.shared().stats.total_chunks += queue_len(&queue) as u64;
        let sum = Mutex::new(G::Curve::identity());
        let held = std::mem::take(&mut self.held);
        let this = &*self;
        let kept: Vec<LockedKernel> = std::thread::scope(|scope| {
            let mut workers = Vec::new();
            let mut spawn = |k: LockedKernel| {
                this.shared().in_use.insert(k.device.id.clone());
                let (queue, sum) = (&queue, &sum);
                workers.push(scope.spawn(move || this.gpu_worker(k, queue, sum, bases, scalars)));
            };
            for k in held {
                spawn(k);
            }
            loop {
                for k in this.try_take() {
                    spawn(k);
                }
                let Some(range) = lock(&queue).pop_back() else {
                    break;
                };
                let part = cpu_part(bases, scalars, range);
                *lock(&sum) += part;
                this.shared().stats.cpu_chunks += 1;
            }
            workers
                .into_iter()
                .filter_map(|w| w.join().ok().flatten())
                .collect()
        });
        self.held = kept;
        sum.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes chunks from the front until the queue is empty (keeps the device) or a higher
    /// priority asks or the device fails (releases it).
    fn gpu_worker<G: GpuCurve>(
        &self,
        k: LockedKernel,
        queue: &Mutex<VecDeque<Range<usize>>>,
        sum: &Mutex<G::Curve>,
        bases: &[G],
        scalars: &[ScalarRepr],
    ) -> Option<LockedKernel> {
        let done = |k: &LockedKernel| {
            self.shared().in_use.remove(&k.device.id);
        };
        loop {
            if k.should_yield() {
                done(&k);
                self.release(k, true);
                return None;
            }
            let Some(range) = lock(queue).pop_front() else {
                done(&k);
                return Some(k);
            };
            let result = k
                .device
                .multiexp(&bases[range.clone()], &scalars[range.clone()], &|| {
                    k.should_yield()
                });
            match result {
                Ok(part) => {
                    *lock(sum) += part;
                    *self
                        .shared()
                        .stats
                        .gpu_chunks
                        .entry(k.device.id.clone())
                        .or_default() += 1;
                }
                Err(e) => {
                    lock(queue).push_front(range);
                    done(&k);
                    if matches!(e, GpuError::Interrupted) {
                        self.release(k, true);
                    } else {
                        self.fail(k, &e);
                    }
                    return None;
                }
            }
        }
    }

    /// The prover's quotient on a held (or newly taken) device; `None` means "compute it on the
    /// CPU" (no device, small, preempted, or failed).
    pub(crate) fn quotient(
        &mut self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Option<Vec<Scalar>> {
        if a.len().next_power_of_two() < MIN_GPU_FFT {
            return None;
        }
        if self.held.is_empty() {
            let taken = self.try_take();
            self.held.extend(taken);
        }
        if self.held.is_empty() {
            return None;
        }
        let k = self.held.remove(0);
        if k.should_yield() {
            self.release(k, true);
            return None;
        }
        match k.device.quotient(a, b, c, &|| k.should_yield()) {
            Ok(h) => {
                self.shared().stats.fft_on_gpu = true;
                self.held.insert(0, k);
                Some(h)
            }
            Err(GpuError::Interrupted) => {
                self.release(k, true);
                None
            }
            Err(e) => {
                self.fail(k, &e);
                None
            }
        }
    }

    /// Releases every device and writes the counters into `report`.
    pub(crate) fn finish(mut self, report: &mut ProofReport) {
        for k in std::mem::take(&mut self.held) {
            self.release(k, false);
        }
        let s = std::mem::take(&mut self.shared().stats);
        report.gpu_chunks = s.gpu_chunks.into_iter().collect();
        report.cpu_chunks += s.cpu_chunks;
        report.total_chunks += s.total_chunks;
        report.fft_on_gpu = s.fft_on_gpu;
        report.preemptions = s.preemptions;
        report.returns_to_gpu = s.returns_to_gpu;
        report.wait = s.wait;
        report.handover = s.handover;
        report.yield_latency = s.yield_latency;
        report.live_device_bytes_at_release = s.live_at_release;
        report.gpu_failures = s.failures;
    }
}

impl Drop for GpuClaim {
    fn drop(&mut self) {
        CLAIMS_ON_THREAD.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn queue_len(q: &Mutex<VecDeque<Range<usize>>>) -> usize {
    lock(q).len()
}

/// One chunk on the CPU; the lengths were checked by the caller.
fn cpu_part<G: GpuCurve>(bases: &[G], scalars: &[ScalarRepr], range: Range<usize>) -> G::Curve {
    multiexp(&bases[range.clone()], &scalars[range]).unwrap_or_else(|_| G::Curve::identity())
}
