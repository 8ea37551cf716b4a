//! The fold passes of a multiexp's long buckets (`msm_fold` in `cl/multiexp.cl`): a bucket whose
//! entries cross more than `DIRECT_CROSSINGS` segment borders is not finished by one work-item
//! (`msm_fold_direct`) but in passes of at most `FOLD` points each, which the host plans from the
//! list of such buckets that the device makes (`msm_long_buckets`).

/// Most points a fold work-item adds. A bucket that crosses many segments (the top window, where
/// the few bits left over crowd the terms into a handful of buckets, or equal scalars) is folded
/// in passes of this fan-in: summed in one work-item, a dozen such buckets cost a 2^15-term G2
/// call 30 ms (H200; docs/BENCHMARKS.md).
pub(super) const FOLD: usize = 16;

/// One launch of `msm_fold`: job `j` adds the points `ranges[2j]..ranges[2j + 1]` of its input and
/// writes the sum to point `dest[j]` of its output.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct FoldLevel {
    pub(super) ranges: Vec<u32>,
    pub(super) dest: Vec<u32>,
    /// The output is the bucket sums (the last level); otherwise a new buffer of one point per job.
    pub(super) last: bool,
}

/// Segment borders a bucket may cross and still be finished by `msm_fold_direct` (one work-item
/// per bucket adds its parts, at most this many plus one). Only longer buckets (the top window's
/// few crowded ones, or equal scalars) are planned on the host: planning every crossing bucket
/// there takes 5-10 ms of a 2^20-term call (16-bit windows, 2^19 buckets) before any sum began.
pub(super) const DIRECT_CROSSINGS: usize = 16;

/// A bucket that crosses more than `DIRECT_CROSSINGS` segment borders, as `msm_long_buckets`
/// lists it: its parts are `first_part..end_part` of the interleaved heads and tails (its first
/// segment's tail, then the heads of the segments after).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct LongBucket {
    pub(super) bucket: u32,
    pub(super) first_part: u32,
    pub(super) end_part: u32,
}

/// The buckets of `offsets` (one more than the buckets) that need planned folds with segments of
/// `segment` entries (a power of two): the host's model of `msm_long_buckets`.
#[cfg(test)]
pub(super) fn long_buckets(offsets: &[u32], segment: usize) -> Vec<LongBucket> {
    let shift = segment.trailing_zeros();
    let mut long = Vec::new();
    for (k, w) in offsets.windows(2).enumerate() {
        let (a, e) = (w[0], w[1]);
        if a == e {
            continue;
        }
        let (first, last) = (a >> shift, (e - 1) >> shift);
        if (last - first) as usize > DIRECT_CROSSINGS {
            long.push(LongBucket {
                bucket: k as u32,
                first_part: 2 * first + 1,
                end_part: 2 * last + 1,
            });
        }
    }
    long
}

/// The most buckets `msm_long_buckets` can list for `total` entries in segments of `segment`:
/// each crosses more than `DIRECT_CROSSINGS` borders, so it holds at least
/// `DIRECT_CROSSINGS * segment + 2` entries (from the last entry of one segment to the first of
/// the `DIRECT_CROSSINGS + 1`-th after).
pub(super) fn long_bucket_capacity(total: usize, segment: usize) -> usize {
    total / (DIRECT_CROSSINGS * segment) + 1
}

/// The passes that finish the `long` buckets (in bucket order) that `msm_segments` and
/// `msm_fold_direct` left: each one's parts are added `FOLD` at a time until one point is left,
/// which the last pass writes to the bucket.
pub(super) fn fold_levels(long: &[LongBucket]) -> Vec<FoldLevel> {
    // (bucket, range of its points in this pass's input)
    let mut spans: Vec<(u32, u32, u32)> = long
        .iter()
        .map(|b| (b.bucket, b.first_part, b.end_part))
        .collect();
    let mut levels = Vec::new();
    while !spans.is_empty() {
        let last = spans.iter().all(|&(_, s, e)| (e - s) as usize <= FOLD);
        let mut level = FoldLevel {
            last,
            ..FoldLevel::default()
        };
        let mut next = Vec::with_capacity(spans.len());
        for &(k, start, end) in &spans {
            let first_job = level.dest.len() as u32;
            let mut at = start;
            while at < end {
                let to = end.min(at + FOLD as u32);
                level.ranges.extend([at, to]);
                level
                    .dest
                    .push(if last { k } else { level.dest.len() as u32 });
                at = to;
            }
            next.push((k, first_job, level.dest.len() as u32));
        }
        if last {
            next.clear();
        }
        levels.push(level);
        spans = next;
    }
    levels
}

