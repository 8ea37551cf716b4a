//! Test hooks (the `test-hooks` feature): device failures and memory limits injected into every
//! device, and a slower CPU share, so that tests can drive the scheduler's fallbacks on any
//! machine. Without the feature the setters do not exist and the checks the devices and the
//! scheduler make are constants the compiler removes.

use super::error::GpuError;
use crate::multicore::Pool;
use std::time::Duration;

#[cfg(feature = "test-hooks")]
mod state {
    use std::sync::atomic::{AtomicBool, AtomicU64};

    pub(super) static INJECT_FAILURES: AtomicBool = AtomicBool::new(false);
    /// Device multiexps that still succeed before every later one fails (`u64::MAX`: off).
    pub(super) static FAIL_AFTER: AtomicU64 = AtomicU64::new(u64::MAX);
    /// Device memory in bytes that one multiexp or quotient may use (`u64::MAX`: no limit).
    pub(super) static MEMORY_LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);
    /// Extra time per term of a CPU chunk of a multiexp split with devices, in nanoseconds.
    pub(super) static CPU_CHUNK_NS_PER_TERM: AtomicU64 = AtomicU64::new(0);
}

#[cfg(feature = "test-hooks")]
use std::sync::atomic::Ordering;

/// Makes every GPU multiexp and quotient fail as a lost device would, to test the CPU fallback.
#[cfg(feature = "test-hooks")]
pub fn inject_failures(on: bool) {
    state::INJECT_FAILURES.store(on, Ordering::Relaxed);
}

/// Lets the next `calls` GPU multiexps (device calls, of any device) succeed and makes every later
/// one fail as a lost device would (`None` turns this off), to test a failure in the middle of a
/// proof's work.
#[cfg(feature = "test-hooks")]
pub fn inject_failures_after(calls: Option<u64>) {
    state::FAIL_AFTER.store(calls.unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Makes every GPU multiexp or quotient that would use more than `bytes` of device memory fail
/// as out of memory (`None` lifts the limit), to test the scheduler's smaller runs and the CPU
/// fallback.
#[cfg(feature = "test-hooks")]
pub fn limit_device_memory(bytes: Option<u64>) {
    state::MEMORY_LIMIT.store(bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Makes every CPU chunk of a lowest-priority prover's multiexp split with devices (fake or
/// real) wait `ns` per term before it computes, as on a machine whose CPU is many times slower
/// than its GPU; the wait ends early when the chunk is given up (0, the default, turns it off).
/// On a small machine a fake device computes its results on the same cores as the CPU's chunks,
/// so it is never much faster than they are. Higher provers are left as they are, so that a
/// high proof's hold stays short beside a low prover's slowed chunks.
#[cfg(feature = "test-hooks")]
pub fn set_cpu_chunk_ns_per_term(ns: u64) {
    state::CPU_CHUNK_NS_PER_TERM.store(ns, Ordering::Relaxed);
}

/// The injected failure of every device call ([`inject_failures`]).
pub(crate) fn injected() -> Result<(), GpuError> {
    #[cfg(feature = "test-hooks")]
    if state::INJECT_FAILURES.load(Ordering::Relaxed) {
        return Err(GpuError::Ocl("injected failure".into()));
    }
    Ok(())
}

/// The injected failure after a number of successful multiexps ([`inject_failures_after`]).
pub(crate) fn failing_after() -> Result<(), GpuError> {
    #[cfg(feature = "test-hooks")]
    {
        let countdown = state::FAIL_AFTER.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            (n != u64::MAX && n > 0).then(|| n - 1)
        });
        if countdown == Err(0) {
            return Err(GpuError::Ocl(
                "injected failure in the middle of the work".into(),
            ));
        }
    }
    Ok(())
}

/// The injected memory limit ([`limit_device_memory`]), as the runtime would report it.
pub(crate) fn fits(bytes: u64) -> Result<(), GpuError> {
    #[cfg(feature = "test-hooks")]
    {
        let limit = state::MEMORY_LIMIT.load(Ordering::Relaxed);
        if bytes > limit {
            return Err(GpuError::OutOfMemory(format!(
                "{bytes} bytes needed, {limit} injected as the limit"
            )));
        }
    }
    let _ = bytes;
    Ok(())
}

/// The extra wait [`set_cpu_chunk_ns_per_term`] asks of a CPU chunk of `terms` terms computed on
/// `pool` (only the lowest level's, [`Pool::Background`], waits).
pub(crate) fn cpu_chunk_delay(terms: usize, pool: Pool) -> Duration {
    #[cfg(feature = "test-hooks")]
    if pool == Pool::Background {
        return Duration::from_nanos(
            state::CPU_CHUNK_NS_PER_TERM.load(Ordering::Relaxed) * terms as u64,
        );
    }
    let _ = (terms, pool);
    Duration::ZERO
}
