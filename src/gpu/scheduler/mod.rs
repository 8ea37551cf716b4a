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

use super::backend::{self, GpuDevice, MIN_GPU_FFT, MIN_GPU_TERMS};
use super::error::GpuError;
use super::locks::{self, GpuLock, HigherPriorityProbe, PriorityFlag};
use super::multiexp::GpuCurve;
use crate::domain::QuotientSteps;
use crate::groth16::{Priority, ProofReport};
use crate::multicore::Pool;
use crate::multiexp::ScalarRepr;
use blstrs::Scalar;
use group::Group;
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

mod cpu_share;
pub(crate) use cpu_share::cpu_pool;
use cpu_share::{cpu_chunk, cpu_part, cpu_takes, give_up_cpu_chunk};

/// How long a prover waits at its start for a lower priority to hand a device over before it
/// starts on the CPU (and keeps asking between chunks).
const MAX_START_WAIT: Duration = Duration::from_secs(10);
/// Sleep between tries while waiting for a hand-over: from the first to the last, doubling. A
/// try costs a few system calls; at 4 ms a waiting prover uses about 1-2% of a core, and the
/// hand-over gains at most 4 ms.
const WAIT_STEPS: (Duration, Duration) = (Duration::from_millis(1), Duration::from_millis(4));

thread_local! {
    /// Claims alive on this thread: a proof started inside another proof's thread must not wait
    /// for a device that the outer proof (blocked on it) would have to give up.
    static CLAIMS_ON_THREAD: Cell<usize> = const { Cell::new(0) };
}

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

/// A device this prover holds: the lock, and the probe for higher requests.
pub struct LockedKernel {
    device: &'static GpuDevice,
    lock: GpuLock,
    probe: HigherPriorityProbe,
    /// Our own flag, raised while we hold the device, for the status view.
    _flag: Option<PriorityFlag>,
    /// When a higher request was first seen.
    asked_at: Mutex<Option<Instant>>,
    /// The last probe, and the longest time between two probes while held: a request waits for
    /// up to that long before the holder sees it (logged at release, to find stretches of work
    /// that ask too rarely).
    probes: Mutex<(Instant, Duration)>,
}

