//! Steps 1 and 2 of a piece on the device ([`MultiexpKernel::sort_on_device`]): the terms of
//! each bucket counted and the counts turned into offsets, the long buckets listed and their
//! folds planned, then the terms sorted by bucket ([`Sorted`]).

use super::fold::{fold_levels, long_bucket_capacity, FoldLevel, LongBucket, DIRECT_CROSSINGS};
use super::launch::{enqueue, interrupted, kernel_builder, launch, read_u32s};
use super::plan::{Plan, SCAN_BLOCK, SCAN_ITEMS};
use super::{GpuCurve, MultiexpKernel};
use crate::gpu::buffer::{settled, wait_interruptible, PhaseTimer, TrackedBuffer};
use crate::gpu::error::GpuError;
use crate::gpu::program::BuiltProgram;
use std::sync::atomic::Ordering;

/// The terms of one call sorted by bucket on the device ([`MultiexpKernel::sort_on_device`]).
pub(super) struct Sorted<'a> {
    /// The terms' indices (and signs), bucket after bucket.
    pub(super) entries: TrackedBuffer<'a>,
    /// Where each bucket's entries begin, and one more: their total.
    pub(super) offsets_buf: TrackedBuffer<'a>,
    /// Bucket entries: the nonzero digits.
    pub(super) total: usize,
    /// Entries summed by one work-item of `msm_segments`.
    pub(super) segment: usize,
    /// The fold passes of the long buckets, and their tables on the device.
    pub(super) levels: Vec<FoldLevel>,
    pub(super) tables: Vec<(TrackedBuffer<'a>, TrackedBuffer<'a>)>,
    /// Entries per launch of `msm_segments`.
    pub(super) launch_entries: usize,
}

impl MultiexpKernel {
    /// Steps 1 and 2 of a piece on `queue`, from its `n` scalars on the device: counts the terms
    /// of each bucket (the device turns the counts into offsets and lists the long buckets, whose
    /// folds the host plans) and sorts the terms by bucket. `None` when every digit is zero.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sort_on_device<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        scalars_buf: &TrackedBuffer<'_>,
        n: usize,
        plan: &Plan,
        bounded: bool,
        phases: &mut PhaseTimer,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Option<Sorted<'_>>, GpuError> {
        let bucket_count = plan.bucket_count();
        let q = &built.queue;
        let memory = &self.memory;
        let kernel = |name: &str, items: usize| kernel_builder::<G>(built, name, items);

        // 1. Count the terms of each bucket, and turn the counts into offsets on the device.
        let Some((cursor, offsets_buf, total)) =
            self.count_buckets::<G>(built, scalars_buf, n, plan, interrupt)?
        else {
            return Ok(None);
        };
        // The fold passes' tables go up now, while the queue is nearly empty: uploaded after the
        // segments' launch, each would wait for that kernel.
        let launch_entries = match self.launch_entries.load(Ordering::Relaxed) {
            0 if bounded => G::LAUNCH_ENTRIES,
            0 => usize::MAX,
            limit => limit,
        };
        let segment = Plan::segment(total, launch_entries, G::LAUNCH_SEGMENTS);
        let long =
            self.long_buckets::<G>(built, &offsets_buf, bucket_count, total, segment, interrupt)?;
        let levels = fold_levels(&long);
        let tables = levels
            .iter()
            .map(|level| {
                Ok((
                    self.upload_table(built, &level.ranges, interrupt)?,
                    self.upload_table(built, &level.dest, interrupt)?,
                ))
            })
            .collect::<Result<Vec<_>, GpuError>>()?;
        phases.mark(q, "count")?;