/// Offsets of buckets with these counts, and their total (for tests).
#[cfg(test)]
pub(super) fn offsets_of(counts: &[u32]) -> (Vec<u32>, usize) {
    let mut offsets = vec![0u32];
    for c in counts {
        offsets.push(offsets.last().unwrap() + c);
    }
    let total = *offsets.last().unwrap() as usize;
    (offsets, total)
}

#[cfg(test)]
mod tests {
    use super::{
        fold_levels, long_bucket_capacity, long_buckets, offsets_of, DIRECT_CROSSINGS, FOLD,
    };

    /// `msm_segments` then the fold passes, on integers: entry `j` is worth `j + 1`, and every
    /// bucket must end as the sum of its entries, with no pass adding more than `FOLD` points
    /// and no range or destination outside its buffer.
    fn fold_on_integers(counts: &[u32], segment: usize) -> usize {
        let (offsets, total) = offsets_of(counts);
        let buckets = counts.len();
        let mut sums = vec![None; buckets];
        let segments = total.div_ceil(segment);
        // msm_segments, step by step as the kernel's flat loop does it; every part must be
        // written (the identity is 0).
        let mut parts: Vec<Option<u64>> = vec![None; 2 * segments];
        for s in 0..segments {
            let (start, end) = (s * segment, ((s + 1) * segment).min(total));
            // The bucket holding entry `start`: the last k with offsets[k] <= start.
            let mut k = offsets[..buckets].partition_point(|&o| o as usize <= start) - 1;
            let mut head_open = (offsets[k] as usize) < start;
            if !head_open {
                parts[2 * s] = Some(0);
            }
            let mut border = offsets[k + 1] as usize;
            let mut acc = 0u64;
            for j in start..end {
                if j == border {
                    if head_open {
                        parts[2 * s] = Some(acc);
                    } else {
                        assert!(sums[k].is_none(), "bucket {k} written twice");
                        sums[k] = Some(acc);
                    }
                    head_open = false;
                    acc = 0;
                    k += 1;
                    while offsets[k + 1] as usize <= j {
                        k += 1;
                    }
                    border = offsets[k + 1] as usize;
                }
                acc += j as u64 + 1;
            }
            let tail = !head_open && border > end;
            if head_open {
                parts[2 * s] = Some(acc);
            } else if !tail {
                assert!(sums[k].is_none(), "bucket {k} written twice");
                sums[k] = Some(acc);
            }
            parts[2 * s + 1] = Some(if tail { acc } else { 0 });
        }
        let parts: Vec<u64> = parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| p.unwrap_or_else(|| panic!("part {i} never written")))
            .collect();
        // msm_fold_direct: empty buckets, and crossing ones of at most DIRECT_CROSSINGS borders.
        for k in 0..buckets {
            let (a, e) = (offsets[k] as usize, offsets[k + 1] as usize);
            if a == e {
                assert!(sums[k].is_none());
                sums[k] = Some(0);
                continue;
            }
            let (first, last) = (a / segment, (e - 1) / segment);
            if first < last && last - first <= DIRECT_CROSSINGS {
                assert!(sums[k].is_none(), "bucket {k} written twice");
                let heads: u64 = (first + 1..=last).map(|s| parts[2 * s]).sum();
                sums[k] = Some(parts[2 * first + 1] + heads);
            }
        }
        let levels = fold_levels(&long_buckets(&offsets, segment));
        let mut input = parts;
        for (i, level) in levels.iter().enumerate() {
            assert_eq!(level.last, i + 1 == levels.len());
            assert_eq!(level.ranges.len(), 2 * level.dest.len());
            let mut output = vec![0u64; level.dest.len()];
            for (job, &dest) in level.dest.iter().enumerate() {
                let (a, e) = (
                    level.ranges[2 * job] as usize,
                    level.ranges[2 * job + 1] as usize,
                );
                assert!(a <= e && e <= input.len() && e - a <= FOLD);
                let acc = input[a..e].iter().sum();
                if level.last {
                    assert!(sums[dest as usize].is_none(), "bucket {dest} written twice");
                    sums[dest as usize] = Some(acc);
                } else {
                    output[dest as usize] = acc;
                }
            }
            input = output;
        }
        for k in 0..buckets {
            let want: u64 = (offsets[k]..offsets[k + 1]).map(|j| j as u64 + 1).sum();
            assert_eq!(sums[k], Some(want), "bucket {k}");
        }
        levels.len()
    }

    #[test]
    fn long_buckets_fit_the_list_the_device_fills() {
        for segment in [16usize, 64, 512] {
            // Long buckets as short as they can be: each from the last entry of a segment to the
            // first entry DIRECT_CROSSINGS + 1 segments later, a filler bucket between them.
            let shortest = (DIRECT_CROSSINGS * segment + 2) as u32;
            let mut counts = vec![segment as u32 - 1];
            for _ in 0..50 {
                counts.extend([shortest, segment as u32 - 2]);
            }
            let (offsets, total) = offsets_of(&counts);
            let long = long_buckets(&offsets, segment);
            assert_eq!(long.len(), 50, "segments of {segment}");
            assert!(long.len() <= long_bucket_capacity(total, segment));
            // One entry fewer (given to the filler after it) and the first crosses only
            // DIRECT_CROSSINGS borders.
            counts[1] -= 1;
            counts[2] += 1;
            let (offsets, _) = offsets_of(&counts);
            let long = long_buckets(&offsets, segment);
            assert_eq!(
                (long.len(), long[0].bucket),
                (49, 3),
                "segments of {segment}"
            );
            // Skewed counts: a few huge buckets among small ones.
            let counts: Vec<u32> = (0..5000u32)
                .map(|k| {
                    if k % 97 == 0 {
                        40 * segment as u32 + k
                    } else {
                        k % 13
                    }
                })
                .collect();
            let (offsets, total) = offsets_of(&counts);
            let long = long_buckets(&offsets, segment);
            assert!(!long.is_empty() && long.len() <= long_bucket_capacity(total, segment));
        }
    }

    #[test]
    fn folds_finish_every_bucket_in_bounded_passes() {
        // Even buckets, buckets of about a segment, empty ones, and one bucket of 5000 entries
        // (313 segments: 624 parts after its first tail, three passes of 16).
        let mut counts: Vec<u32> = (0..200).map(|k| (k * 7 % 23) as u32).collect();
        counts[50] = 5000;
        counts[51] = 0;
        assert_eq!(fold_on_integers(&counts, 16), 3);
        // Nothing crosses a segment or only a few borders, and empty buckets: no planned pass.
        assert_eq!(fold_on_integers(&[16; 10], 16), 0);
        assert_eq!(fold_on_integers(&[16, 0, 16], 16), 0);
        assert_eq!(fold_on_integers(&[0, 0, 0], 16), 0);
        assert_eq!(fold_on_integers(&[40, 3, 100], 32), 0);
        // A bucket that crosses DIRECT_CROSSINGS borders is direct; one that crosses one more is
        // planned (34 parts: three jobs, then one), wherever in a segment it starts.
        let direct = (DIRECT_CROSSINGS * 16) as u32 + 1;
        assert_eq!(fold_on_integers(&[15, direct, 3], 16), 0);
        assert_eq!(fold_on_integers(&[15, direct + 16, 3], 16), 2);
        assert_eq!(fold_on_integers(&[16, direct + 15, 3], 16), 0);
        assert_eq!(fold_on_integers(&[16, direct + 16, 3], 16), 2);
    }
}
