//! One multiexp's queue of chunks, shared by the prover's thread (the CPU's share from the back)
//! and the device workers (from the front), and the workers' calls in flight.

use crate::gpu::multiexp::GpuCurve;
use crate::multiexp::ScalarRepr;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One multiexp split between the devices and the CPU, shared by the prover's thread and the
/// device workers: its terms, the chunks not yet taken, the sum of those done, and the workers'
/// calls in flight.
pub(super) struct SplitMultiexp<'a, G: GpuCurve> {
    pub(super) bases: &'a [G],
    pub(super) scalars: &'a [ScalarRepr],
    pub(super) queue: Mutex<VecDeque<Range<usize>>>,
    pub(super) sum: Mutex<G::Curve>,
    pub(super) flight: Flight,
}

/// The device workers of one multiexp and the chunks their calls hold: what a worker's even
/// share of the work is counted from ([`call_chunks`]).
#[derive(Debug, Default)]
pub(super) struct Flight {
    pub(super) workers: AtomicUsize,
    pub(super) chunks: AtomicUsize,
}

impl Flight {
    /// Counts the calling worker in until the guard drops.
    pub(super) fn join(&self) -> impl Drop + '_ {
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
