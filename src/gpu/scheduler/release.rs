//! Giving a device back: released when a higher priority asks for it or when the claim is done
//! with it, or marked failed for the proof; what a release adds to the claim's counters.

use super::{lock, max_opt, ClaimInner, LockedKernel};
use crate::gpu::error::GpuError;
use std::time::Duration;

impl ClaimInner {
    /// Releases a device; `preempted` when a higher priority asked for it.
    pub(super) fn release(&self, k: LockedKernel, preempted: bool) {
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
