//! Whether a piece whose bucket sums are under way when a higher priority asks for the device is
//! finished first or thrown away.
//!
//! A piece is kept only whole, so a call that stops in the middle of a piece's bucket sums throws
//! away the piece's upload, its sort and the launches already done: 12.5 ms of device work a
//! preemption on average at 2^20 constraints, 50 ms at 2^24 (H200; docs/BENCHMARKS.md).
//! When little of the piece is left, finishing it costs the requester those few milliseconds
//! more of hand-over and saves the holder more than that. The rule ([`worth_finishing`]): finish
//! when what is left (the rest of the sums at the pace of the piece's launches so far, then the
//! folds, the weighing and the host's sum, as long as they took in the last bounded piece of the
//! same group and window width on this kernel) is at most the grace ([`FINISH_GRACE`] unless
//! [`FINISH_GRACE_ENV`] says otherwise) and at most the work it saves; otherwise stop at once.
//! Nothing is finished until a pace and a tail have been measured. The estimate is
//! not a bound: a piece not done by the estimate and the grace again is stopped at the next
//! probe. While a piece is being finished the holder does not probe, so the longest gap
//! between probes a release logs includes it.

use crate::config::Config;
use std::time::{Duration, Instant};

/// The most time left in a piece for a request to let it finish (by the estimate, which counts
/// the rest of the launch in progress): with launches of about 8 ms, the hand-over stays well
/// inside its 50 ms goal. A piece not done by the estimate and this much again is stopped.
pub(super) const FINISH_GRACE: Duration = Duration::from_millis(10);

pub use crate::config::FINISH_GRACE_ENV;

/// The grace [`FINISH_GRACE_ENV`] asks for, else the default; read when a device's kernels are
/// made.
pub(crate) fn finish_grace(config: &Config) -> Duration {
    config.finish_grace.unwrap_or(FINISH_GRACE)
}

/// Whether a piece with `left` still to run, after `done` of device work that stopping would
/// throw away, is finished before the device is handed on (with a `grace` of zero, never).
pub(crate) fn worth_finishing(done: Duration, left: Duration, grace: Duration) -> bool {
    !grace.is_zero() && left <= grace && left <= done
}

/// How fast pieces of one group and window width went on this kernel, learned from the last
/// one (a piece's folds and weighing grow with its buckets, so widths are not mixed).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Pace {
    /// Seconds a bucket entry of the sums took, over all the piece's launches.
    per_entry: Option<f64>,
    /// From the end of a piece's sums to its result on the host.
    tail: Option<Duration>,
}

/// The state of one piece's bucket sums, asked when a request is seen.
#[derive(Debug)]
pub(super) struct SumsClock {
    started: Instant,
    pace: Pace,
    /// Entries in launches that have landed, and the time from the first launch's start to the
    /// last landing: the piece's own pace, once it has one.
    landed: (usize, Duration),
    /// Entries not in a launch that has landed.
    left: usize,
    /// The first launch's start.
    sums_started: Option<Instant>,
    /// The launch in progress: when it was enqueued, and its entries.
    launch: Option<(Instant, usize)>,
    /// When the sums ended.
    summed: Option<Instant>,
    grace: Duration,
    /// Set when a request let the piece finish: until when the request waits for it (the
    /// estimate of what was left, and the grace again, in case the estimate was short). Past
    /// it, the next probe stops the piece as if nothing had been decided.
    finish_by: Option<Instant>,
}

impl SumsClock {
    /// The clock of a piece that began at `started`, whose sums are `entries` bucket entries,
    /// at the last `pace` of pieces like it.
    pub(super) fn new(started: Instant, entries: usize, pace: Pace, grace: Duration) -> Self {
        SumsClock {
            started,
            pace,
            landed: (0, Duration::ZERO),
            left: entries,
            sums_started: None,
            launch: None,
            summed: None,
            grace,
            finish_by: None,
        }
    }

    /// A launch of `entries` was enqueued now.
    pub(super) fn launched(&mut self, entries: usize) {
        let now = Instant::now();
        self.sums_started.get_or_insert(now);
        self.launch = Some((now, entries));
    }

    /// The launch in progress has landed: the piece's launches so far set the pace.
    pub(super) fn landed(&mut self) {
        if let (Some((_, entries)), Some(first)) = (self.launch.take(), self.sums_started) {
            self.landed = (self.landed.0 + entries, first.elapsed());
            self.left = self.left.saturating_sub(entries);
            if self.landed.0 > 0 {
                self.pace.per_entry = Some(self.landed.1.as_secs_f64() / self.landed.0 as f64);
            }
        }
    }

    /// The sums have ended (every launch landed).
    pub(super) fn summed(&mut self) {
        self.summed = Some(Instant::now());
    }

