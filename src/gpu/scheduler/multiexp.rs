//! A multiexp split between a claim's devices and the CPU: the queue of chunks, the prover's loop
//! that takes devices (each gets a worker) and computes the CPU's share from the back, and the
//! chunks left over at the end.

use super::claim::ClaimInner;
use super::cpu_share::{cpu_chunk, cpu_part, cpu_pool, cpu_takes, give_up_cpu_chunk};
use super::lock;
use super::queue::{Flight, SplitMultiexp};
use super::rates::learned;
use super::LockedKernel;
use crate::bases::Bases;
use crate::gpu::backend::MIN_GPU_TERMS;
use crate::gpu::multiexp::GpuCurve;
use crate::multicore::Pool;
use crate::multiexp::ScalarRepr;
use group::Group;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Sleep of the CPU side while the devices finish the last chunks (it also tries to take
/// devices each time).
const CPU_IDLE_STEP: Duration = Duration::from_millis(1);

impl ClaimInner {
    /// `sum_i scalars[i] * bases[i]` in chunks of `chunk_terms` over the held devices and the
    /// CPU. The lengths must match (the caller checks). Mapped bases are decoded by each chunk's
    /// worker (a device decodes its own); the error says which base is not a point on the curve.
    pub(super) fn multiexp<G: GpuCurve>(
        &self,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        chunk_terms: usize,
    ) -> Result<G::Curve, String> {
        let n = bases.len().min(scalars.len());
        let (bases, scalars) = (bases.range(0..n), &scalars[..n]);
        let chunk = chunk_terms.max(1);
        if n < MIN_GPU_TERMS {
            let mut s = self.shared();
            s.counts.cpu_chunks += 1;
            s.counts.total_chunks += 1;
            drop(s);
            return cpu_part(bases, scalars, 0..n, cpu_pool(self.priority, false));
        }
        let queue: Mutex<VecDeque<Range<usize>>> = Mutex::new(
            (0..n)
                .step_by(chunk)
                .map(|s| s..(s + chunk).min(n))
                .collect(),
        );
        self.shared().counts.total_chunks += queue_len(&queue) as u64;
        let work = SplitMultiexp {
            bases,
            scalars,
            queue,
            sum: Mutex::new(G::Curve::identity()),
            flight: Flight::default(),
            invalid: Mutex::new(None),
        };
        let held = std::mem::take(&mut *lock(&self.idle));
        let kept = self.split(&work, held);
        lock(&self.idle).extend(kept);
        self.leftover_on_cpu(&work);
        match work.invalid.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(message) => Err(message),
            None => Ok(work.sum.into_inner().unwrap_or_else(|e| e.into_inner())),
        }
    }

    /// The prover's loop over `work`: a worker for each device `held` and each device taken
    /// since, and chunks from the back on the CPU, until the queue is empty and no worker runs.
    /// Returns the devices the workers kept.
    fn split<G: GpuCurve>(
        &self,
        work: &SplitMultiexp<'_, G>,
        held: Vec<LockedKernel>,
    ) -> Vec<LockedKernel> {
        let this = self;
        let mapped = work.bases.as_slice().is_none();
        std::thread::scope(|scope| {
            let spawn = |k: LockedKernel| scope.spawn(move || this.gpu_worker(k, work));
            let mut workers: Vec<_> = held.into_iter().map(spawn).collect();
            // Free devices, and, while chunks are queued, the devices parked by their workers
            // when the queue was empty (for chunks another device's stopped call put back since).
            let take_devices = || {
                let mut fresh = this.try_take();
                if queue_len(&work.queue) > 0 {
                    fresh.extend(std::mem::take(&mut *lock(&this.idle)));
                }
                fresh
            };
            loop {
                workers.extend(take_devices().into_iter().map(spawn));
                let running = workers.iter().filter(|w| !w.is_finished()).count();
                let cpu_may_take = running > 0 || !this.waits_for_its_device();
                let pool = cpu_pool(this.priority, running > 0);
                let rates = this.rates(G::NAME, pool, mapped);
                let next = {
                    let mut q = lock(&work.queue);
                    // An empty queue ends the loop only when no worker runs: a worker whose run
                    // is preempted puts its chunks back, and with calls of `TARGET_BATCH` one run
                    // is often the whole multiexp. Those chunks are then this loop's, one at a
                    // time with a try for the devices between them, so the prover returns to a
                    // device at the next chunk boundary (handed to the CPU all at once, after
                    // the loop, they keep a 2^20 prover off the device for 1.5-2 s on the
                    // H200; docs/BENCHMARKS.md).
                    if q.is_empty() {
                        if running == 0 {
                            break;
                        }
                        None
                    } else if cpu_may_take && cpu_takes(&q, running, rates) {
                        q.pop_back().map(|range| (range, pool))
                    } else {
                        None
                    }
                };
                match next {
                    Some((range, pool)) => {
                        // The devices this claim holds, after a try for more while chunks
                        // are queued.
                        let mut held_now = || {
                            if queue_len(&work.queue) > 0 {
                                workers.extend(take_devices().into_iter().map(spawn));
                            }
                            workers.iter().filter(|w| !w.is_finished()).count()
                                + lock(&this.idle).len()
                        };
                        this.cpu_share(work, range, pool, running, &mut held_now);
                    }
                    None => std::thread::sleep(CPU_IDLE_STEP),
                }
            }
            workers
                .into_iter()
                .filter_map(|w| w.join().ok().flatten())
                .collect()
        })
    }

    /// Computes the chunk `range` of `work` on the CPU's `pool` beside `running` device workers,
    /// into the sum, and learns the CPU's speed from it; or gives it up, back to the queue, to a
    /// device that came back (`held_now` tries for devices and counts those held).
    fn cpu_share<G: GpuCurve>(
        &self,
        work: &SplitMultiexp<'_, G>,
        range: Range<usize>,
        pool: Pool,
        running: usize,
        held_now: &mut dyn FnMut() -> usize,
    ) {
        let started = Instant::now();
        let terms = range.len();
        let mapped = work.bases.as_slice().is_none();
        // Tries for the devices every `RETURN_STEP` while the chunk is computed (without the tries,
        // at 2^24 on the H200, the device stands free 20-45 ms after each high proof while a low
        // one's CPU chunk goes on), and gives the chunk up when the devices it then holds would
        // finish it, and the queue, before the CPU would.
        let given_up_at = std::cell::Cell::new(None);
        let part = cpu_chunk(
            work.bases,
            work.scalars,
            range.clone(),
            pool,
            |elapsed| {
                let held = held_now();
                let queued = lock(&work.queue).iter().map(|r| r.len()).sum::<usize>();
                let rates = self.rates(G::NAME, pool, mapped);
                give_up_cpu_chunk(queued, terms, elapsed, held, rates)
            },
            || {
                lock(&work.queue).push_back(range.clone());
                given_up_at.set(Some(Instant::now()));
            },
        );
        let part = match part {
            Ok(part) => part,
            Err(message) => return work.refuse(message),
        };
        let mut s = self.shared();
        let Some(part) = part else {
            s.counts.cpu_chunks_given_up += 1;
            drop(s);
            log::debug!(
                "gpu: a CPU chunk of {terms} terms given up after {:.1} ms: a \
                 device came back (its thread stopped after {:.1} ms)",
                given_up_at
                    .get()
                    .unwrap_or(started)
                    .duration_since(started)
                    .as_secs_f64()
                    * 1e3,
                started.elapsed().as_secs_f64() * 1e3
            );
            return;
        };
        *lock(&work.sum) += part;
        s.counts.cpu_chunks += 1;
        if running == 0 {
            // Computed with no device of ours, right after a try for one.
            let most = &mut s.counts.cpu_chunks_without_retry;
            *most = (*most).max(1);
        }
        drop(s);
        let seconds = started.elapsed().as_secs_f64();
        if seconds > 0.0 {
            learned().cpu_rate.insert(
                (G::NAME, pool, mapped),
                (terms as f64 / seconds, Instant::now()),
            );
        }
    }

    /// The chunks still queued after the prover's loop, on the CPU.
    fn leftover_on_cpu<G: GpuCurve>(&self, work: &SplitMultiexp<'_, G>) {
        // The prover's loop (`split`) ends only when the queue is empty and no worker was
        // running, and a worker puts chunks back before it ends, so nothing should be left;
        // whatever is (a worker that panicked after putting chunks back) is computed here, so
        // that every chunk is in the sum exactly once.
        let mut untried = 0;
        loop {
            let Some(range) = lock(&work.queue).pop_back() else {
                break;
            };
            let part = cpu_part(
                work.bases,
                work.scalars,
                range,
                cpu_pool(self.priority, false),
            );
            match part {
                Ok(part) => *lock(&work.sum) += part,
                Err(message) => work.refuse(message),
            }
            untried += 1;
            self.shared().counts.cpu_chunks += 1;
        }
        let mut s = self.shared();
        s.counts.cpu_chunks_without_retry = s.counts.cpu_chunks_without_retry.max(untried);
    }
}

fn queue_len(q: &Mutex<VecDeque<Range<usize>>>) -> usize {
    lock(q).len()
}
