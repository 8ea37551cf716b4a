//! One piece of a call on the device, from its scalars and bases to its sum
//! ([`MultiexpKernel::sum_piece`]): the sort (`sort.rs`), the bucket sums in segments, in
//! launches a request may stop or let finish (`finish.rs`), the folds of the buckets that cross
//! segments, the weighing of the buckets by their digits, and the host's share (`host_sum.rs`).

use super::finish::{Pace, SumsClock};
use super::fold::{FoldLevel, DIRECT_CROSSINGS};
use super::host_sum::host_sum;
use super::launch::{enqueue, interrupted, kernel_builder, launch};
use super::plan::{Plan, SUM_PASS};
use super::sort::Sorted;
use super::{GpuCurve, MultiexpKernel};
use crate::gpu::buffer::{
    receive_interruptible, settled, wait_interruptible, PhaseTimer, TrackedBuffer,
};
use crate::gpu::error::GpuError;
use crate::gpu::program::BuiltProgram;
use group::Group;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A piece's bucket sums and the parts of the buckets that cross segments, in xyzz coordinates,
/// as the launches of `msm_segments` leave them ([`MultiexpKernel::sum_segments`]).
struct SegmentSums<'a> {
    /// One point per bucket.
    buckets: TrackedBuffer<'a>,
    /// Two points per segment, its head and its tail.
    parts: TrackedBuffer<'a>,
    /// Entries summed by one segment.
    segment: usize,
    /// Segments of the piece.
    segments: usize,
}

