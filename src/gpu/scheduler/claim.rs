//! The claim's devices: what a proof holds and shares with its workers and its watcher
//! ([`ClaimInner`]), taking devices (the free ones that no higher priority wants, a flag raised
//! on those lower priorities hold, the wait for their hand-over at a proof's start), giving them
//! back (to a higher priority that asks, when the claim is done, or marked failed), and the
//! watcher that releases idle devices a higher priority asks for while the prover works on the
//! CPU.

use super::{lock, LockedKernel};
use crate::gpu::backend::GpuDevice;
use crate::gpu::error::GpuError;
use crate::gpu::locks::{self, bellperson, GpuLock, HigherPriorityProbe, PriorityFlag};
use crate::options::ProofReport;
use crate::priority::Priority;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// State the CPU side and the GPU workers both change.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// This claim's part of the proof's report, counted as it goes.
    pub(super) counts: ProofReport,
    /// Devices that failed during this claim (a proof, or a batch): not taken again by it.
    pub(super) failed: HashSet<String>,
    /// Devices this claim holds (idle or in a worker's hands).
    pub(super) holding: HashSet<String>,
    /// Flags raised on devices held by lower priorities (or by holders of unknown level).
    pub(super) asking: HashMap<String, Asking>,
    /// When this prover last gave a device up to a higher priority (`None`: never; once it has,
    /// a later take is a return, logged with the time since).
    pub(super) lost_at: Option<Instant>,
    /// The most chunks per call after a device ran out of memory, per device and group.
    pub(super) batch_cap: HashMap<(String, &'static str), usize>,
    /// Devices that keep no bases for the rest of the claim: they ran out of memory with bases
    /// kept, which were freed then.
    pub(super) keep_no_bases: HashSet<String>,
}

/// A flag this prover raised on a device someone else holds.
#[derive(Debug)]
pub(super) struct Asking {
    pub(super) flag: PriorityFlag,
    /// When it was raised: the hand-over's start.
    pub(super) since: Instant,
    /// bellperson's priority lock, held while a `High` prover asks for a device that a
    /// bellperson prover holds (its normal provers yield to it).
    pub(super) bellperson: Option<locks::bellperson::PriorityRequest>,
    /// Whether the holder is a verified lower priority, worth waiting for at the proof's start
    /// (a holder whose text the kernel's lock table does not confirm may be anyone, and may
    /// never yield: the prover starts on the CPU and takes the device if it comes free).
    pub(super) worth_waiting: bool,
}

/// The state of a claim, shared with its workers and its watcher.
pub(super) struct ClaimInner {
    pub(super) dir: PathBuf,
    pub(super) priority: Priority,
    pub(super) devices: Vec<&'static GpuDevice>,
    /// Devices held and not in use by a worker (between pieces of work).
    pub(super) idle: Mutex<Vec<LockedKernel>>,
    pub(super) shared: Mutex<Shared>,
    /// Whether the thread that made the claim may wait for a hand-over.
    pub(super) may_wait: bool,
    /// For a batch's claim, the device memory its quotient needs: the held devices keep the
    /// multiexps' bases between proofs within what is left ([`GpuDevice::kept_bases_budget`]).
    /// `None`: nothing is kept.
    pub(super) keep_bases: Option<u64>,
    /// How long the CPU waits for a device before it takes a multiexp's chunks while the claim
    /// holds none ([`crate::config::CPU_WAIT_ENV`]).
    pub(super) cpu_wait: Duration,
    /// Tells the watcher to stop.
    pub(super) stop: AtomicBool,
}

pub(super) fn max_opt(a: Option<Duration>, b: Duration) -> Option<Duration> {
    Some(a.map_or(b, |a| a.max(b)))
}

