//! What the process learns about its devices and its CPU, and how many chunks a device's call
//! takes: the learned speeds and batches, a call's share of the work left, and the next call's
//! size after the last one's time.

use super::claim::ClaimInner;
use super::lock;
use crate::multicore::Pool;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Device time one multiexp call of a GPU worker aims at (the chunks it takes at once). A call
/// pays a fixed part (the count's round trip, the weighing: about 10 ms on the H200), and its
/// first piece waits for its inputs' upload with the device idle (14-50 ms of each call of a
/// 2^24 proof on the H200: the later pieces' uploads overlap the sums), so long calls make a
/// faster proof: a 2^24 proof alone takes 18.4 s with calls of 160 ms and 31.6 s with 40 ms
/// (H200; docs/BENCHMARKS.md). A request does not wait for a whole call: its launches are waited
/// for one by one, probing (see `GpuCurve::LAUNCH_ENTRIES`), and a call stopped by it keeps the
/// pieces it finished, so what a preemption costs is the piece in progress, whatever the call's
/// length. Calls stay this long after a preemption too: with calls of 40 ms for 30 s after each
/// one (calls not in pieces), a low prover preempted every second or two runs at the short
/// calls' speed throughout, and loses 2.2x (2^20) and 4.1x (2^24) the time the high proofs hold
/// the device (H200).
/// With several devices a call takes at most its even share of the work left ([`call_chunks`]),
/// so that one device does not take the whole multiexp while the others wait.
pub(super) const TARGET_BATCH: Duration = Duration::from_millis(640);

