//! A device this prover holds, under the lock protocol: its lock, and the probe that tells it when
//! a higher priority asks for the device.

use super::lock;
use crate::gpu::backend::GpuDevice;
use crate::gpu::locks::{GpuLock, HigherPriorityProbe, PriorityFlag};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A time between two probes of a held device worth a debug line: a request waits that long,
/// half the hand-over's p99 goal at 2^26 constraints (docs/BENCHMARKS.md).
const LONG_PROBE_GAP: Duration = Duration::from_millis(10);

/// A time between two probes worth a trace line: longer than the waits' 1 ms probing step, so
/// that a trace log places the host steps that delay a request's detection.
const PROBE_GAP_TRACED: Duration = Duration::from_millis(2);

/// A device this prover holds: the lock, and the probe for higher requests.
pub struct LockedKernel {
    pub(super) device: &'static GpuDevice,
    pub(super) lock: GpuLock,
    probe: HigherPriorityProbe,
    /// Our own flag, raised while we hold the device, for the status view; raised again if a
    /// temp cleaner deletes its file.
    flag: Mutex<Option<PriorityFlag>>,
    /// When a higher request was first seen.
    pub(super) asked_at: Mutex<Option<Instant>>,
    /// The last probe, and the longest time between two probes while held: a request waits for
    /// up to that long before the holder sees it (logged at release, to find stretches of work
    /// that ask too rarely).
    pub(super) probes: Mutex<(Instant, Duration)>,
}

impl Drop for LockedKernel {
    /// The bases the device keeps go before its lock (a claim dropped without releasing its
    /// devices one by one, after a panic or an error, still leaves none behind).
    fn drop(&mut self) {
        let _ = self.device.free_kept_bases();
    }
}

impl LockedKernel {
    /// A device just taken: its lock, the probe for higher requests, and our own flag on it.
    pub(super) fn new(
        device: &'static GpuDevice,
        lock: GpuLock,
        probe: HigherPriorityProbe,
        flag: Option<PriorityFlag>,
    ) -> LockedKernel {
        LockedKernel {
            device,
            lock,
            probe,
            flag: Mutex::new(flag),
            asked_at: Mutex::new(None),
            probes: Mutex::new((Instant::now(), Duration::ZERO)),
        }
    }

    /// Whether a higher priority has asked for this device. A probe that fails (the lock
    /// directory vanished) is logged and read as "no": the device is ours until we are done.
    pub(super) fn should_yield(&self) -> bool {
        {
            let mut probes = lock(&self.probes);
            let now = Instant::now();
            let gap = now - probes.0;
            if gap > LONG_PROBE_GAP {
                // With the phase logs around it, says which stretch of work asked too rarely.
                log::debug!("gpu: {gap:.2?} without a probe on {}", self.device.id);
            } else if gap > PROBE_GAP_TRACED {
                log::trace!("gpu: {gap:.2?} without a probe on {}", self.device.id);
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
        if let Some(flag) = lock(&self.flag).as_mut() {
            if let Err(e) = flag.refresh() {
                log::debug!("gpu: own flag on {} not raised again: {e}", self.device.id);
            }
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