        // 2. Sort the terms by bucket.
        let entries = TrackedBuffer::new(q, total, None, memory)?;
        interrupted(q, interrupt)?;
        let done = enqueue(
            &kernel("msm_scatter", n)
                .arg(&**scalars_buf)
                .arg(&*cursor)
                .arg(&*entries)
                .arg(n as u32)
                .arg(plan.c as u32)
                .arg(plan.windows as u32)
                .build()?,
        )?;
        settled(q, wait_interruptible(q, &done, interrupt))?;
        phases.mark(q, "scatter")?;
        Ok(Some(Sorted {
            entries,
            offsets_buf,
            total,
            segment,
            levels,
            tables,
            launch_entries,
        }))
    }

    /// Step 1's count, from a piece's `n` scalars on the device: the terms of each bucket counted
    /// (the counters are the scatter's cursors after) and the counts turned into offsets, whose
    /// total, the bucket entries, comes back. The counters, the offsets and their total; `None`
    /// when every digit is zero.
    fn count_buckets<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        scalars_buf: &TrackedBuffer<'_>,
        n: usize,
        plan: &Plan,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Option<(TrackedBuffer<'_>, TrackedBuffer<'_>, usize)>, GpuError> {
        let bucket_count = plan.bucket_count();
        let q = &built.queue;
        let memory = &self.memory;
        let kernel = |name: &str, items: usize| kernel_builder::<G>(built, name, items);
        let cursor = TrackedBuffer::new(q, bucket_count, None, memory)?;
        cursor.cmd().fill(0, None).enq()?;
        interrupted(q, interrupt)?;
        launch(
            &kernel("msm_count", n)
                .arg(&**scalars_buf)
                .arg(&*cursor)
                .arg(n as u32)
                .arg(plan.c as u32)
                .arg(plan.windows as u32)
                .build()?,
        )?;
        // The offsets are summed on the device; only their total and the few long buckets come
        // back (see `cl/multiexp.cl`).
        let blocks = bucket_count.div_ceil(SCAN_BLOCK);
        let sums = TrackedBuffer::new(q, blocks, None, memory)?;
        let offsets_buf = TrackedBuffer::new(q, bucket_count + 1, None, memory)?;
        launch(
            &kernel("msm_block_sums", blocks)
                .arg(&*cursor)
                .arg(&*sums)
                .arg(bucket_count as u32)
                .build()?,
        )?;
        launch(
            &kernel("msm_scan_sums", SCAN_ITEMS)
                .arg(&*sums)
                .arg(blocks as u32)
                .arg(&*offsets_buf)
                .arg(bucket_count as u32)
                .build()?,
        )?;
        let summed = enqueue(
            &kernel("msm_block_offsets", blocks)
                .arg(&*cursor)
                .arg(&*sums)
                .arg(&*offsets_buf)
                .arg(bucket_count as u32)
                .build()?,
        )?;
        // Waited for while probing (the count and its sums take milliseconds at 2^24); the read
        // after it then finds the queue done.
        settled(q, wait_interruptible(q, &summed, interrupt))?;
        let total = read_u32s(q, &offsets_buf, bucket_count, 1)?[0] as usize;
        if total >= 1 << 31 {
            return Err(GpuError::InvalidInput(format!(
                "{n} terms make too many bucket entries for one launch"
            )));
        }
        if total == 0 {
            return Ok(None);
        }
        drop(sums);
        Ok(Some((cursor, offsets_buf, total)))
    }

    /// `data` in a new buffer on the device. Small tables (the fold ranges) cross through the
    /// pinned staging memory too: from ordinary memory a 2 MiB table (16-bit windows) takes over a
    /// millisecond each way.
    fn upload_table(
        &self,
        built: &BuiltProgram,
        data: &[u32],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<TrackedBuffer<'_>, GpuError> {
        let q = &built.queue;
        let buffer = TrackedBuffer::new(q, data.len(), None, &self.memory)?;
        built.with_staging(|staging| {
            staging.upload(
                q,
                &buffer,
                data.len(),
                1,
                &|start, out| out.copy_from_slice(&data[start..start + out.len()]),
                interrupt,
            )
        })?;
        Ok(buffer)
    }

    /// The buckets of a sorted call that need planned folds ([`LongBucket`]), listed on the
    /// device from its `offsets` and read back in bucket order.
    fn long_buckets<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        offsets: &TrackedBuffer,
        bucket_count: usize,
        total: usize,
        segment: usize,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<LongBucket>, GpuError> {
        let q = &built.queue;
        let capacity = long_bucket_capacity(total, segment);
        let count = TrackedBuffer::new(q, 1, Some(&[0]), &self.memory)?;
        let list = TrackedBuffer::new(q, 3 * capacity, None, &self.memory)?;
        let listed = enqueue(
            &kernel_builder::<G>(built, "msm_long_buckets", bucket_count)
                .arg(&**offsets)
                .arg(bucket_count as u32)
                .arg(segment.trailing_zeros())
                .arg(DIRECT_CROSSINGS as u32)
                .arg(&*count)
                .arg(&*list)
                .arg(capacity as u32)
                .build()?,
        )?;
        settled(q, wait_interruptible(q, &listed, interrupt))?;
        let found = read_u32s(q, &count, 0, 1)?[0] as usize;
        if found > capacity {
            return Err(GpuError::WrongResult(format!(
                "{found} long buckets listed, at most {capacity} possible"
            )));
        }
        if found == 0 {
            return Ok(Vec::new());
        }
        let mut long: Vec<LongBucket> = read_u32s(q, &list, 0, 3 * found)?
            .chunks_exact(3)
            .map(|b| LongBucket {
                bucket: b[0],
                first_part: b[1],
                end_part: b[2],
            })
            .collect();
        long.sort_unstable();
        Ok(long)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fold::{long_buckets, offsets_of};

    #[test]
    fn the_device_lists_the_long_buckets_of_its_host_model() {
        use super::{MultiexpKernel, TrackedBuffer};
        let device = crate::gpu::device::first_for_tests();
        let kernel = MultiexpKernel::new(&device).expect("kernel");
        let built = kernel
            .program(<blstrs::G1Affine as super::GpuCurve>::NAME)
            .expect("build");
        let segment = 16;
        // Long buckets scattered among short and empty ones, none, and every bucket long.
        let mixed: Vec<u32> = (0..3000u32)
            .map(|k| match k % 101 {
                0 => 17 * 16 + k % 50,
                1 => 0,
                _ => k % 29,
            })
            .collect();
        for (counts, want) in [
            (mixed, None),
            (vec![5; 400], Some(0)),
            (vec![300; 64], Some(64)),
        ] {
            let (offsets, total) = offsets_of(&counts);
            let buffer =
                TrackedBuffer::new(&built.queue, offsets.len(), Some(&offsets), &kernel.memory)
                    .expect("offsets");
            let listed = kernel
                .long_buckets::<blstrs::G1Affine>(
                    &built,
                    &buffer,
                    counts.len(),
                    total,
                    segment,
                    &|| false,
                )
                .expect("listed");
            assert_eq!(listed, long_buckets(&offsets, segment));
            if let Some(want) = want {
                assert_eq!(listed.len(), want);
            } else {
                assert!(!listed.is_empty());
            }
        }
    }
}