/// What the process learned about its devices and its CPU, kept across claims: a device's speed
/// is not a property of one proof.
#[derive(Debug, Default)]
pub(super) struct Learned {
    /// Chunks per call last fitted to [`TARGET_BATCH`], per device and group: a claim that
    /// started again from one chunk paid a call's fixed costs (about 15 ms on the H200, most of a
    /// 2^15-term call) per chunk for its whole first multiexp.
    pub(super) batches: HashMap<(String, &'static str), usize>,
    /// Terms per second of each device, per device and group (transfers included), as
    /// [`learn_gpu_rate`] learns it from the device's runs, and when it was last set or raised.
    pub(super) gpu_rate: HashMap<(String, &'static str), (f64, Instant)>,
    /// Terms per second of the CPU's last chunk, per group, pool and kind of bases (mapped ones,
    /// which the chunk decodes, or points in memory: the same pool decodes and sums, so a rate
    /// learned on one would mislead the other), and when it was measured.
    /// Measured afresh in each proof, the CPU would take a chunk of every multiexp to time itself,
    /// and the device, done with the rest, would wait for it: 55 of a 2^20 proof's 100 ms of H
    /// query and 75 of a 2^16 proof's 90 ms of B query in G2 (H200; docs/BENCHMARKS.md). A rate
    /// older than [`CPU_RATE_LIFE`] is not used: one measured on a busy host would otherwise keep
    /// the CPU from ever taking (and timing) a chunk beside a device again.
    pub(super) cpu_rate: HashMap<CpuRateKey, (f64, Instant)>,
}

/// What a CPU rate is learned for ([`Learned::cpu_rate`]): the group, the pool, and whether the
/// bases are mapped.
pub(super) type CpuRateKey = (&'static str, Pool, bool);

/// How long a measured CPU rate is used ([`Learned::cpu_rate`]).
const CPU_RATE_LIFE: Duration = Duration::from_secs(60);

pub(super) fn learned() -> MutexGuard<'static, Learned> {
    static LEARNED: std::sync::OnceLock<Mutex<Learned>> = std::sync::OnceLock::new();
    lock(LEARNED.get_or_init(Default::default))
}

impl ClaimInner {
    /// The measured speeds for `group`, in terms per second: the fastest of this claim's devices
    /// and the CPU on `pool` over bases `mapped` or not (`None` until each has run once in this
    /// process, and for the CPU again once its rate is older than [`CPU_RATE_LIFE`]).
    pub(super) fn rates(
        &self,
        group: &'static str,
        pool: Pool,
        mapped: bool,
    ) -> (Option<f64>, Option<f64>) {
        let learned = learned();
        let device = self
            .devices
            .iter()
            .filter_map(|d| {
                learned
                    .gpu_rate
                    .get(&(d.id.clone(), group))
                    .map(|(r, _)| *r)
            })
            .reduce(f64::max);
        let cpu = learned
            .cpu_rate
            .get(&(group, pool, mapped))
            .filter(|(_, at)| at.elapsed() < CPU_RATE_LIFE)
            .map(|(rate, _)| *rate);
        (device, cpu)
    }
}

/// Chunks a worker takes for its next call: its learned `batch`, but no more than its even share
/// of the work left, the `queued` chunks and those `in_flight` in the other workers' calls,
/// among the `workers` of the multiexp (this one included), so that with several devices the
/// last calls end about together rather than one device computing a long last call while the
/// others wait; and no fewer than `floor` (a piece's worth), so that the calls do not dwindle to
/// single chunks at the end. Never zero while chunks are queued, never more than are queued.
pub(super) fn call_chunks(
    batch: usize,
    queued: usize,
    in_flight: usize,
    workers: usize,
    floor: usize,
) -> usize {
    let share = (queued + in_flight).div_ceil(workers.max(1));
    batch.min(share.max(floor)).min(queued).max(1)
}

/// Chunks a device takes in its next call, after `ran` chunks took `elapsed` with `batch` asked
/// for, aiming at `target`; growing at most 8x per call, never above `cap` (set when the device
/// ran out of memory). A call costs a fixed part (transfers set up, a count read back, seven
/// launches; on the H200 most of a 2^15-term call) plus a part per term, so the chunks that fit
/// at the last call's time per chunk are too few: a call that took under half the target doubles
/// (its time at least stays under the target), and one above the target shrinks in proportion
/// (which undershoots). A short run (a multiexp's last chunks) says little about the speed: after
/// one the batch may only grow.
pub(super) fn next_batch(
    batch: usize,
    ran: usize,
    elapsed: Duration,
    cap: Option<usize>,
    target: Duration,
) -> usize {
    let ran = ran.max(1);
    let per_chunk = elapsed.as_secs_f64() / ran as f64;
    let fit = (target.as_secs_f64() / per_chunk.max(1e-6)) as usize;
    let doubled = if elapsed < target / 2 { 2 * ran } else { 0 };
    let next = if ran < batch {
        fit.max(doubled).clamp(batch, 8 * batch)
    } else {
        fit.max(doubled).clamp(1, 8 * batch)
    };
    next.min(cap.unwrap_or(usize::MAX)).max(1)
}

/// A device run at least this long measures the device's speed ([`learn_gpu_rate`]).
const RATE_RUN: Duration = Duration::from_millis(40);

/// A device's speed in terms per second after a run of `terms` in `elapsed`, ending `now`, from
/// the `previous` estimate and when that was set or raised. A run shorter than [`RATE_RUN`] is
/// mostly the call's fixed costs (about 10 ms on the H200, whatever its size), so it may raise
/// the estimate but not lower it, unless the estimate is older than [`CPU_RATE_LIFE`] (a device
/// slowed since, by another user say, is then taken at its word again). Taken as it is, a short
/// run's rate would make the device look several times slower than it is: the one-chunk run
/// that ends each 2^16 proof's B query in G2 (8191 terms in 10.3 ms on the H200) would have the
/// next proof's CPU take a chunk of that query, which the device does in a fifth of the time.
pub(super) fn learn_gpu_rate(
    previous: Option<(f64, Instant)>,
    terms: usize,
    elapsed: Duration,
    now: Instant,
) -> (f64, Instant) {
    let observed = terms as f64 / elapsed.as_secs_f64().max(1e-9);
    match previous {
        Some((rate, at))
            if elapsed < RATE_RUN
                && rate >= observed
                && now.saturating_duration_since(at) < CPU_RATE_LIFE =>
        {
            (rate, at)
        }
        _ => (observed, now),
    }
}

#[cfg(test)]
mod tests {
    use super::{call_chunks, learn_gpu_rate, next_batch, CPU_RATE_LIFE, RATE_RUN};
    use std::time::{Duration, Instant};

    #[test]
    fn a_cpu_rate_is_learned_apart_for_mapped_bases() {
        use super::super::claim::{ClaimInner, Shared};
        use super::learned;
        use crate::multicore::Pool;
        use crate::priority::Priority;
        let claim = ClaimInner {
            dir: std::env::temp_dir(),
            priority: Priority::Normal,
            devices: Vec::new(),
            idle: Default::default(),
            shared: std::sync::Mutex::new(Shared::default()),
            may_wait: false,
            keep_bases: None,
            cpu_wait: Default::default(),
            stop: Default::default(),
        };
        // A group name of this test's own: the rates are the process's.
        let group = "rates-test";
        learned()
            .cpu_rate
            .insert((group, Pool::Main, true), (1e6, Instant::now()));
        assert_eq!(claim.rates(group, Pool::Main, true), (None, Some(1e6)));
        assert_eq!(claim.rates(group, Pool::Main, false), (None, None));
    }

    #[test]
    fn a_call_takes_its_batch_or_an_even_share_of_the_work_left() {
        // One worker: the whole batch, or what is left.
        assert_eq!(call_chunks(64, 500, 0, 1, 1), 64);
        assert_eq!(call_chunks(600, 500, 0, 1, 1), 500);
        assert_eq!(call_chunks(64, 10, 0, 1, 1), 10);
        // Two workers, the first takes half; the second, with that half in flight, takes the
        // other half (not a quarter, then an eighth, ...).
        assert_eq!(call_chunks(600, 512, 0, 2, 1), 256);
        assert_eq!(call_chunks(600, 256, 256, 2, 1), 256);
        // A piece's worth at the least, while that many are queued.
        assert_eq!(call_chunks(600, 40, 400, 2, 128), 40);
        assert_eq!(call_chunks(600, 300, 0, 4, 128), 128);
        // Never zero, never more than queued.
        assert_eq!(call_chunks(0, 5, 0, 2, 1), 1);
        assert_eq!(call_chunks(8, 1, 0, 4, 16), 1);
    }

    #[test]
    fn short_runs_raise_the_device_rate_and_long_ones_set_it() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let at = |d: Duration| t0 + d;
        // The first run sets it, long or short.
        assert_eq!(learn_gpu_rate(None, 8192, ms(8), t0), (1.024e6, t0));
        // A short run of mostly fixed costs does not lower it (nor refresh it)...
        let known = Some((4e6, t0));
        assert_eq!(learn_gpu_rate(known, 8192, ms(10), at(ms(5))), (4e6, t0));
        // ...but a faster one raises it.
        let slow = Some((1e6, t0));
        assert_eq!(
            learn_gpu_rate(slow, 65536, ms(16), at(ms(5))),
            (4.096e6, at(ms(5)))
        );
        // A long run measures the device, slower or faster.
        let later = at(ms(200));
        assert_eq!(learn_gpu_rate(known, 80_000, RATE_RUN, later), (2e6, later));
        assert_eq!(learn_gpu_rate(slow, 400_000, ms(100), later), (4e6, later));
        // An estimate older than the CPU's rate life is replaced by a short run too.
        let stale = at(CPU_RATE_LIFE + ms(1));
        assert_eq!(learn_gpu_rate(known, 8192, ms(8), stale), (1.024e6, stale));
    }

    #[test]
    fn runs_fit_the_target_time_and_respect_the_memory_cap() {
        let ms = Duration::from_millis;
        const T: Duration = Duration::from_millis(40);
        // 4 ms per chunk: ten fit in 40 ms, but growth is at most 8x per call.
        assert_eq!(next_batch(1, 1, ms(4), None, T), 8);
        assert_eq!(next_batch(8, 8, ms(32), None, T), 10);
        // A call of mostly fixed cost (15 ms for one chunk, where proportion says two fit):
        // under half the target, so it doubles, and doubles again while the calls stay short.
        assert_eq!(next_batch(1, 1, ms(15), None, T), 2);
        assert_eq!(next_batch(2, 2, ms(19), None, T), 4);
        assert_eq!(next_batch(4, 4, ms(25), None, T), 6);
        // Slow chunks: one at a time.
        assert_eq!(next_batch(4, 4, ms(400), None, T), 1);
        // A short last run does not shrink the batch.
        assert_eq!(next_batch(10, 2, ms(30), None, T), 10);
        // After running out of memory at 6 chunks the cap is 3.
        assert_eq!(next_batch(3, 3, ms(3), Some(3), T), 3);
        assert_eq!(next_batch(1, 1, ms(0), Some(3), T), 3);
    }
}
