//! How a long CPU loop is given up: it checks a shared flag every [`STOP_EVERY`] steps (the
//! scheduler sets it when a device that came back would finish the work sooner).

use std::sync::atomic::{AtomicBool, Ordering};

/// Terms a window sum adds between two looks at its `stop` flag. A task is one window over a
/// slice of the terms, often the whole of a CPU chunk, and a G2 window over 8191 terms is about
/// 10 ms of additions: without the check, a chunk given up to a device is waited for that long.
pub(crate) const STOP_EVERY: usize = 1024;

/// Whether `stop` is there and set.
pub(crate) fn stopped(stop: Option<&AtomicBool>) -> bool {
    stop.is_some_and(|s| s.load(Ordering::Relaxed))
}