    /// Whether a request seen now lets the piece finish: decided at the first request, and
    /// yes until the time allowed for it has passed.
    pub(super) fn finish(&mut self) -> bool {
        let now = Instant::now();
        match self.finish_by {
            Some(by) => now < by,
            None => {
                let Some(left) = self.left() else {
                    return false;
                };
                if worth_finishing(self.started.elapsed(), left, self.grace) {
                    // Decided once: a later request after the deadline stops the piece.
                    self.finish_by = Some(now + left + self.grace);
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Whether a request let the piece finish and the time allowed for it has not passed
    /// (probes are skipped meanwhile).
    pub(super) fn finishing(&self) -> bool {
        self.finish_by.is_some_and(|by| Instant::now() < by)
    }

    /// Whether a request let the piece finish (for the count of such pieces).
    pub(super) fn finished_on_request(&self) -> bool {
        self.finish_by.is_some()
    }

    /// The piece's time still to run, once a pace and a tail are known: the rest of the launch
    /// in progress, the launches after it, and the tail.
    fn left(&self) -> Option<Duration> {
        let per_entry = self.pace.per_entry?;
        let tail = self.pace.tail?;
        let time = |entries: usize| Duration::from_secs_f64(per_entry * entries as f64);
        let (current, in_launch) = self
            .launch
            .map_or((0, Duration::ZERO), |(at, entries)| (entries, at.elapsed()));
        let after = self.left.saturating_sub(current);
        Some(time(current).saturating_sub(in_launch) + time(after) + tail)
    }

    /// The pace to remember once the piece's result is on the host.
    pub(super) fn pace(&self) -> Pace {
        Pace {
            per_entry: self.pace.per_entry,
            tail: self.summed.map(|at| at.elapsed()).or(self.pace.tail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_second_ago() -> Instant {
        let now = Instant::now();
        now.checked_sub(Duration::from_secs(1)).unwrap_or(now)
    }

    #[test]
    fn a_piece_is_finished_only_when_little_is_left_and_less_than_was_done() {
        let ms = Duration::from_millis;
        assert!(worth_finishing(ms(30), ms(8), FINISH_GRACE));
        assert!(worth_finishing(ms(10), ms(10), FINISH_GRACE));
        // More than the grace left, or more left than stopping would throw away.
        assert!(!worth_finishing(ms(30), ms(11), FINISH_GRACE));
        assert!(!worth_finishing(ms(5), ms(8), FINISH_GRACE));
        // No grace: never.
        assert!(!worth_finishing(ms(30), ms(0), Duration::ZERO));
    }

    #[test]
    fn nothing_is_finished_before_a_pace_and_a_tail_are_known() {
        let started = a_second_ago();
        let hour = Duration::from_secs(3600);
        let mut clock = SumsClock::new(started, 100, Pace::default(), hour);
        assert!(!clock.finish());
        // A landed launch gives the pace, but the tail is still unknown.
        clock.launched(50);
        clock.landed();
        assert!(!clock.finish());
        let pace = Pace {
            per_entry: Some(1e-6),
            tail: Some(Duration::from_millis(1)),
        };
        let mut clock = SumsClock::new(started, 100, pace, hour);
        assert!(clock.finish());
        assert!(clock.finishing() && clock.finished_on_request());
        let mut clock = SumsClock::new(started, 100, pace, Duration::ZERO);
        assert!(!clock.finish() && !clock.finishing() && !clock.finished_on_request());
    }

    #[test]
    fn a_piece_finished_on_request_is_stopped_once_its_time_has_passed() {
        let pace = Pace {
            per_entry: Some(1e-6),
            tail: Some(Duration::ZERO),
        };
        // 1000 entries at a microsecond: 1 ms left, and a grace of 1 ms.
        let mut clock = SumsClock::new(a_second_ago(), 1000, pace, Duration::from_millis(1));
        assert!(clock.finish());
        std::thread::sleep(Duration::from_millis(5));
        assert!(!clock.finishing() && !clock.finish());
        // Still counted as decided: if the piece gets done anyway, the request let it.
        assert!(clock.finished_on_request());
    }

    #[test]
    fn what_is_left_counts_the_launches_not_landed_and_the_tail() {
        let pace = Pace {
            per_entry: Some(1e-3),
            tail: Some(Duration::from_millis(2)),
        };
        let mut clock = SumsClock::new(Instant::now(), 10, pace, FINISH_GRACE);
        let left = clock.left().unwrap();
        assert!(left <= Duration::from_millis(12) && left > Duration::from_millis(11));
        clock.launched(4);
        std::thread::sleep(Duration::from_millis(1));
        clock.landed();
        // Six entries at the new pace (at least a millisecond for four), then the tail.
        assert!(clock.left().unwrap() >= Duration::from_micros(3500));
        assert_eq!(clock.left, 6);
        // A launch that has run past its own time takes nothing off the launches after it.
        let slow = Pace {
            per_entry: Some(1e-4),
            tail: Some(Duration::ZERO),
        };
        let mut clock = SumsClock::new(Instant::now(), 20, slow, FINISH_GRACE);
        clock.launched(10);
        std::thread::sleep(Duration::from_millis(3));
        assert!(clock.left().unwrap() >= Duration::from_millis(1));
        clock.summed();
        assert!(clock.pace().tail.unwrap() < Duration::from_secs(1));
    }
}