impl ClaimInner {
    pub(super) fn shared(&self) -> MutexGuard<'_, Shared> {
        // A worker that panicked cannot leave the counters half-updated in a harmful way.
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Releases every device and writes the counters into `report`.
    pub(super) fn finish(&self) -> ProofReport {
        let held = std::mem::take(&mut *lock(&self.idle));
        for k in held {
            self.release(k, false);
        }
        std::mem::take(&mut self.shared().counts)
    }

    /// Whether the CPU leaves a multiexp's chunks alone for now: this prover yielded a device to
    /// a higher priority less than `cpu_wait` ago. The higher-priority proof is likely short (a
    /// deadline-bound proof of tens of milliseconds), the CPU's work beside it slows it (its
    /// synthesis and host work share the cores), and the chunks the CPU takes are mostly given
    /// up when the device comes back ([`DEFAULT_CPU_WAIT`]).
    pub(super) fn waits_for_its_device(&self) -> bool {
        !self.cpu_wait.is_zero()
            && self
                .shared()
                .lost_at
                .is_some_and(|at| at.elapsed() < self.cpu_wait)
    }

    /// The counters of the proof just done, the devices kept for the next one (a batch's claim):
    /// the device memory each held at its peak since it was taken or last counted, and the
    /// flags raised on devices others hold lowered, so that a device handed over while the
    /// next witness is synthesized is not left idle, wanted by nobody working.
    pub(super) fn proof_done(&self) -> ProofReport {
        let peak = lock(&self.idle)
            .iter()
            .map(|k| k.device.take_peak_device_bytes())
            .max()
            .unwrap_or(0);
        let mut s = self.shared();
        s.asking.clear();
        s.counts.peak_device_bytes = s.counts.peak_device_bytes.max(peak);
        std::mem::take(&mut s.counts)
    }
}

/// How long a prover that yielded its devices to a higher priority waits for one before its CPU
/// takes a multiexp's chunks, unless [`crate::config::CPU_WAIT_ENV`] says otherwise. Longer than
/// a short higher-priority proof holds the device: with a 2^20 low prover and 2^16 high proofs
/// (56-58 ms alone) on an H100, the high proofs beside the low one took 82 ms (p50) when the CPU
/// took chunks at once and 66 ms with this wait, and the low proofs lost less time after
/// synthesis (1934 against 1582 ms over 20 preemptions): the chunks a CPU takes during a short
/// hold are given up when the device comes back (docs/BENCHMARKS.md, "Preemption").
pub(crate) const DEFAULT_CPU_WAIT: Duration = Duration::from_millis(150);

/// How long a prover waits at its start for a lower priority to hand a device over before it
/// starts on the CPU (and keeps asking between chunks). Only a holder verified in the kernel's
/// lock table is waited for, so this is also the most a local user who holds a lock file and
/// writes a lower level into it can delay each proof (docs/RELIABILITY.md, "Threat model").
const MAX_START_WAIT: Duration = Duration::from_secs(10);
/// Sleep between tries while waiting for a hand-over, for its first [`FAST_WAIT`]: our provers
/// yield within a few milliseconds (one kernel launch), so the waiting prover's polling step is
/// the hand-over's grain: with steps of 1, 2, 4, 4 ... ms, hand-overs on the H200 came in 3.2,
/// 7.3, 11.4, 15.5 ms, the sleeps' sums (docs/BENCHMARKS.md).
const FAST_STEP: Duration = Duration::from_micros(250);
/// How long a waiting prover tries every [`FAST_STEP`] (about 200 tries, a few system calls
/// each).
const FAST_WAIT: Duration = Duration::from_millis(50);
/// Sleep between tries after [`FAST_WAIT`], for a holder slow to yield (bellperson's prover,
/// a lock held by hand): from the first to the last, doubling. At 4 ms a waiting prover uses
/// about 1-2% of a core.
const WAIT_STEPS: (Duration, Duration) = (Duration::from_millis(1), Duration::from_millis(4));