impl MultiexpKernel {
    /// One piece of `sum_pieces`, of `n` terms (1 to `u32::MAX / 8`): its scalars and bases come
    /// from the upload thread, in that order.
    pub(super) fn sum_piece<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        n: usize,
        scalars_in: &std::sync::mpsc::Receiver<Result<TrackedBuffer<'_>, GpuError>>,
        bases_in: &std::sync::mpsc::Receiver<Result<TrackedBuffer<'_>, GpuError>>,
        interrupt: &dyn Fn() -> bool,
        bounded: bool,
    ) -> Result<(G::Curve, bool), GpuError> {
        let started = Instant::now();
        let plan = match self.window_bits.load(Ordering::Relaxed) {
            0 => Plan::new(n),
            c => Plan::with_window(c),
        };
        // The device sums the bucket counts in 32-bit words; this many entries could not wrap.
        if n as u64 * plan.windows as u64 >= 1 << 32 {
            return Err(GpuError::InvalidInput(format!(
                "{n} terms make too many bucket entries for one launch"
            )));
        }
        let mut phases = PhaseTimer::start();
        let q = built.queue.clone();
        phases.mark(&q, "program")?;
        // The sort needs only the scalars; the bases, three quarters of a G1 piece's bytes, are
        // still going up meanwhile, and are waited for before the bucket sums, the first kernel
        // to read them.
        let scalars_buf = receive_interruptible(scalars_in, interrupt)?;
        phases.mark(&q, "scalars")?;
        let sorted = self.sort_on_device::<G>(
            built,
            &scalars_buf,
            n,
            &plan,
            bounded,
            &mut phases,
            interrupt,
        )?;
        drop(scalars_buf);
        // Received even when there is nothing to sum, so that the next piece's inputs come next.
        let bases_buf = receive_interruptible(bases_in, interrupt)?;
        phases.mark(&q, "bases")?;
        let Some(sorted) = sorted else {
            return Ok((G::Curve::identity(), false));
        };
        let (total, segment) = (sorted.total, sorted.segment);

        // 3. Sum the buckets in segments of equal length, then fold the parts of the buckets that
        //    cross segments.
        let (xyzz, clock) =
            self.sum_segments::<G>(built, &plan, &bases_buf, &sorted, started, interrupt)?;
        drop((bases_buf, sorted.entries));
        phases.mark(&q, "segments")?;
        let bucket_sums = self.fold_buckets::<G>(
            built,
            &plan,
            &sorted.levels,
            sorted.tables,
            sorted.offsets_buf,
            xyzz,
        )?;
        phases.mark(&q, "folds")?;

        // 4. Weigh the buckets by their digits, in groups, and add runs of groups.
        let out = self.weigh_buckets::<G>(built, &plan, bucket_sums)?;
        phases.mark(&q, "weigh")?;
        let acc = host_sum::<G>(&out, &plan)?;
        phases.mark(&q, "host sum")?;
        let on_request = self.read_clock::<G>(&clock, n, plan.c, started, bounded);
        if let Some(steps) = phases.summary() {
            log::debug!(
                "gpu: {} multiexp piece of {n} terms (c = {}, {total} entries, segments of \
                 {segment}): {steps}",
                G::NAME,
                plan.c,
            );
        }
        Ok((acc, on_request))
    }

    /// The first half of step 3: each bucket's entries summed in segments of equal length, in
    /// launches of `msm_segments` each waited for before the next, and the clock of those launches
    /// (whether a request let the piece finish, and the pace), after them.
    fn sum_segments<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        plan: &Plan,
        bases_buf: &TrackedBuffer<'_>,
        sorted: &Sorted<'_>,
        started: Instant,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(SegmentSums<'_>, SumsClock), GpuError> {
        let q = &built.queue;
        let memory = &self.memory;
        let kernel = |name: &str, items: usize| kernel_builder::<G>(built, name, items);
        let bucket_count = plan.bucket_count();
        let (total, segment) = (sorted.total, sorted.segment);
        let segments = total.div_ceil(segment);
        // The segments' sums in xyzz coordinates (four per point), converted to Jacobian ones
        // (three) after the launches, for the folds and the weighing.
        let xyzz_limbs = 4 * G::COORD_LIMBS;
        let bucket_xyzz = TrackedBuffer::new(q, bucket_count * xyzz_limbs, None, memory)?;
        let parts_xyzz = TrackedBuffer::new(q, 2 * segments * xyzz_limbs, None, memory)?;
        // In launches of about `LAUNCH_ENTRIES` entries, each waited for (probing) before the
        // next: a whole 2^20-term G2 call's sums are one long kernel a request would wait out.
        // A request that comes when little of the piece is left lets it finish (`finish`).
        let per_launch = (sorted.launch_entries / segment).max(1);
        let grace = Duration::from_micros(self.finish_grace_us.load(Ordering::Relaxed));
        let pace = self.pace_of(G::NAME, plan.c);
        let clock = std::cell::RefCell::new(SumsClock::new(started, total, pace, grace));
        let ask = || {
            let finishing = clock.borrow().finishing();
            !finishing && interrupt() && !clock.borrow_mut().finish()
        };
        for first in (0..segments).step_by(per_launch) {
            let end = first.saturating_add(per_launch).min(segments);
            interrupted(q, &ask)?;
            clock
                .borrow_mut()
                .launched((end * segment).min(total) - first * segment);
            self.segment_launches.fetch_add(1, Ordering::Relaxed);
            let done = enqueue(
                &kernel("msm_segments", end - first)
                    .arg(&**bases_buf)
                    .arg(&*sorted.entries)
                    .arg(&*sorted.offsets_buf)
                    .arg(&*bucket_xyzz)
                    .arg(&*parts_xyzz)
                    .arg(total as u32)
                    .arg(segment as u32)
                    .arg(bucket_count as u32)
                    .arg(first as u32)
                    .arg(end as u32)
                    .build()?,
            )?;
            settled(q, wait_interruptible(q, &done, &ask))?;
            clock.borrow_mut().landed();
        }
        let mut clock = clock.into_inner();
        clock.summed();
        let sums = SegmentSums {
            buckets: bucket_xyzz,
            parts: parts_xyzz,
            segment,
            segments,
        };
        Ok((sums, clock))
    }

    /// The second half of step 3: the segments' sums converted from xyzz to Jacobian coordinates,
    /// then the parts of each bucket that crosses segments added to it, by one work-item a bucket
    /// (`msm_fold_direct`) and, for the long buckets, in the passes the host planned (`msm_fold`).
    /// Each buffer is freed once the kernels after it no longer need it; the bucket sums are left.
    fn fold_buckets<'a, G: GpuCurve>(
        &'a self,
        built: &BuiltProgram,
        plan: &Plan,
        levels: &[FoldLevel],
        tables: Vec<(TrackedBuffer<'a>, TrackedBuffer<'a>)>,
        offsets_buf: TrackedBuffer<'a>,
        xyzz: SegmentSums<'a>,
    ) -> Result<TrackedBuffer<'a>, GpuError> {
        let q = &built.queue;
        let memory = &self.memory;
        let kernel = |name: &str, items: usize| kernel_builder::<G>(built, name, items);
        let point_limbs = 3 * G::COORD_LIMBS;
        let bucket_count = plan.bucket_count();
        let SegmentSums {
            buckets: bucket_xyzz,
            parts: parts_xyzz,
            segment,
            segments,
        } = xyzz;
        let bucket_sums = TrackedBuffer::new(q, bucket_count * point_limbs, None, memory)?;
        let parts = TrackedBuffer::new(q, 2 * segments * point_limbs, None, memory)?;
        for (from, to, count) in [
            (&bucket_xyzz, &bucket_sums, bucket_count),
            (&parts_xyzz, &parts, 2 * segments),
        ] {
            launch(
                &kernel("msm_from_xyzz", count)
                    .arg(&**from)
                    .arg(&**to)
                    .arg(count as u32)
                    .build()?,
            )?;
        }
        drop((bucket_xyzz, parts_xyzz));
        // From here on nothing is interrupted: the folds and the weighing take a few milliseconds
        // (about 5 at 2^20 G1 terms on the H200), the call is nearly done, and an interrupted
        // call's device work is lost. The worker yields when the call returns.
        launch(
            &kernel("msm_fold_direct", bucket_count)
                .arg(&*parts)
                .arg(&*offsets_buf)
                .arg(&*bucket_sums)
                .arg(bucket_count as u32)
                .arg(segment.trailing_zeros())
                .arg(DIRECT_CROSSINGS as u32)
                .build()?,
        )?;
        drop(offsets_buf);
        let mut input = parts;
        for (level, (ranges, dest)) in levels.iter().zip(tables) {
            let jobs = level.dest.len();
            let output = if level.last {
                None
            } else {
                Some(TrackedBuffer::new(q, jobs * point_limbs, None, memory)?)
            };
            launch(
                &kernel("msm_fold", jobs)
                    .arg(&*input)
                    .arg(&*ranges)
                    .arg(&*dest)
                    .arg(output.as_deref().unwrap_or(&bucket_sums))
                    .arg(jobs as u32)
                    .build()?,
            )?;
            if let Some(output) = output {
                input = output;
            }
        }
        drop(input);
        Ok(bucket_sums)
    }

    /// Step 4: the buckets weighed by their digits, in groups (`msm_reduce`), runs of groups added
    /// (`msm_sum_runs`), and the sums brought back, with every device buffer of the piece freed.
    fn weigh_buckets<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        plan: &Plan,
        bucket_sums: TrackedBuffer<'_>,
    ) -> Result<Vec<u32>, GpuError> {
        let q = &built.queue;
        let memory = &self.memory;
        let kernel = |name: &str, items: usize| kernel_builder::<G>(built, name, items);
        let point_limbs = 3 * G::COORD_LIMBS;
        let groups = plan.group_count();
        let group_sums = TrackedBuffer::new(q, groups * point_limbs, None, memory)?;
        launch(
            &kernel("msm_reduce", groups)
                .arg(&*bucket_sums)
                .arg(&*group_sums)
                .arg(plan.c as u32)
                .arg(plan.windows as u32)
                .arg(plan.group_len as u32)
                .build()?,
        )?;
        drop(bucket_sums);
        // Runs of groups are added in passes of at most `SUM_PASS` points per work-item: each
        // work-item's additions are a serial chain, and few long chains leave the device idle.
        let mut summed = group_sums;
        let mut count = groups;
        let mut left = plan.run;
        while left > 1 {
            let run = left.min(SUM_PASS);
            count /= run;
            let out = TrackedBuffer::new(q, count * point_limbs, None, memory)?;
            launch(
                &kernel("msm_sum_runs", count)
                    .arg(&*summed)
                    .arg(&*out)
                    .arg(count as u32)
                    .arg(run as u32)
                    .build()?,
            )?;
            summed = out;
            left /= run;
        }
        let outputs = plan.windows * plan.outputs_per_window();
        debug_assert_eq!(count, outputs);
        // The sums come back in Jacobian form: blst adds them as they are, and the inversions a
        // conversion to affine needs take one long serial work-item each on the device.
        let mut out = vec![0u32; outputs * point_limbs];
        // Blocking: after every kernel above.
        summed.read(&mut out).queue(q).enq()?;
        // Every device buffer is freed here, before the host's share of the work.
        drop(summed);
        Ok(out)
    }

    /// What a summed piece's clock says: its pace, remembered for the next piece of its group and
    /// window width `c` when the piece was `bounded`, and whether a request let it finish
    /// (counted and logged).
    fn read_clock<G: GpuCurve>(
        &self,
        clock: &SumsClock,
        n: usize,
        c: usize,
        started: Instant,
        bounded: bool,
    ) -> bool {
        if bounded {
            // Unbounded calls sum in one long launch, a little faster per entry.
            self.remember_pace(G::NAME, c, clock.pace());
        }
        let on_request = clock.finished_on_request();
        if on_request {
            self.pieces_finished_on_request
                .fetch_add(1, Ordering::Relaxed);
            log::debug!(
                "gpu: {} piece of {n} terms finished under a request ({:.2?} into it)",
                G::NAME,
                started.elapsed()
            );
        }
        on_request
    }

    /// The last pace learned for `group`'s pieces of window width `c` on this kernel (none yet:
    /// nothing is finished under a request).
    fn pace_of(&self, group: &'static str, c: usize) -> Pace {
        let paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        paces.get(&(group, c)).copied().unwrap_or_default()
    }

    fn remember_pace(&self, group: &'static str, c: usize, pace: Pace) {
        let mut paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        paces.insert((group, c), pace);
    }
}
