//! The crate's thread pools.
//!
//! All parallel work (multiexp, FFT, parameter generation, the evaluations from a recorded shape)
//! runs on a dedicated [rayon](https://docs.rs/rayon) pool, so the caller's own rayon pool is
//! left alone and the thread count is set in one place. rayon's work stealing handles the nested
//! parallelism here (an FFT inside a multiexp's scheduling), and calling [`install`] from inside
//! the pool runs the closure in place instead of blocking a worker on its own pool (the deadlock
//! bellman's `Worker` guards against by hand).
//!
//! The thread count comes from `PREEMPTIBLE_GROTH16_THREADS` (read once, at first use) and
//! defaults to the number of logical CPUs.
//!
//! With the `gpu` feature two more pools serve the CPU's share of a multiexp split with devices:
//! a smaller one that leaves a running device worker and its staging fillers their threads, and
//! one whose threads run at a lower scheduling priority, for the lowest priority level. Work on
//! them is started from the prover's own thread or a thread it starts (the scalars it prepares
//! beside a multiexp), never from a worker of another pool (an `install` across pools blocks
//! the calling worker); [`install`] called from inside them stays on them.

use std::sync::OnceLock;

use crate::config::Config;
#[cfg(feature = "gpu")]
pub use crate::config::FILL_THREADS_ENV;
pub use crate::config::THREADS_ENV;

static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
#[cfg(feature = "gpu")]
static BESIDE_DEVICES: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
#[cfg(feature = "gpu")]
static BACKGROUND: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// How much lower the scheduling priority (nice value, up to 19) of the threads of
/// [`background_pool`] is than the thread that starts them, where the idle policy is refused.
#[cfg(feature = "gpu")]
const BACKGROUND_NICE: i32 = 10;

/// Host threads that fill one slot of a device's pinned staging memory (`gpu::buffer`):
/// [`FILL_THREADS_ENV`], else half the crate's threads ([`THREADS_ENV`]), 2 to 8. Four fill
/// G1 bases at about 14 GB/s, a quarter of a 2^24-term multiexp's time, and eight at about
/// 27 GB/s (H200 host, 16 cores; docs/BENCHMARKS.md).
#[cfg(feature = "gpu")]
pub(crate) fn fill_threads() -> usize {
    static FILL: OnceLock<usize> = OnceLock::new();
    *FILL.get_or_init(|| {
        Config::from_env()
            .fill_threads
            .unwrap_or_else(|| (threads() / 2).clamp(2, 8))
    })
}

fn pool() -> Option<&'static rayon::ThreadPool> {
    POOL.get_or_init(|| build("groth16", threads())).as_ref()
}

/// The thread count asked for by [`THREADS_ENV`], else the number of logical CPUs.
fn threads() -> usize {
    Config::from_env().threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

fn build(name: &'static str, threads: usize) -> Option<rayon::ThreadPool> {
    finish(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("{name}-{i}")),
        threads,
    )
}

fn finish(builder: rayon::ThreadPoolBuilder, threads: usize) -> Option<rayon::ThreadPool> {
    builder
        .build()
        .map_err(|e| {
            // Falls back to rayon's global pool rather than failing every proof.
            log::warn!("could not start {threads} worker threads ({e}); using rayon's global pool")
        })
        .ok()
}

/// A second, smaller pool that leaves a few threads to the GPU worker running beside it: the
/// CPU's share of a multiexp split with a device. On the crate's whole pool it keeps every core
/// busy, and the device worker's host steps (staging writes, the count's round trip) take up to
/// 5x longer, the device idling meanwhile (H200 host, 16 cores; docs/BENCHMARKS.md).
#[cfg(feature = "gpu")]
fn beside_devices_pool() -> Option<&'static rayon::ThreadPool> {
    BESIDE_DEVICES
        .get_or_init(|| {
            // A device worker's thread and its staging fillers keep theirs.
            let all = threads();
            build(
                "groth16-cpu-share",
                all.saturating_sub(fill_threads() + 1).max(1),
            )
        })
        .as_ref()
}

/// A pool of as many threads as the crate's, running under Linux's idle scheduling policy
/// (`SCHED_IDLE`; elsewhere, or where refused, at nice + 10): the CPU share of a low-priority
/// prover. Preempted, such a prover goes on on every core beside the high-priority prover that
/// took its device, which has host work of its own (synthesis, transfers, the CPU side of its
/// multiexps), all of it short tasks that sleep and wake.
///
/// Nice + 10 alone is not enough: beside a preempted 2^24 low prover at nice + 10, a 2^16 high
/// proof takes 123 ms (p50) instead of 61 ms alone, its 2 MiB uploads 7-12 ms instead of 2 and its
/// host sums 3-8 ms instead of 1 (H200 host, 16 cores; docs/BENCHMARKS.md). A thread that wakes on
/// a core a nice thread runs on may wait for that thread's time slice (the EEVDF scheduler of Linux
/// 6.6 and later lets the running task reach its slice's end), whereas a task of the idle policy is
/// preempted at once by any other that wakes, and gets a core only when nothing else wants it.
#[cfg(feature = "gpu")]
fn background_pool() -> Option<&'static rayon::ThreadPool> {
    BACKGROUND
        .get_or_init(|| {
            let all = threads();
            let builder = rayon::ThreadPoolBuilder::new()
                .num_threads(all)
                .thread_name(|i| format!("groth16-background-{i}"))
                .start_handler(|_| lower_this_threads_priority());
            finish(builder, all)
        })
        .as_ref()
}

