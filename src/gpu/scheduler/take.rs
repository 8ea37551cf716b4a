//! Taking devices: the free ones that no higher priority wants, a flag raised on those that lower
//! priorities hold when none is free, and the wait for their hand-over at a proof's start.

use super::{lock, max_opt, Asking, ClaimInner, LockedKernel};
use crate::gpu::backend::GpuDevice;
use crate::gpu::locks::{self, bellperson, GpuLock, HigherPriorityProbe, PriorityFlag};
use crate::priority::Priority;
use std::time::{Duration, Instant};

/// How long a prover waits at its start for a lower priority to hand a device over before it
/// starts on the CPU (and keeps asking between chunks). Only a holder verified in the kernel's
/// lock table is waited for, so this is also the most a local user who holds a lock file and
/// writes a lower level into it can delay each proof (docs/RELIABILITY.md, "Threat model").
const MAX_START_WAIT: Duration = Duration::from_secs(10);
/// Sleep between tries while waiting for a hand-over: from the first to the last, doubling. A
/// try costs a few system calls; at 4 ms a waiting prover uses about 1-2% of a core, and the
/// hand-over gains at most 4 ms.
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
            std::thread::sleep(step);
            step = (step * 2).min(WAIT_STEPS.1);
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
        // A bellperson prover holding its GPU lock is, for us, a verified holder at Normal.
        let bellperson_holds = holder.is_none() && bellperson::holds_gpu(&bellperson::dir());
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
