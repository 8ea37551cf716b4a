//! A device's worker in a multiexp: it takes runs of adjacent chunks from the front of the queue,
//! one device call each, keeps the chunks of the pieces the device finished, sizes its next call
//! from the last one's time, and puts back what a stopped call did not finish.

use super::claim::ClaimInner;
use super::lock;
use super::queue::{Flight, SplitMultiexp};
use super::rates::{call_chunks, learn_gpu_rate, learned, next_batch, TARGET_BATCH};
use super::LockedKernel;
use crate::gpu::error::GpuError;
use crate::gpu::multiexp::{GpuCurve, KeepOnDevice, PieceSums, QueryKey};
use group::Group;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

/// A device and the group of its multiexp: what a batch and a speed are learned for.
type Key = (String, &'static str);

impl ClaimInner {
    /// Takes chunks from the front until the queue is empty (keeps the device) or a higher
    /// priority asks or the device fails (releases it). A device takes a run of adjacent chunks
    /// per multiexp call, as many as it computes in about [`TARGET_BATCH`] (measured on its
    /// previous run), but no more than its even share of the work left among the multiexp's
    /// workers ([`call_chunks`]): chunks stay small for the CPU's share and for the accounting, while a fast
    /// device is not slowed by a launch per small chunk. A preempted or failed run puts all its
    /// chunks back.
    pub(super) fn gpu_worker<G: GpuCurve>(
        &self,
        k: LockedKernel,
        work: &SplitMultiexp<'_, G>,
    ) -> Option<LockedKernel> {
        let (queue, flight, sum) = (&work.queue, &work.flight, &work.sum);
        let (bases, scalars) = (work.bases, work.scalars);
        let _member = flight.join();
        let key = (k.device.id.clone(), G::NAME);
        let cap = self.shared().batch_cap.get(&key).copied();
        let mut batch = learned()
            .batches
            .get(&key)
            .copied()
            .unwrap_or(1)
            .min(cap.unwrap_or(usize::MAX));
        loop {
            if k.should_yield() {
                self.release(k, true);
                return None;
            }
            let run = take_run::<G>(queue, flight, batch);
            let (Some(first), Some(last)) = (run.first(), run.last()) else {
                // Parked with the idle devices at once, where the watcher probes it: handed
                // back through the thread's end, it would go unprobed until the multiexp's loop
                // ends, which waits for the CPU's chunk in progress (183 ms seen at 2^24 on the
                // H200, all of it waited out by a high prover).
                lock(&self.idle).push(k);
                return None;
            };
            let range = first.start..last.end;
            let ends: Vec<usize> = run.iter().map(|c| c.end - range.start).collect();
            let started = Instant::now();
            let keeps = !self.shared().keep_no_bases.contains(&k.device.id);
            let keep = self
                .keep_bases
                .filter(|_| keeps)
                .map(|reserve| KeepOnDevice {
                    query: QueryKey {
                        group: G::NAME,
                        address: bases.address(),
                        len: bases.len(),
                    },
                    offset: range.start,
                    budget: k.device.kept_bases_budget(reserve),
                });
            let result = k.device.multiexp(
                bases.range(range.clone()),
                &scalars[range.clone()],
                &ends,
                &|| k.should_yield(),
                keep,
            );
            flight.chunks.fetch_sub(run.len(), Ordering::Relaxed);
            self.shared().counts.bases_uploaded_bytes += result.bases_uploaded;
            // The chunks of the pieces the device finished are in the sum, whatever stopped it
            // after them.
            let kept = result.done.min(run.len());
            self.keep_finished(&k, &result, kept, sum);
            // A call that did not stop did every piece.
            debug_assert!(result.stopped.is_some() || kept == run.len());
            let Some(e) = result.stopped else {
                log::debug!(
                    "gpu: {} computed {} chunk(s), {} terms, in {:.2?}",
                    k.device.id,
                    run.len(),
                    range.len(),
                    started.elapsed()
                );
                batch = self.learn_from_call(&key, batch, run.len(), range.len(), started);
                continue;
            };
            if let GpuError::InvalidBases(message) = e {
                // Not the device's fault: the multiexp fails, and the device is kept.
                work.refuse(message);
                lock(&self.idle).push(k);
                return None;
            }
            let since = result.finished_at.unwrap_or(started);
            let left = self.put_back_unfinished(&k, queue, run, kept, &e, since);
            if matches!(e, GpuError::OutOfMemory(_)) && self.stop_keeping_bases(&k) {
                // The kept bases took the memory: the same runs again without them.
                self.shared().counts.out_of_memory += 1;
                continue;
            }
            if let Some(smaller) = self.smaller_batch_after(&k, &key, left, &e) {
                batch = smaller;
                continue;
            }
            if matches!(e, GpuError::Interrupted) {
                self.release(k, true);
            } else {
                self.fail(k, &e);
            }
            return None;
        }
    }

    /// Adds the `kept` chunks of the pieces a call finished (and the sum of their terms) to the
    /// claim's counters and the multiexp's sum.
    fn keep_finished<C: Group>(
        &self,
        k: &LockedKernel,
        result: &PieceSums<C>,
        kept: usize,
        sum: &Mutex<C>,
    ) {
        if result.finished_on_request > 0 {
            self.shared().counts.pieces_finished_on_request += result.finished_on_request as u64;
        }
        if kept > 0 {
            *lock(sum) += result.sum;
            self.shared()
                .counts
                .add_gpu_chunks(&k.device.id, kept as u64);
        }
    }

    /// After a call that did every piece (`chunks` chunks, `terms` terms, `started` then): learns
    /// the device's speed, and returns its next batch after `batch`.
    fn learn_from_call(
        &self,
        key: &Key,
        batch: usize,
        chunks: usize,
        terms: usize,
        started: Instant,
    ) -> usize {
        let elapsed = started.elapsed();
        if !elapsed.is_zero() {
            let mut learned = learned();
            let previous = learned.gpu_rate.get(key).copied();
            let rate = learn_gpu_rate(previous, terms, elapsed, Instant::now());
            learned.gpu_rate.insert(key.clone(), rate);
        }
        let cap = self.shared().batch_cap.get(key).copied();
        let batch = next_batch(batch, chunks, elapsed, cap, TARGET_BATCH);
        learned().batches.insert(key.clone(), batch);
        batch
    }

    /// After a call that `e` stopped with `kept` chunks of its `run` finished, the last of them
    /// `since`: counts the device work lost and puts the unfinished chunks back at the front of
    /// `queue`, in order. Returns how many went back.
    fn put_back_unfinished(
        &self,
        k: &LockedKernel,
        queue: &Mutex<VecDeque<Range<usize>>>,
        run: Vec<Range<usize>>,
        kept: usize,
        e: &GpuError,
        since: Instant,
    ) -> usize {
        // The device's work on the pieces it did not finish is thrown away (their upload
        // included): part of what a preemption costs the prover beside the time it waits.
        let lost = since.elapsed();
        let mut s = self.shared();
        s.counts.device_work_lost += lost;
        s.counts.kept_chunks += kept as u64;
        drop(s);
        // Both figures per stop, so that a run's log says which calls a preemption costs most.
        log::info!(
            "gpu: {} kept {kept} of {} chunk(s) of a call that stopped ({e}); {lost:.2?} of its \
             device work thrown away",
            k.device.id,
            run.len()
        );
        let left = run.len() - kept;
        let mut q = lock(queue);
        for chunk in run.into_iter().skip(kept).rev() {
            q.push_front(chunk);
        }
        drop(q);
        left
    }

    /// After a call that `e` stopped with `left` chunks put back: when the device ran out of
    /// memory on more than one, the smaller batch it takes from now on (`None`: the device goes).
    fn smaller_batch_after(
        &self,
        k: &LockedKernel,
        key: &Key,
        left: usize,
        e: &GpuError,
    ) -> Option<usize> {
        if matches!(e, GpuError::OutOfMemory(_)) {
            let mut s = self.shared();
            s.counts.out_of_memory += 1;
            if left > 1 {
                // Fewer chunks at once, for the rest of this claim (a cap only ever comes
                // down).
                let batch = left / 2;
                let cap = s.batch_cap.entry(key.clone()).or_insert(batch);
                *cap = (*cap).min(batch);
                learned().batches.insert(key.clone(), batch);
                drop(s);
                log::info!(
                    "gpu: {} ran out of memory on {left} chunks ({e}); taking {batch}",
                    k.device.id
                );
                return Some(batch);
            }
        }
        None
    }
}

/// The run of adjacent chunks a worker takes from the front of `queue` for its next call, at
/// most `batch` ([`call_chunks`]), counted in `flight` until the call ends.
fn take_run<G: GpuCurve>(
    queue: &Mutex<VecDeque<Range<usize>>>,
    flight: &Flight,
    batch: usize,
) -> Vec<Range<usize>> {
    let mut q = lock(queue);
    let floor = q
        .front()
        .map_or(1, |c| (G::PIECE_TERMS / c.len().max(1)).max(1));
    let take = call_chunks(
        batch,
        q.len(),
        flight.chunks.load(Ordering::Relaxed),
        flight.workers.load(Ordering::Relaxed),
        floor,
    );
    let mut run: Vec<Range<usize>> = Vec::with_capacity(take);
    while run.len() < take {
        match q.front() {
            Some(next) if run.last().is_none_or(|last| last.end == next.start) => {
                run.extend(q.pop_front());
            }
            _ => break,
        }
    }
    flight.chunks.fetch_add(run.len(), Ordering::Relaxed);
    run
}
