//! The watcher of a claim's idle devices: while the prover works on the CPU between pieces of
//! work, it releases the devices a higher priority asks for.

use super::{lock, ClaimInner};
use std::sync::atomic::Ordering;
use std::time::Duration;

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