/// Puts the calling thread under the idle scheduling policy, or where that is refused raises its
/// nice value by [`BACKGROUND_NICE`] (to at most 19); Linux schedules threads one by one, so only
/// this thread changes, and the threads it starts inherit the change. Elsewhere it stays as it is.
/// An unprivileged thread may always lower its own policy to the idle one (it may not go back).
#[cfg(feature = "gpu")]
#[allow(unsafe_code)]
fn lower_this_threads_priority() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: a system call on the calling thread (pid 0) that reads `param`, which lives
        // across the call.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0 {
            return;
        }
        log::debug!(
            "background thread: the idle scheduling policy was refused ({}); nice + {BACKGROUND_NICE} instead",
            std::io::Error::last_os_error()
        );
        // SAFETY: plain system calls on the calling thread, with no pointers.
        let result = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            libc::setpriority(libc::PRIO_PROCESS, tid, (now + BACKGROUND_NICE).min(19))
        };
        if result != 0 {
            log::debug!(
                "could not lower a background thread's priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Which of the crate's pools a piece of work runs on (without the `gpu` feature there is only
/// the crate's pool, and every choice runs there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Pool {
    /// The crate's pool ([`install`]).
    Main,
    /// The smaller pool beside running device workers ([`beside_devices_pool`]).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    BesideDevices,
    /// The lower-priority pool ([`background_pool`]).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    Background,
}

/// Runs `f` on `pool` (on the crate's pool if that one could not be started).
pub(crate) fn install_on<R, F>(pool: Pool, f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    #[cfg(feature = "gpu")]
    let chosen = match pool {
        Pool::Main => None,
        Pool::BesideDevices => beside_devices_pool(),
        Pool::Background => background_pool(),
    };
    #[cfg(not(feature = "gpu"))]
    let chosen: Option<&rayon::ThreadPool> = {
        let _ = pool;
        None
    };
    match chosen {
        Some(pool) => pool.install(f),
        None => install(f),
    }
}

/// Runs `f` on the crate's pool; parallel iterators inside it use that pool's threads.
///
/// Called from a thread of one of the crate's other pools (the CPU's share beside a device, or
/// the lower-priority pool), `f` runs in place, on that pool: work sent there stays there, at its
/// thread count and priority, instead of blocking the calling worker while the main pool runs it.
pub fn install<R, F>(f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    #[cfg(feature = "gpu")]
    if [BESIDE_DEVICES.get(), BACKGROUND.get()]
        .into_iter()
        .flatten()
        .flatten()
        .any(|other| other.current_thread_index().is_some())
    {
        return f();
    }
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Number of worker threads of the crate's pool.
pub fn num_threads() -> usize {
    match pool() {
        Some(pool) => pool.current_num_threads(),
        None => rayon::current_num_threads(),
    }
}

// glibc only: musl's sched_setscheduler always fails (the pool then falls back to a nice value).
#[cfg(all(test, feature = "gpu", target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::{install_on, Pool};

    /// The scheduling policy of the calling thread.
    #[allow(unsafe_code)]
    fn policy() -> i32 {
        // SAFETY: a system call on the calling thread, with no pointers.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn background_work_runs_under_the_idle_policy_and_other_work_does_not() {
        let ours = policy();
        if ours == libc::SCHED_IDLE {
            // Started under the idle policy itself (`chrt --idle`): nothing to tell apart.
            eprintln!("skipped: the test process runs under the idle policy already");
            return;
        }
        assert_eq!(install_on(Pool::Background, policy), libc::SCHED_IDLE);
        assert_eq!(install_on(Pool::Main, policy), ours);
        assert_eq!(install_on(Pool::BesideDevices, policy), ours);
        // Work sent to the main pool from the background pool stays there.
        assert_eq!(
            install_on(Pool::Background, || super::install(policy)),
            libc::SCHED_IDLE
        );
        // Threads a background thread starts (a chunk's own helpers) inherit its policy.
        let child = install_on(Pool::Background, || {
            std::thread::spawn(policy).join().expect("the thread ran")
        });
        assert_eq!(child, libc::SCHED_IDLE);
        assert_eq!(policy(), ours, "the caller's own policy is untouched");
    }
}
