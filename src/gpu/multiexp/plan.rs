//! How one multiexp is cut up on the device ([`Plan`]): the window width, the shape of the
//! bucket weighing, the segments' length, and the work-group sizes the kernels are launched with.

/// How one multiexp is cut up on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Window width in bits; digits are signed, so a window has `2^(c-1)` buckets.
    pub c: usize,
    /// Windows covering the 256 bits of a scalar.
    pub windows: usize,
    /// Buckets weighed by one work-item of the reduction.
    pub group_len: usize,
    /// Group results added by one work-item before they go to the host.
    pub run: usize,
}

/// Most terms a segment work-item sums.
const MAX_SEGMENT: usize = 512;
/// Work-items the bucket weighing aims at: a weighing work-item's additions are one serial chain
/// (two per bucket of its group, then its group's offset times their total by doubling), so the
/// groups of buckets shrink until about this many work-items share the device: 16 buckets a group
/// with 16-bit windows.
const TARGET_GROUPS: usize = 1 << 15;
/// Most group results one work-item of `msm_sum_runs` adds in a pass.
pub(super) const SUM_PASS: usize = 16;
/// Work-items per work-group for every multiexp kernel. Left to the driver, the group size must
/// divide the global size, and an awkward count of segments (a prime, say) got groups of one
/// work-item; the kernels bounds-check their index, so the global size is rounded up instead.
pub(super) const WORK_GROUP: usize = 64;

/// Buckets per block of the device's prefix sums (`SCAN_BLOCK` in `cl/multiexp.cl`).
pub(super) const SCAN_BLOCK: usize = 64;

/// Work-items of the scan of the blocks' sums (`SCAN_ITEMS` in `cl/multiexp.cl`): one work-group,
/// launched as `WORK_GROUP` items, which must be the same.
pub(super) const SCAN_ITEMS: usize = 64;
const _: () = assert!(SCAN_ITEMS == WORK_GROUP);

impl Plan {
    /// The plan for `n` terms: the window width that minimises bucket additions (`n` per window)
    /// plus bucket weighing (about three additions per bucket), between 4 and 16 bits.
    pub fn new(n: usize) -> Plan {
        let cost = |c: usize| 256usize.div_ceil(c) * (n + (3 << (c - 1)));
        let c = (4..=16).fold(4, |best, c| if cost(c) < cost(best) { c } else { best });
        Plan::with_window(c)
    }

    /// Window widths the kernels take: digits of up to 2^(c-1) and windows' buckets counted in
    /// 32-bit words (see [`Plan::new`] for the width a call gets).
    pub const WIDTHS: std::ops::RangeInclusive<usize> = 4..=22;

    /// The plan for `c`-bit windows (in [`Plan::WIDTHS`]).
    pub fn with_window(c: usize) -> Plan {
        let buckets = 1usize << (c - 1);
        let windows = 256usize.div_ceil(c);
        // A power of two between 4 and 32, and no more than the buckets of a window.
        let group_len = (windows * buckets / TARGET_GROUPS)
            .next_power_of_two()
            .clamp(4, 32)
            .min(buckets);
        let groups = buckets / group_len;
        Plan {
            c,
            windows,
            group_len,
            run: (groups / 32).max(1),
        }
    }

    /// Buckets of one window.
    pub fn buckets(&self) -> usize {
        1 << (self.c - 1)
    }

    /// Buckets of all windows.
    pub fn bucket_count(&self) -> usize {
        self.windows * self.buckets()
    }

    /// Reduction work-items: groups of buckets in all windows.
    pub(super) fn group_count(&self) -> usize {
        self.bucket_count() / self.group_len
    }

    /// Points that come back per window.
    pub(super) fn outputs_per_window(&self) -> usize {
        self.buckets() / self.group_len / self.run
    }

    /// Segment length for `total` bucket entries summed `per_launch` at a time, aiming at
    /// `items` segments per launch.
    pub(super) fn segment(total: usize, per_launch: usize, items: usize) -> usize {
        (total.min(per_launch) / items)
            .next_power_of_two()
            .clamp(16, MAX_SEGMENT)
    }
}

#[cfg(test)]
mod tests {
    use super::Plan;

    #[test]
    fn plans_widen_the_window_with_the_terms() {
        let c = |log_n: u32| Plan::new(1 << log_n).c;
        assert!(c(0) >= 4 && c(0) <= 6, "{}", c(0));
        assert!((11..=13).contains(&c(15)), "{}", c(15));
        assert_eq!(c(20), 16);
        assert_eq!(c(24), 16);
        for log_n in 0..26 {
            let plan = Plan::new(1 << log_n);
            // The windows cover 256 bits; the reduction's shape divides the buckets evenly.
            assert!(plan.windows * plan.c >= 256 && (plan.windows - 1) * plan.c < 256);
            assert_eq!(plan.buckets() % (plan.group_len * plan.run), 0);
            assert!(plan.group_len <= 32 && plan.group_len.is_power_of_two());
            assert!(plan.outputs_per_window() >= 1);
        }
        // The warm-up launches every kernel: runs of groups are summed.
        assert!(Plan::new(super::super::WARM_UP_TERMS).run > 1);
        // The passes of `msm_sum_runs` divide exactly (powers of two), and tests/gpu_multiexp.rs
        // sums them in two passes at 2^16 terms.
        for log_n in 0..27 {
            assert!(Plan::new(1 << log_n).run.is_power_of_two());
        }
        assert!(Plan::new(1 << 16).run > super::SUM_PASS);
        assert_eq!(Plan::segment(10, 1 << 23, 1 << 17), 16);
        // Each launch's share fills the device: 2^17 segments of 64 in 2^23 entries.
        assert_eq!(Plan::segment(1 << 28, 1 << 23, 1 << 17), 64);
        assert_eq!(Plan::segment(1 << 28, 1 << 30, 1 << 17), 512);
        assert_eq!(Plan::segment(1 << 28, 1 << 21, 1 << 16), 32);
        // The in-proof calls' launches: segments of 128 G1 and 64 G2 entries.
        use super::super::GpuCurve;
        use blstrs::{G1Affine, G2Affine};
        let g1 = (G1Affine::LAUNCH_ENTRIES, G1Affine::LAUNCH_SEGMENTS);
        let g2 = (G2Affine::LAUNCH_ENTRIES, G2Affine::LAUNCH_SEGMENTS);
        assert_eq!(Plan::segment(1 << 28, g1.0, g1.1), 128);
        assert_eq!(Plan::segment(1 << 28, g2.0, g2.1), 64);
    }
}