impl ClaimInner {
    /// Takes the free devices, and if none, waits for a lower priority's hand-over.
    pub(super) fn start(&self) {
        let taken = self.try_take();
        let got = !taken.is_empty();
        lock(&self.idle).extend(taken);
        if got || !self.may_wait || !self.worth_waiting() {
            return;
        }
        log::info!(
            "gpu: {} prover waits for a lower priority to hand a device over (at most \
             {MAX_START_WAIT:.0?})",
            self.priority
        );
        let start = Instant::now();
        let mut got = false;
        let mut step = WAIT_STEPS.0;
        while start.elapsed() < MAX_START_WAIT {
            if start.elapsed() < FAST_WAIT {
                std::thread::sleep(FAST_STEP);
            } else {
                std::thread::sleep(step);
                step = (step * 2).min(WAIT_STEPS.1);
            }
            let taken = self.try_take();
            if !taken.is_empty() {
                lock(&self.idle).extend(taken);
                got = true;
                break;
            }
            if !self.worth_waiting() {
                break;
            }
        }
        let waited = start.elapsed();
        self.shared().counts.wait += waited;
        if !got {
            log::info!(
                "gpu: {} prover waited {waited:.2?} for a device; starting on the CPU",
                self.priority
            );
        }
    }

    /// Whether a device this prover asked for is held by a verified lower priority.
    fn worth_waiting(&self) -> bool {
        self.shared().asking.values().any(|a| a.worth_waiting)
    }

