//! Whether a piece whose bucket sums are under way when a higher priority asks for the device is
//! finished first or thrown away.
//!
//! A piece is kept only whole, so a call that stops in the middle of a piece's bucket sums throws
//! away the piece's upload, its sort and the launches already done: 12.5 ms of device work a
//! preemption on average at 2^20 constraints on the H200, 50 ms at 2^24 (seventeenth session).
//! When little of the piece is left, finishing it costs the requester those few milliseconds
//! more of hand-over and saves the holder more than that. The rule ([`worth_finishing`]): finish
//! when what is left (the rest of the sums at the pace of the launches measured, then the folds,
//! the weighing and the host's sum, as long as they took in the group's last piece) is at most
//! the grace ([`FINISH_GRACE`] unless [`FINISH_GRACE_ENV`] says otherwise) and at most the work it
//! saves; otherwise stop at once,
//! as before. Nothing is finished until a pace and a tail have been measured on this kernel.

use std::time::{Duration, Instant};

/// The most a request waits for a piece to be finished, on top of the launch in progress it
/// waits for anyway: with launches of about 8 ms, the hand-over stays well inside its 50 ms goal.
pub(super) const FINISH_GRACE: Duration = Duration::from_millis(10);

/// Replaces the default grace (10 ms), in milliseconds (0: a request always stops the piece at once), for
/// experiments; read when a device's kernels are made.
pub const FINISH_GRACE_ENV: &str = "PREEMPTIBLE_GROTH16_FINISH_GRACE_MS";

/// The grace [`FINISH_GRACE_ENV`] asks for, else the default (logged when malformed).
pub(super) fn finish_grace() -> Duration {
    match std::env::var(FINISH_GRACE_ENV) {
        Err(_) => FINISH_GRACE,
        Ok(ms) => match ms.trim().parse::<u64>() {
            Ok(ms) => Duration::from_millis(ms),
            Err(_) => {
                log::warn!("{FINISH_GRACE_ENV}={ms:?} is not a number of milliseconds; ignored");
                FINISH_GRACE
            }
        },
    }
}

/// Whether a piece with `left` still to run, after `done` of device work that stopping would
/// throw away, is finished before the device is handed on (with a `grace` of zero, never).
pub(super) fn worth_finishing(done: Duration, left: Duration, grace: Duration) -> bool {
    !grace.is_zero() && left <= grace && left <= done
}

/// How fast one group's pieces went on this kernel, learned from its last piece.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Pace {
    /// Seconds a bucket entry of the sums took, in the last launch measured.
    per_entry: Option<f64>,
    /// From the end of a piece's sums to its result on the host.
    tail: Option<Duration>,
}

/// The state of one piece's bucket sums, asked when a request is seen.
#[derive(Debug)]
pub(super) struct SumsClock {
    started: Instant,
    pace: Pace,
    /// Entries not in a launch that has landed.
    left: usize,
    /// The launch in progress: when it was enqueued, and its entries.
    launch: Option<(Instant, usize)>,
    /// When the sums ended.
    summed: Option<Instant>,
    grace: Duration,
    finishing: bool,
}

impl SumsClock {
    /// The clock of a piece that began at `started`, whose sums are `entries` bucket entries,
    /// at the group's last `pace`.
    pub(super) fn new(started: Instant, entries: usize, pace: Pace, grace: Duration) -> Self {
        SumsClock {
            started,
            pace,
            left: entries,
            launch: None,
            summed: None,
            grace,
            finishing: false,
        }
    }

    /// A launch of `entries` was enqueued now.
    pub(super) fn launched(&mut self, entries: usize) {
        self.launch = Some((Instant::now(), entries));
    }

    /// The launch in progress has landed: its time sets the pace.
    pub(super) fn landed(&mut self) {
        if let Some((at, entries)) = self.launch.take() {
            if entries > 0 {
                self.pace.per_entry = Some(at.elapsed().as_secs_f64() / entries as f64);
            }
            self.left = self.left.saturating_sub(entries);
        }
    }

    /// The sums have ended (every launch landed).
    pub(super) fn summed(&mut self) {
        self.summed = Some(Instant::now());
    }

    /// Whether a request seen now lets the piece finish; once yes, yes until the piece is done.
    pub(super) fn finish(&mut self) -> bool {
        if !self.finishing {
            if let Some(left) = self.left() {
                self.finishing = worth_finishing(self.started.elapsed(), left, self.grace);
            }
        }
        self.finishing
    }

    /// Whether the piece is being finished under a request.
    pub(super) fn finishing(&self) -> bool {
        self.finishing
    }

    /// The piece's time still to run, once a pace and a tail are known.
    fn left(&self) -> Option<Duration> {
        let per_entry = self.pace.per_entry?;
        let tail = self.pace.tail?;
        let in_launch = self.launch.map_or(Duration::ZERO, |(at, _)| at.elapsed());
        let sums = Duration::from_secs_f64(per_entry * self.left as f64);
        Some(sums.saturating_sub(in_launch) + tail)
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
        let long_ago = Instant::now() - Duration::from_secs(1);
        let hour = Duration::from_secs(3600);
        let mut clock = SumsClock::new(long_ago, 100, Pace::default(), hour);
        assert!(!clock.finish());
        // A landed launch gives the pace, but the tail is still unknown.
        clock.launched(50);
        clock.landed();
        assert!(!clock.finish());
        let pace = Pace {
            per_entry: Some(1e-6),
            tail: Some(Duration::from_millis(1)),
        };
        let mut clock = SumsClock::new(long_ago, 100, pace, hour);
        assert!(clock.finish());
        // Once yes, yes.
        assert!(clock.finishing());
        let mut clock = SumsClock::new(long_ago, 100, pace, Duration::ZERO);
        assert!(!clock.finish());
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
        clock.summed();
        assert!(clock.pace().tail.unwrap() < Duration::from_millis(2));
    }
}
