//! The crate's one thread pool.
//!
//! All parallel work (multiexp, FFT, parameter generation, witness synthesis of batches) runs on a
//! dedicated [rayon](https://docs.rs/rayon) pool, so the caller's own rayon pool is left alone and
//! the thread count is set in one place. rayon was chosen over a hand-made pool of
//! crossbeam-channel workers because its work stealing handles the nested parallelism here (an FFT
//! inside a batch of proofs) and because calling [`install`] from inside the pool runs the closure
//! in place instead of blocking a worker on its own pool (the deadlock bellman's `Worker` guards
//! against by hand). Measured on the 2-core development machine: the G1 multiexp at 2^16 runs
//! 1.9x faster on 2 threads than on 1 (0.42 s against 0.79 s). Its tasks last milliseconds, so a
//! hand-made pool has little scheduling overhead to win back; none was built to compare.
//!
//! The thread count comes from `PREEMPTIBLE_GROTH16_THREADS` (read once, at first use) and
//! defaults to the number of logical CPUs.

use std::sync::OnceLock;

/// Environment variable that sets the number of worker threads.
pub const THREADS_ENV: &str = "PREEMPTIBLE_GROTH16_THREADS";

static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
static BESIDE_DEVICES: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// Host threads that fill one slot of a device's pinned staging memory (`gpu::buffer`): half the
/// logical CPUs, 2 to 8. Four filled G1 bases at about 14 GB/s on the H200 host, a quarter of a
/// 2^24-term multiexp's time (sixth session).
pub fn fill_threads() -> usize {
    static FILL: OnceLock<usize> = OnceLock::new();
    *FILL.get_or_init(|| (threads() / 2).clamp(2, 8))
}

fn pool() -> Option<&'static rayon::ThreadPool> {
    POOL.get_or_init(|| build("groth16", threads())).as_ref()
}

/// The thread count asked for by [`THREADS_ENV`], else the number of logical CPUs.
fn threads() -> usize {
    let requested = std::env::var(THREADS_ENV)
        .ok()
        .and_then(|v| match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Some(n),
            _ => {
                log::warn!("ignoring {THREADS_ENV}={v:?}: expected a positive integer");
                None
            }
        });
    requested.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

fn build(name: &'static str, threads: usize) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("{name}-{i}"))
        .build()
        .map_err(|e| {
            // Falls back to rayon's global pool rather than failing every proof.
            log::warn!("could not start {threads} worker threads ({e}); using rayon's global pool")
        })
        .ok()
}

/// Runs `f` on a second, smaller pool that leaves a few threads to the GPU worker running
/// beside it: the CPU's share of a multiexp split with a device. On the crate's whole pool it
/// kept every core busy, and the device worker's host steps (staging writes, the count's round
/// trip) took up to 5x longer (H200 host, 16 cores, sixth session), the device idling meanwhile.
pub fn install_beside_devices<R, F>(f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let pool = BESIDE_DEVICES
        .get_or_init(|| {
            // A device worker's thread and its staging fillers keep theirs.
            let all = threads();
            build(
                "groth16-cpu-share",
                all.saturating_sub(fill_threads() + 1).max(1),
            )
        })
        .as_ref();
    match pool {
        Some(pool) => pool.install(f),
        None => install(f),
    }
}

/// Runs `f` on the crate's pool; parallel iterators inside it use that pool's threads.
pub fn install<R, F>(f: F) -> R
where
    F: FnOnce() -> R + Send,
    R: Send,
{
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