    /// Takes every device that is free, not in use by this claim, not failed and not wanted by a
    /// higher priority. Only when this prover then holds no device at all does it raise its flag
    /// on devices that lower priorities hold: a free device is taken before anyone is preempted.
    pub(super) fn try_take(&self) -> Vec<LockedKernel> {
        let mut taken = Vec::new();
        let mut busy = Vec::new();
        for &device in &self.devices {
            {
                let s = self.shared();
                if s.failed.contains(&device.id) || s.holding.contains(&device.id) {
                    continue;
                }
            }
            // A device a higher priority asks for is not taken, not even to find the request
            // there: a holder for that moment would make the asker find the device busy.
            let probe = match HigherPriorityProbe::open(&self.dir, &device.id, self.priority) {
                Ok(probe) => probe,
                Err(e) => {
                    self.give_up(device, &e.to_string());
                    continue;
                }
            };
            match probe.anyone_may_be_waiting() {
                Ok(false) => {}
                Ok(true) => continue,
                Err(e) => {
                    self.give_up(device, &e.to_string());
                    continue;
                }
            }
            let acquired = GpuLock::try_acquire_sharing(
                &self.dir,
                &device.id,
                self.priority,
                self.bellperson_id(device),
            );
            match acquired {
                Ok(Some(lock)) => match self.admit(device, lock, probe) {
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

    /// Keeps a just-acquired lock unless a higher priority asked for the device since `probe`
    /// last looked.
    fn admit(
        &self,
        device: &'static GpuDevice,
        lock: GpuLock,
        probe: HigherPriorityProbe,
    ) -> Result<Option<LockedKernel>, locks::LockError> {
        if probe.anyone_waiting()? {
            return Ok(None);
        }
        let flag = PriorityFlag::raise(&self.dir, &device.id, self.priority).ok();
        // The peak counts from here: what this claim's work holds on the device.
        device.take_peak_device_bytes();
        let mut s = self.shared();
        s.holding.insert(device.id.clone());
        if let Some(asked) = s.asking.remove(&device.id) {
            let took = asked.since.elapsed();
            s.counts.handover = max_opt(s.counts.handover, took);
            log::info!(
                "gpu: {} prover got {} {took:.2?} after asking for it",
                self.priority,
                device.id
            );
        }
        if let Some(lost_at) = s.lost_at {
            s.counts.returns_to_gpu += 1;
            let off = lost_at.elapsed();
            log::info!(
                "gpu: {} prover back on {} ({off:.2?} after it last yielded a device)",
                self.priority,
                device.id
            );
        }
        Ok(Some(LockedKernel::new(device, lock, probe, flag)))
    }

    /// A device held by someone: if a lower priority or a holder of unknown level, raise our
    /// flag on it (once; again if a temp cleaner deleted the flag file).
    fn ask_lower_holder(&self, device: &GpuDevice) {
        let holder = locks::holder_text(&self.dir, &device.id);
        // A bellperson prover holding a GPU lock that covers the device is, for us, a verified
        // holder at Normal.
        let bellperson_holds = holder.is_none()
            && bellperson::holds_gpu(&bellperson::dir(), self.bellperson_id(device));
        let holder = holder.or_else(|| {
            bellperson_holds.then_some(locks::Holder {
                pid: 0,
                priority: Priority::Normal,
                since_unix_ms: 0,
                verified: true,
            })
        });
        let mut s = self.shared();
        let worth_waiting = match holder {
            // Text the lock table does not confirm may be anyone's: ask (a real lower holder
            // yields), but do not wait for it.
            Some(h) if !h.verified => false,
            Some(h) if h.priority < self.priority => true,
            Some(_) => {
                // Held at our level or above: do not wait on it.
                s.asking.remove(&device.id);
                return;
            }
            // Between two holders (or the text not yet written): keep whatever we had.
            None => return,
        };
        if let Some(asking) = s.asking.get_mut(&device.id) {
            asking.worth_waiting = worth_waiting;
            if bellperson_holds && asking.bellperson.is_none() {
                asking.bellperson = self.bellperson_request();
            }
            if let Err(e) = asking.flag.refresh() {
                log::warn!("gpu: cannot ask for {} again: {e}", device.id);
            }
            return;
        }
        match PriorityFlag::raise(&self.dir, &device.id, self.priority) {
            Ok(flag) => {
                log::debug!(
                    "gpu: {} prover asks for {} held by a lower priority{}",
                    self.priority,
                    device.id,
                    if worth_waiting {
                        ""
                    } else {
                        " or an unknown holder"
                    }
                );
                let since = Instant::now();
                let bellperson = if bellperson_holds {
                    self.bellperson_request()
                } else {
                    None
                };
                s.asking.insert(
                    device.id.clone(),
                    Asking {
                        flag,
                        since,
                        bellperson,
                        worth_waiting,
                    },
                );
            }
            Err(e) => locks::warn_once(
                &e.path.to_string_lossy(),
                &format!("gpu: cannot ask for {}: {e}", device.id),
            ),
        }
    }

    /// The id of `device`'s own bellperson lock file, shared and read beside the single one
    /// whatever this process's `BELLPERSON_GPUS_PER_LOCK` says: what matters is the setting of the
    /// bellperson provers, which may run with another environment ([`bellperson`]).
    fn bellperson_id<'d>(&self, device: &'d GpuDevice) -> Option<&'d str> {
        device.bellperson_id.as_deref()
    }

    /// For a `High` prover: bellperson's priority lock, which makes a bellperson prover give its
    /// GPUs up (`None` below `High`, or when someone already holds it).
    fn bellperson_request(&self) -> Option<bellperson::PriorityRequest> {
        if self.priority != Priority::High {
            return None;
        }
        match bellperson::PriorityRequest::try_raise(&bellperson::dir()) {
            Ok(request) => request,
            Err(e) => {
                locks::warn_once(&e.path.to_string_lossy(), &format!("gpu: {e}"));
                None
            }
        }
    }

    /// A device this proof cannot use: warned about once per device and process (a file another
    /// user planted stays there across proofs), then logged at debug level.
    fn give_up(&self, device: &GpuDevice, why: &str) {
        locks::warn_once(
            &device.id,
            &format!(
                "gpu: {} unusable for this proof ({why}); its work goes to the CPU",
                device.id
            ),
        );
        self.shared().failed.insert(device.id.clone());
    }
}

impl ClaimInner {
    /// Releases a device, the bases it keeps freed first; `preempted` when a higher priority
    /// asked for it.
    pub(super) fn release(&self, k: LockedKernel, preempted: bool) {
        let _ = k.device.free_kept_bases();
        let live = k.device.live_device_bytes();
        let peak = k.device.take_peak_device_bytes();
        let held = k.lock.held_for();
        let asked = *lock(&k.asked_at);
        let longest_gap = lock(&k.probes).1;
        let id = k.device.id.clone();
        drop(k);
        let mut s = self.shared();
        s.holding.remove(&id);
        s.counts.live_device_bytes_at_release = s.counts.live_device_bytes_at_release.max(live);
        s.counts.peak_device_bytes = s.counts.peak_device_bytes.max(peak);
        if preempted {
            s.counts.preemptions += 1;
            s.lost_at = Some(std::time::Instant::now());
            let latency = asked.map_or(Duration::ZERO, |a| a.elapsed());
            s.counts.yield_latency = max_opt(s.counts.yield_latency, latency);
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

    /// After `k` ran out of memory: frees the bases it keeps and keeps none on it for the rest of
    /// the claim (they are only a saving: the work comes first). Says whether any were freed,
    /// that is whether the work is worth trying again at the same size.
    pub(super) fn stop_keeping_bases(&self, k: &LockedKernel) -> bool {
        self.shared().keep_no_bases.insert(k.device.id.clone());
        let freed = k.device.free_kept_bases();
        if freed > 0 {
            log::info!(
                "gpu: {} ran out of memory with {freed} bytes of bases kept; freed, and none kept \
                 on it for the rest of this claim",
                k.device.id
            );
        }
        freed > 0
    }

    /// Marks a device failed and releases it; the work goes to the CPU.
    pub(super) fn fail(&self, k: LockedKernel, e: &GpuError) {
        log::warn!(
            "gpu: {} failed ({e}); its work goes to the CPU",
            k.device.id
        );
        {
            let mut s = self.shared();
            s.counts.gpu_failures += 1;
            s.failed.insert(k.device.id.clone());
        }
        self.release(k, false);
    }
}

/// How often the watcher probes idle devices.
const WATCH_STEP: Duration = Duration::from_millis(2);

impl ClaimInner {
    /// Until stopped: releases idle devices that a higher priority asks for.
    pub(super) fn watch(&self) {
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
}

#[cfg(test)]
mod tests {
    use super::{ClaimInner, Shared, DEFAULT_CPU_WAIT};
    use crate::priority::Priority;
    use std::time::{Duration, Instant};

    fn claim(cpu_wait: Duration, lost_at: Option<Instant>) -> ClaimInner {
        ClaimInner {
            dir: std::env::temp_dir(),
            priority: Priority::Low,
            devices: Vec::new(),
            idle: Default::default(),
            shared: std::sync::Mutex::new(Shared {
                lost_at,
                ..Shared::default()
            }),
            may_wait: false,
            keep_bases: None,
            cpu_wait,
            stop: Default::default(),
        }
    }

    #[test]
    fn only_a_prover_that_just_yielded_a_device_keeps_its_cpu_waiting() {
        let now = Some(Instant::now());
        assert!(claim(DEFAULT_CPU_WAIT, now).waits_for_its_device());
        // Never preempted (no device yet, or every device failed): the CPU works at once.
        assert!(!claim(DEFAULT_CPU_WAIT, None).waits_for_its_device());
        // Told not to wait.
        assert!(!claim(Duration::ZERO, now).waits_for_its_device());
        // The wait is over: the device stays away longer than a short proof holds it.
        let long_ago = Instant::now().checked_sub(DEFAULT_CPU_WAIT * 2);
        assert!(!claim(DEFAULT_CPU_WAIT, long_ago).waits_for_its_device());
    }
}
