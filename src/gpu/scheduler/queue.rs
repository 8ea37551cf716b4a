//! One multiexp's queue of chunks, shared by the prover's thread (the CPU's share from the back)
//! and the device workers (from the front), and the workers' calls in flight.

use crate::bases::Bases;
use crate::gpu::multiexp::GpuCurve;
use crate::multiexp::ScalarRepr;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One multiexp split between the devices and the CPU, shared by the prover's thread and the
/// device workers: its terms, the chunks not yet taken, the sum of those done, the workers'
/// calls in flight, and what is wrong with its bases if a chunk found a point that is not on
/// the curve (mapped bases are decoded by each chunk's worker).
pub(super) struct SplitMultiexp<'a, G: GpuCurve> {
    pub(super) bases: Bases<'a, G>,
    pub(super) scalars: &'a [ScalarRepr],
    pub(super) queue: Mutex<VecDeque<Range<usize>>>,
    pub(super) sum: Mutex<G::Curve>,
    pub(super) flight: Flight,
    pub(super) invalid: Mutex<Option<String>>,
}

impl<G: GpuCurve> SplitMultiexp<'_, G> {
    /// A chunk found a base that is not a point (`message` names it): the multiexp fails, so the
    /// chunks still queued are dropped; the first message is kept.
    pub(super) fn refuse(&self, message: String) {
        super::lock(&self.queue).clear();
        super::lock(&self.invalid).get_or_insert(message);
    }
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