impl LockedKernel {
    /// Whether a higher priority has asked for this device. A probe that fails (the lock
    /// directory vanished) is logged and read as "no": the device is ours until we are done.
    fn should_yield(&self) -> bool {
        {
            let mut probes = lock(&self.probes);
            let now = Instant::now();
            let gap = now - probes.0;
            if gap > LONG_PROBE_GAP {
                // With the phase logs around it, says which stretch of work asked too rarely.
                log::debug!("gpu: {gap:.2?} without a probe on {}", self.device.id);
            }
            probes.1 = probes.1.max(gap);
            probes.0 = now;
        }
        if !self.lock.is_current() {
            log::warn!(
                "gpu: the lock file of {} was deleted or replaced; giving the device up",
                self.device.id
            );
            lock(&self.asked_at).get_or_insert_with(Instant::now);
            return true;
        }
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
    cpu_chunks_without_retry: u64,
    wait: Duration,
    handover: Option<Duration>,
    yield_latency: Option<Duration>,
    live_at_release: u64,
    peak_device: u64,
    failures: u64,
    out_of_memory: u64,
    kept_chunks: u64,
    cpu_chunks_given_up: u64,
    device_work_lost: Duration,
    pieces_finished_on_request: u64,
}

/// State the CPU side and the GPU workers both change.
#[derive(Debug, Default)]
struct Shared {
    stats: Stats,
    /// Devices that failed during this proof: not taken again.
    failed: HashSet<String>,
    /// Devices this claim holds (idle or in a worker's hands).
    holding: HashSet<String>,
    /// Flags raised on devices held by lower priorities, with when they were raised.
    asking: HashMap<String, (PriorityFlag, Instant)>,
    /// Whether this prover lost a device (a later take is a return).
    lost: bool,
    /// The most chunks per call after a device ran out of memory, per device and group.
    batch_cap: HashMap<(String, &'static str), usize>,
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

/// Device time one multiexp call of a GPU worker aims at (the chunks it takes at once). A call
/// pays a fixed part (the count's round trip, the weighing: about 10 ms on the H200), and its
/// first piece waits for its inputs' upload with the device idle (14-50 ms of each call of a
/// 2^24 proof on the H200, seventeenth session: the later pieces' uploads overlap the sums), so
/// long calls make a faster proof: a 2^24 proof alone took 18.4 s with 160 ms and 31.6 s with
/// 40 ms (sixth session). A request does not wait for a whole call: its launches are waited for
/// one by one, probing (see `GpuCurve::LAUNCH_ENTRIES`), and a call stopped by it keeps the
/// pieces it finished, so what a preemption costs is the piece in progress, whatever the call's
/// length. Shorter calls after a preemption (40 ms for 30 s) were tried, before calls went in
/// pieces: a low prover preempted every second or two then ran at the short calls' speed
/// throughout, and lost 2.2x (2^20) and 4.1x (2^24) the time the high proofs held the device.
/// With several devices a call takes at most its even share of the work left ([`call_chunks`]),
/// so that one device does not take the whole multiexp while the others wait.
const TARGET_BATCH: Duration = Duration::from_millis(640);

/// What the process learned about its devices and its CPU, kept across claims: a device's speed
/// is not a property of one proof.
#[derive(Debug, Default)]
struct Learned {
    /// Chunks per call last fitted to [`TARGET_BATCH`], per device and group: a claim that
    /// started again from one chunk paid a call's fixed costs (about 15 ms on the H200, most of a
    /// 2^15-term call) per chunk for its whole first multiexp.
    batches: HashMap<(String, &'static str), usize>,
    /// Terms per second of each device, per device and group (transfers included), as
    /// [`learn_gpu_rate`] learns it from the device's runs, and when it was last set or raised.
    gpu_rate: HashMap<(String, &'static str), (f64, Instant)>,
    /// Terms per second of the CPU's last chunk, per group and pool, and when it was measured.
    /// Measured afresh in each proof, the CPU took a chunk of every multiexp to time itself, and
    /// the device, done with the rest, waited for it: 55 of a 2^20 proof's 100 ms of H query and
    /// 75 of a 2^16 proof's 90 ms of B query in G2 (H200, ninth session). A rate older than
    /// [`CPU_RATE_LIFE`] is not used: one measured on a busy host would otherwise keep the CPU
    /// from ever taking (and timing) a chunk beside a device again.
    cpu_rate: HashMap<(&'static str, Pool), (f64, Instant)>,
}

/// How long a measured CPU rate is used ([`Learned::cpu_rate`]).
const CPU_RATE_LIFE: Duration = Duration::from_secs(60);

fn learned() -> MutexGuard<'static, Learned> {
    static LEARNED: std::sync::OnceLock<Mutex<Learned>> = std::sync::OnceLock::new();
    lock(LEARNED.get_or_init(Default::default))
}

/// Sleep of the CPU side while the devices finish the last chunks (it also tries to take
/// devices each time).
const CPU_IDLE_STEP: Duration = Duration::from_millis(1);

/// A time between two probes of a held device worth a debug line: a request waits that long.
const LONG_PROBE_GAP: Duration = Duration::from_millis(50);

/// How often the watcher probes idle devices.
const WATCH_STEP: Duration = Duration::from_millis(2);

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

    /// Releases every device and writes the counters into `report`.
    pub(crate) fn finish(mut self, report: &mut ProofReport) {
        self.stop_watcher();
        self.inner.finish(report);
    }

    fn stop_watcher(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

impl ClaimInner {
    /// Until stopped: releases idle devices that a higher priority asks for.
    fn watch(&self) {
        while !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep(WATCH_STEP);
            let mut idle = lock(&self.idle);
            let mut i = 0;
            while i < idle.len() {
                if idle[i].should_yield() {
                    let k = idle.swap_remove(i);
                    self.release(k, true);
                } else {
                    i += 1;
                }
            }
        }
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        // A worker that panicked cannot leave the counters half-updated in a harmful way.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the free devices, and if none, waits for a lower priority's hand-over.
    fn start(&self) {
        let taken = self.try_take();
        let got = !taken.is_empty();
        lock(&self.idle).extend(taken);
        if got || !self.may_wait || self.shared().asking.is_empty() {
            return;
        }
        let start = Instant::now();
        let mut got = false;
        let mut step = WAIT_STEPS.0;
        while start.elapsed() < MAX_START_WAIT {
            std::thread::sleep(step);
            step = (step * 2).min(WAIT_STEPS.1);
            let taken = self.try_take();
            if !taken.is_empty() {
                lock(&self.idle).extend(taken);
                got = true;
                break;
            }
            if self.shared().asking.is_empty() {
                break;
            }
        }
        let waited = start.elapsed();
        self.shared().stats.wait += waited;
        if !got {
            log::info!(
                "gpu: {} prover waited {waited:.2?} for a device; starting on the CPU",
                self.priority
            );
        }
    }

    /// Takes every device that is free, not in use by this claim, not failed and not wanted by a
    /// higher priority. Only when this prover then holds no device at all does it raise its flag
    /// on devices that lower priorities hold: a free device is taken before anyone is preempted.
    fn try_take(&self) -> Vec<LockedKernel> {
        let mut taken = Vec::new();
        let mut busy = Vec::new();
        for &device in &self.devices {
            {
                let s = self.shared();
                if s.failed.contains(&device.id) || s.holding.contains(&device.id) {
                    continue;
                }
            }
            match GpuLock::try_acquire(&self.dir, &device.id, self.priority) {
                Ok(Some(lock)) => match self.admit(device, lock) {
                    Ok(Some(k)) => taken.push(k),
                    Ok(None) => {}
                    Err(e) => self.give_up(device, &e.to_string()),
                },
                Ok(None) => busy.push(device),
                Err(e) => self.give_up(device, &e.to_string()),
            }
        }
        if self.shared().holding.is_empty() {
            for device in busy {
                self.ask_lower_holder(device);
            }
        } else {
            self.shared().asking.clear();
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
        // The peak counts from here: what this claim's work holds on the device.
        device.take_peak_device_bytes();
        let mut s = self.shared();
        s.holding.insert(device.id.clone());
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
            probes: Mutex::new((Instant::now(), Duration::ZERO)),
        }))
    }

    /// A device held by someone: if a lower priority, raise our flag on it (once).
    fn ask_lower_holder(&self, device: &GpuDevice) {
        let holder = locks::holder_text(&self.dir, &device.id);
        let mut s = self.shared();
        match holder {
            Some(h) if h.priority < self.priority => {}
            Some(_) => {
                // Held at our level or above: do not wait on it.
                s.asking.remove(&device.id);
                return;
            }
            // Between two holders (or the text not yet written): keep whatever we had.
            None => return,
        }
        if s.asking.contains_key(&device.id) {
            return;
        }
        match PriorityFlag::raise(&self.dir, &device.id, self.priority) {
            Ok(flag) => {
                log::debug!(
                    "gpu: {} prover asks for {} held by a lower priority",
                    self.priority,
                    device.id
                );
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
        let peak = k.device.take_peak_device_bytes();
        let held = k.lock.held_for();
        let asked = *lock(&k.asked_at);
        let longest_gap = lock(&k.probes).1;
        let id = k.device.id.clone();
        drop(k);
        let mut s = self.shared();
        s.holding.remove(&id);
        s.stats.live_at_release = s.stats.live_at_release.max(live);
        s.stats.peak_device = s.stats.peak_device.max(peak);
        if preempted {
            s.stats.preemptions += 1;
            s.lost = true;
            let latency = asked.map_or(Duration::ZERO, |a| a.elapsed());
            s.stats.yield_latency = max_opt(s.stats.yield_latency, latency);
            log::info!(
                "gpu: {} prover yielded {id} {latency:.2?} after the request (held {held:.2?}, \
                 {live} device bytes left, at most {longest_gap:.2?} between probes); going on on \
                 the CPU",
                self.priority
            );
        } else {
            log::debug!(
                "gpu: {} prover released {id} (held {held:.2?}, at most {longest_gap:.2?} between \
                 probes)",
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
    fn multiexp<G: GpuCurve>(
        &self,
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
            return cpu_part(bases, scalars, 0..n, cpu_pool(self.priority, false));
        }
        let queue: Mutex<VecDeque<Range<usize>>> = Mutex::new(
            (0..n)
                .step_by(chunk)
                .map(|s| s..(s + chunk).min(n))
                .collect(),
        );
        self.shared().stats.total_chunks += queue_len(&queue) as u64;
        let sum = Mutex::new(G::Curve::identity());
        let flight = Flight::default();
        let held = std::mem::take(&mut *lock(&self.idle));
        let this = self;
        let kept: Vec<LockedKernel> = std::thread::scope(|scope| {
            let (queue_ref, sum_ref, flight_ref) = (&queue, &sum, &flight);
            let spawn = |k: LockedKernel| {
                scope.spawn(move || {
                    this.gpu_worker(k, queue_ref, flight_ref, sum_ref, bases, scalars)
                })
            };
            let mut workers: Vec<_> = held.into_iter().map(spawn).collect();
            // Free devices, and, while chunks are queued, the devices parked by their workers
            // when the queue was empty (for chunks another device's stopped call put back since).
            let take_devices = || {
                let mut fresh = this.try_take();
                if queue_len(&queue) > 0 {
                    fresh.extend(std::mem::take(&mut *lock(&this.idle)));
                }
                fresh
            };
            loop {
                workers.extend(take_devices().into_iter().map(spawn));
                let running = workers.iter().filter(|w| !w.is_finished()).count();
                let pool = cpu_pool(this.priority, running > 0);
                let rates = this.rates(G::NAME, pool);
                let next = {
                    let mut q = lock(&queue);
                    // An empty queue ends the loop only when no worker runs: a worker whose run
                    // is preempted puts its chunks back, and with calls of `TARGET_BATCH` one run
                    // is often the whole multiexp. Those chunks are then this loop's, one at a
                    // time with a try for the devices between them, so the prover returns to a
                    // device at the next chunk boundary (they went to the CPU all at once
                    // before, after the loop: 1.5-2 s before a 2^20 prover returned on the
                    // H200, seventh session).
                    if q.is_empty() {
                        if running == 0 {
                            break;
                        }
                        None
                    } else if cpu_takes(&q, running, rates) {
                        q.pop_back().map(|range| (range, pool))
                    } else {
                        None
                    }
                };
                match next {
                    Some((range, pool)) => {
                        let started = Instant::now();
                        let terms = range.len();
                        // Tries for the devices every `RETURN_STEP` while the chunk is computed
                        // (on the H200 the device stood free 20-45 ms after each high proof
                        // while a low one's CPU chunk went on, at 2^24), and gives the chunk
                        // up when the devices it then holds would finish it, and the queue,
                        // before the CPU would.
                        let given_up_at = std::cell::Cell::new(None);
                        let part = cpu_chunk(
                            bases,
                            scalars,
                            range.clone(),
                            pool,
                            |elapsed| {
                                if queue_len(&queue) > 0 {
                                    workers.extend(take_devices().into_iter().map(spawn));
                                }
                                let held = workers.iter().filter(|w| !w.is_finished()).count()
                                    + lock(&this.idle).len();
                                let queued = lock(&queue).iter().map(|r| r.len()).sum::<usize>();
                                let rates = this.rates(G::NAME, pool);
                                give_up_cpu_chunk(queued, terms, elapsed, held, rates)
                            },
                            || {
                                lock(&queue).push_back(range.clone());
                                given_up_at.set(Some(Instant::now()));
                            },
                        );
                        let mut s = this.shared();
                        let Some(part) = part else {
                            s.stats.cpu_chunks_given_up += 1;
                            drop(s);
                            log::debug!(
                                "gpu: a CPU chunk of {terms} terms given up after {:.1} ms: a \
                                 device came back (its thread stopped after {:.1} ms)",
                                given_up_at
                                    .get()
                                    .unwrap_or(started)
                                    .duration_since(started)
                                    .as_secs_f64()
                                    * 1e3,
                                started.elapsed().as_secs_f64() * 1e3
                            );
                            continue;
                        };
                        *lock(&sum) += part;
                        s.stats.cpu_chunks += 1;
                        if running == 0 {
                            // Computed with no device of ours, right after a try for one.
                            let most = &mut s.stats.cpu_chunks_without_retry;
                            *most = (*most).max(1);
                        }
                        drop(s);
                        let seconds = started.elapsed().as_secs_f64();
                        if seconds > 0.0 {
                            learned()
                                .cpu_rate
                                .insert((G::NAME, pool), (terms as f64 / seconds, Instant::now()));
                        }
                    }
                    None => std::thread::sleep(CPU_IDLE_STEP),
                }
            }
            workers
                .into_iter()
                .filter_map(|w| w.join().ok().flatten())
                .collect()
        });
        lock(&self.idle).extend(kept);
        // The loop above ends only when the queue is empty and no worker was running, and a
        // worker puts chunks back before it ends, so nothing should be left; whatever is (a
        // worker that panicked after putting chunks back) is computed here, so that every chunk
        // is in the sum exactly once.
        let mut untried = 0;
        loop {
            let Some(range) = lock(&queue).pop_back() else {
                break;
            };
            let part = cpu_part(bases, scalars, range, cpu_pool(self.priority, false));
            *lock(&sum) += part;
            untried += 1;
            self.shared().stats.cpu_chunks += 1;
        }
        let mut s = self.shared();
        s.stats.cpu_chunks_without_retry = s.stats.cpu_chunks_without_retry.max(untried);
        sum.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// The measured speeds for `group`, in terms per second: the fastest of this claim's devices
    /// and the CPU on `pool` (`None` until each has run once in this process, and for the CPU
    /// again once its rate is older than [`CPU_RATE_LIFE`]).
    fn rates(&self, group: &'static str, pool: Pool) -> (Option<f64>, Option<f64>) {
        let learned = learned();
        let device = self
            .devices
            .iter()
            .filter_map(|d| {
                learned
                    .gpu_rate
                    .get(&(d.id.clone(), group))
                    .map(|(r, _)| *r)
            })
            .reduce(f64::max);
        let cpu = learned
            .cpu_rate
            .get(&(group, pool))
            .filter(|(_, at)| at.elapsed() < CPU_RATE_LIFE)
            .map(|(rate, _)| *rate);
        (device, cpu)
    }

    /// Takes chunks from the front until the queue is empty (keeps the device) or a higher
    /// priority asks or the device fails (releases it). A device takes a run of adjacent chunks
    /// per multiexp call, as many as it computes in about [`TARGET_BATCH`] (measured on its
    /// previous run), but no more than its even share of the work left among the multiexp's
    /// workers ([`call_chunks`]): chunks stay small for the CPU's share and for the accounting, while a fast
    /// device is not slowed by a launch per small chunk. A preempted or failed run puts all its
    /// chunks back.
    fn gpu_worker<G: GpuCurve>(
        &self,
        k: LockedKernel,
        queue: &Mutex<VecDeque<Range<usize>>>,
        flight: &Flight,
        sum: &Mutex<G::Curve>,
        bases: &[G],
        scalars: &[ScalarRepr],
    ) -> Option<LockedKernel> {
        let _member = flight.join();
        let key = (k.device.id.clone(), G::NAME);
        let cap = self.shared().batch_cap.get(&key).copied();
        let mut batch = learned()
            .batches
            .get(&key)
            .copied()
            .unwrap_or(1)
            .min(cap.unwrap_or(usize::MAX));
        loop {
            if k.should_yield() {
                self.release(k, true);
                return None;
            }
            let run: Vec<Range<usize>> = {
                let mut q = lock(queue);
                let floor = q
                    .front()
                    .map_or(1, |c| (G::PIECE_TERMS / c.len().max(1)).max(1));
                let take = call_chunks(
                    batch,
                    q.len(),
                    flight.chunks.load(Ordering::Relaxed),
                    flight.workers.load(Ordering::Relaxed),
                    floor,
                );
                let mut run: Vec<Range<usize>> = Vec::with_capacity(take);
                while run.len() < take {
                    match q.front() {
                        Some(next) if run.last().map_or(true, |last| last.end == next.start) => {
                            run.extend(q.pop_front());
                        }
                        _ => break,
                    }
                }
                flight.chunks.fetch_add(run.len(), Ordering::Relaxed);
                run
            };
            let (Some(first), Some(last)) = (run.first(), run.last()) else {
                // Parked with the idle devices at once, where the watcher probes it: handed
                // back through the thread's end, it went unprobed until the multiexp's loop
                // ended, which waits for the CPU's chunk in progress (183 ms once, at 2^24 on
                // the H200, which a high prover waited out).
                lock(&self.idle).push(k);
                return None;
            };
            let range = first.start..last.end;
            let ends: Vec<usize> = run.iter().map(|c| c.end - range.start).collect();
            let started = Instant::now();
            let result = k.device.multiexp(
                &bases[range.clone()],
                &scalars[range.clone()],
                &ends,
                &|| k.should_yield(),
            );
            flight.chunks.fetch_sub(run.len(), Ordering::Relaxed);
            // The chunks of the pieces the device finished are in the sum, whatever stopped it
            // after them.
            let kept = result.done.min(run.len());
            if result.finished_on_request > 0 {
                self.shared().stats.pieces_finished_on_request += result.finished_on_request as u64;
            }
            if kept > 0 {
                *lock(sum) += result.sum;
                *self
                    .shared()
                    .stats
                    .gpu_chunks
                    .entry(k.device.id.clone())
                    .or_default() += kept as u64;
            }
            // A call that did not stop did every piece.
            debug_assert!(result.stopped.is_some() || kept == run.len());
            let Some(e) = result.stopped else {
                log::debug!(
                    "gpu: {} computed {} chunk(s), {} terms, in {:.2?}",
                    k.device.id,
                    run.len(),
                    range.len(),
                    started.elapsed()
                );
                let elapsed = started.elapsed();
                if !elapsed.is_zero() {
                    let mut learned = learned();
                    let previous = learned.gpu_rate.get(&key).copied();
                    let rate = learn_gpu_rate(previous, range.len(), elapsed, Instant::now());
                    learned.gpu_rate.insert(key.clone(), rate);
                }
                let cap = self.shared().batch_cap.get(&key).copied();
                batch = next_batch(batch, run.len(), elapsed, cap, TARGET_BATCH);
                learned().batches.insert(key.clone(), batch);
                continue;
            };
            // The device's work on the pieces it did not finish is thrown away (their upload
            // included): part of what a preemption costs the prover beside the time it waits.
            let lost = result.finished_at.unwrap_or(started).elapsed();
            let mut s = self.shared();
            s.stats.device_work_lost += lost;
            s.stats.kept_chunks += kept as u64;
            drop(s);
            if kept > 0 {
                log::info!(
                    "gpu: {} kept {kept} of {} chunk(s) of a call that stopped ({e})",
                    k.device.id,
                    run.len()
                );
            }
            let left = run.len() - kept;
            let mut q = lock(queue);
            for chunk in run.into_iter().skip(kept).rev() {
                q.push_front(chunk);
            }
            drop(q);
            if matches!(e, GpuError::OutOfMemory(_)) {
                let mut s = self.shared();
                s.stats.out_of_memory += 1;
                if left > 1 {
                    // Fewer chunks at once, for the rest of this claim (a cap only ever comes
                    // down).
                    batch = left / 2;
                    let cap = s.batch_cap.entry(key.clone()).or_insert(batch);
                    *cap = (*cap).min(batch);
                    learned().batches.insert(key.clone(), batch);
                    drop(s);
                    log::info!(
                        "gpu: {} ran out of memory on {left} chunks ({e}); taking {batch}",
                        k.device.id
                    );
                    continue;
                }
            }
            if matches!(e, GpuError::Interrupted) {
                self.release(k, true);
            } else {
                self.fail(k, &e);
            }
            return None;
        }
    }

    /// The prover's quotient on a held (or newly taken) device, or why not.
    fn quotient(&self, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> QuotientOnGpu {
        if a.len().next_power_of_two() < MIN_GPU_FFT {
            return QuotientOnGpu::NotThere;
        }
        let started = Instant::now();
        let result = self.on_fft_device(&mut |k| k.device.quotient(a, b, c, &|| k.should_yield()));
        if matches!(result, QuotientOnGpu::Preempted) {
            self.shared().stats.device_work_lost += started.elapsed();
        }
        result
    }

    /// The quotient from the steps done in `steps`, keeping each step a device finishes.
    fn quotient_steps(&self, steps: &mut QuotientSteps) -> QuotientOnGpu {
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
            self.shared().stats.device_work_lost += since.elapsed();
        }
        result
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
        match quotient(&k) {
            Ok(h) => {
                self.shared().stats.fft_on_gpu = true;
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
                self.shared().stats.out_of_memory += 1;
                lock(&self.idle).push(k);
                QuotientOnGpu::NotThere
            }
            Err(e) => {
                self.fail(k, &e);
                QuotientOnGpu::NotThere
            }
        }
    }

    /// Releases every device and writes the counters into `report`.
    fn finish(&self, report: &mut ProofReport) {
        let held = std::mem::take(&mut *lock(&self.idle));
        for k in held {
            self.release(k, false);
        }
        let s = std::mem::take(&mut self.shared().stats);
        report.gpu_chunks = s.gpu_chunks.into_iter().collect();
        report.cpu_chunks += s.cpu_chunks;
        report.total_chunks += s.total_chunks;
        report.fft_on_gpu = s.fft_on_gpu;
        report.preemptions = s.preemptions;
        report.returns_to_gpu = s.returns_to_gpu;
        report.cpu_chunks_without_retry = s.cpu_chunks_without_retry;
        report.wait = s.wait;
        report.handover = s.handover;
        report.yield_latency = s.yield_latency;
        report.live_device_bytes_at_release = s.live_at_release;
        report.peak_device_bytes = s.peak_device;
        report.gpu_failures = s.failures;
        report.out_of_memory = s.out_of_memory;
        report.kept_chunks = s.kept_chunks;
        report.cpu_chunks_given_up = s.cpu_chunks_given_up;
        report.device_work_lost = s.device_work_lost;
        report.pieces_finished_on_request = s.pieces_finished_on_request;
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

/// The device workers of one multiexp and the chunks their calls hold: what a worker's even
/// share of the work is counted from ([`call_chunks`]).
#[derive(Debug, Default)]
struct Flight {
    workers: AtomicUsize,
    chunks: AtomicUsize,
}

impl Flight {
    /// Counts the calling worker in until the guard drops.
    fn join(&self) -> impl Drop + '_ {
        struct Member<'a>(&'a AtomicUsize);
        impl Drop for Member<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.workers.fetch_add(1, Ordering::Relaxed);
        Member(&self.workers)
    }
}

/// Chunks a worker takes for its next call: its learned `batch`, but no more than its even share
/// of the work left, the `queued` chunks and those `in_flight` in the other workers' calls,
/// among the `workers` of the multiexp (this one included), so that with several devices the
/// last calls end about together rather than one device computing a long last call while the
/// others wait; and no fewer than `floor` (a piece's worth), so that the calls do not dwindle to
/// single chunks at the end. Never zero while chunks are queued, never more than are queued.
fn call_chunks(
    batch: usize,
    queued: usize,
    in_flight: usize,
    workers: usize,
    floor: usize,
) -> usize {
    let share = (queued + in_flight).div_ceil(workers.max(1));
    batch.min(share.max(floor)).min(queued).max(1)
}

/// Chunks a device takes in its next call, after `ran` chunks took `elapsed` with `batch` asked
/// for, aiming at `target`; growing at most 8x per call, never above `cap` (set when the device
/// ran out of memory). A call costs a fixed part (transfers set up, a count read back, seven
/// launches; on the H200 most of a 2^15-term call) plus a part per term, so the chunks that fit
/// at the last call's time per chunk are too few: a call that took under half the target doubles
/// (its time at least stays under the target), and one above the target shrinks in proportion
/// (which undershoots). A short run (a multiexp's last chunks) says little about the speed: after
/// one the batch may only grow.
fn next_batch(
    batch: usize,
    ran: usize,
    elapsed: Duration,
    cap: Option<usize>,
    target: Duration,
) -> usize {
    let ran = ran.max(1);
    let per_chunk = elapsed.as_secs_f64() / ran as f64;
    let fit = (target.as_secs_f64() / per_chunk.max(1e-6)) as usize;
    let doubled = if elapsed < target / 2 { 2 * ran } else { 0 };
    let next = if ran < batch {
        fit.max(doubled).clamp(batch, 8 * batch)
    } else {
        fit.max(doubled).clamp(1, 8 * batch)
    };
    next.min(cap.unwrap_or(usize::MAX)).max(1)
}

/// A device run at least this long measures the device's speed ([`learn_gpu_rate`]).
const RATE_RUN: Duration = Duration::from_millis(40);

/// A device's speed in terms per second after a run of `terms` in `elapsed`, ending `now`, from
/// the `previous` estimate and when that was set or raised. A run shorter than [`RATE_RUN`] is
/// mostly the call's fixed costs (about 10 ms on the H200, whatever its size), so it may raise
/// the estimate but not lower it, unless the estimate is older than [`CPU_RATE_LIFE`] (a device
/// slowed since, by another user say, is then taken at its word again). Taken as it was,
/// the last short run's rate made the device look several times slower than it is: after the
/// one-chunk run that ended each 2^16 proof's B query in G2 (8191 terms in 10.3 ms), the next
/// proof's CPU took a chunk of that query (the device seemed to need 72 ms for the other seven,
/// which it did in 14 ms), and the query took 39 ms instead of about 15 (H200, fifteenth
/// session's log of a 2^16 high-priority proof).
fn learn_gpu_rate(
    previous: Option<(f64, Instant)>,
    terms: usize,
    elapsed: Duration,
    now: Instant,
) -> (f64, Instant) {
    let observed = terms as f64 / elapsed.as_secs_f64().max(1e-9);
    match previous {
        Some((rate, at))
            if elapsed < RATE_RUN
                && rate >= observed
                && now.saturating_duration_since(at) < CPU_RATE_LIFE =>
        {
            (rate, at)
        }
        _ => (observed, now),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn queue_len(q: &Mutex<VecDeque<Range<usize>>>) -> usize {
    lock(q).len()
}

#[cfg(test)]
mod tests {
    use super::{call_chunks, learn_gpu_rate, next_batch, CPU_RATE_LIFE, RATE_RUN};
    use std::time::{Duration, Instant};

    #[test]
    fn a_call_takes_its_batch_or_an_even_share_of_the_work_left() {
        // One worker: the whole batch, or what is left.
        assert_eq!(call_chunks(64, 500, 0, 1, 1), 64);
        assert_eq!(call_chunks(600, 500, 0, 1, 1), 500);
        assert_eq!(call_chunks(64, 10, 0, 1, 1), 10);
        // Two workers, the first takes half; the second, with that half in flight, takes the
        // other half (not a quarter, then an eighth, ...).
        assert_eq!(call_chunks(600, 512, 0, 2, 1), 256);
        assert_eq!(call_chunks(600, 256, 256, 2, 1), 256);
        // A piece's worth at the least, while that many are queued.
        assert_eq!(call_chunks(600, 40, 400, 2, 128), 40);
        assert_eq!(call_chunks(600, 300, 0, 4, 128), 128);
        // Never zero, never more than queued.
        assert_eq!(call_chunks(0, 5, 0, 2, 1), 1);
        assert_eq!(call_chunks(8, 1, 0, 4, 16), 1);
    }

    #[test]
    fn short_runs_raise_the_device_rate_and_long_ones_set_it() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let at = |d: Duration| t0 + d;
        // The first run sets it, long or short.
        assert_eq!(learn_gpu_rate(None, 8192, ms(8), t0), (1.024e6, t0));
        // A short run of mostly fixed costs does not lower it (nor refresh it)...
        let known = Some((4e6, t0));
        assert_eq!(learn_gpu_rate(known, 8192, ms(10), at(ms(5))), (4e6, t0));
        // ...but a faster one raises it.
        let slow = Some((1e6, t0));
        assert_eq!(
            learn_gpu_rate(slow, 65536, ms(16), at(ms(5))),
            (4.096e6, at(ms(5)))
        );
        // A long run measures the device, slower or faster.
        let later = at(ms(200));
        assert_eq!(learn_gpu_rate(known, 80_000, RATE_RUN, later), (2e6, later));
        assert_eq!(learn_gpu_rate(slow, 400_000, ms(100), later), (4e6, later));
        // An estimate older than the CPU's rate life is replaced by a short run too.
        let stale = at(CPU_RATE_LIFE + ms(1));
        assert_eq!(learn_gpu_rate(known, 8192, ms(8), stale), (1.024e6, stale));
    }

    #[test]
    fn runs_fit_the_target_time_and_respect_the_memory_cap() {
        let ms = Duration::from_millis;
        const T: Duration = Duration::from_millis(40);
        // 4 ms per chunk: ten fit in 40 ms, but growth is at most 8x per call.
        assert_eq!(next_batch(1, 1, ms(4), None, T), 8);
        assert_eq!(next_batch(8, 8, ms(32), None, T), 10);
        // A call of mostly fixed cost (15 ms for one chunk, where proportion says two fit):
        // under half the target, so it doubles, and doubles again while the calls stay short.
        assert_eq!(next_batch(1, 1, ms(15), None, T), 2);
        assert_eq!(next_batch(2, 2, ms(19), None, T), 4);
        assert_eq!(next_batch(4, 4, ms(25), None, T), 6);
        // Slow chunks: one at a time.
        assert_eq!(next_batch(4, 4, ms(400), None, T), 1);
        // A short last run does not shrink the batch.
        assert_eq!(next_batch(10, 2, ms(30), None, T), 10);
        // After running out of memory at 6 chunks the cap is 3.
        assert_eq!(next_batch(3, 3, ms(3), Some(3), T), 3);
        assert_eq!(next_batch(1, 1, ms(0), Some(3), T), 3);
    }
}
