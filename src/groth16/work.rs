//! Where one proof's FFTs and multiexps run ([`Work`]): through its GPU claim when the `gpu`
//! feature has devices, else on the CPU; the quotient put off when a higher priority takes the
//! device, and each multiexp's scalars made beside the multiexp before it.

use super::assignment::mismatch;
use super::options::{Priority, ProofReport, ProveOptions};
use crate::curve::CurveAffine;
use crate::domain::QuotientSteps;
use crate::free::free_in_background;
use crate::multicore;
use crate::multiexp::{multiexp, scalar_reprs, LengthMismatch, ScalarRepr};
use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use std::time::{Duration, Instant};

/// How long a put-off quotient waits for a device, per value: about a third of the CPU's time for
/// it on the 16 cores of the H200 host (23 s at 2^24, 1.4 us per value), so waiting for a device
/// held by short higher-priority proofs beats the CPU, and a device that stays busy costs at most
/// a third more than going to the CPU at once.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
const QUOTIENT_WAIT_PER_VALUE: Duration = Duration::from_nanos(500);
/// Sleep between tries for that device (one try is a few system calls).
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
const QUOTIENT_RETRY_SLEEP: Duration = Duration::from_millis(4);

/// The quotient polynomial's coefficients (as the H multiexp reads them), or the evaluations it
/// is made from when it was put off ([`Work::quotient_or_defer`]).
pub(super) enum Quotient {
    Done(Vec<ScalarRepr>),
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    Deferred(QuotientSteps),
}

/// Where one proof's FFTs and multiexps run: through its GPU claim (devices and the CPU, under
/// the lock protocol) when the `gpu` feature has devices, else on the CPU.
pub(super) struct Work {
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    chunk_terms: usize,
    /// Multiexps computed whole on the CPU (no claim).
    cpu_multiexps: u64,
    /// A higher priority interrupted the quotient on a device and it was put off.
    quotient_deferred: bool,
    /// Steps of a put-off quotient done on a device (of 4: three inputs moved to the coset, and
    /// the rest).
    quotient_steps_on_gpu: u64,
    /// Of those, steps of the first try kept when it was interrupted.
    quotient_first_try_steps: u64,
    /// Time the put-off quotient waited for a device (its tries that found every device busy,
    /// and the sleeps between tries).
    quotient_wait: Duration,
    /// Whether the quotient's first try on a device goes in steps
    /// ([`ProveOptions::stepped_quotient_from`]).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(super) stepped_first_try: bool,
    /// When the work began (the debug log places each multiexp from here, so that the time
    /// between them shows).
    begun: Instant,
    #[cfg(feature = "gpu")]
    claim: Option<crate::gpu::scheduler::GpuClaim>,
}

impl Work {
    /// The work of a proof whose quotient domain has `domain_size` values.
    pub(super) fn new(options: &ProveOptions, domain_size: usize) -> Work {
        #[cfg(not(feature = "gpu"))]
        let _ = options.use_gpu;
        Work {
            chunk_terms: options.chunk_terms,
            cpu_multiexps: 0,
            quotient_deferred: false,
            quotient_steps_on_gpu: 0,
            quotient_first_try_steps: 0,
            quotient_wait: Duration::ZERO,
            stepped_first_try: options.priority == Priority::Low
                && domain_size >= options.stepped_quotient_from,
            begun: Instant::now(),
            #[cfg(feature = "gpu")]
            claim: if options.use_gpu {
                crate::gpu::scheduler::GpuClaim::new(options.priority, options.devices.as_deref())
            } else {
                None
            },
        }
    }

    /// The quotient put off by [`Work::quotient_or_defer`]: on a device, waiting for one while
    /// other provers hold them (retried when preempted again) for up to
    /// [`QUOTIENT_WAIT_PER_VALUE`] per value, else on the CPU. It goes in steps whose results are
    /// kept ([`QuotientSteps`]): a device taken away again loses only the step it was in, so the
    /// quotient moves on in the short stretches a busy device leaves, and the CPU goes on from
    /// the last finished step.
    #[cfg_attr(not(feature = "gpu"), allow(unused_mut))]
    pub(super) fn deferred_quotient(
        &mut self,
        mut steps: QuotientSteps,
    ) -> Result<Vec<ScalarRepr>, SynthesisError> {
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim.as_mut() {
            use crate::gpu::scheduler::QuotientOnGpu;
            let most = Duration::from_nanos(
                QUOTIENT_WAIT_PER_VALUE.as_nanos() as u64 * steps.values().max(1) as u64,
            );
            let started = Instant::now();
            loop {
                let before = steps.steps_done();
                let tried = Instant::now();
                let result = claim.quotient_steps(&mut steps);
                if matches!(result, QuotientOnGpu::Busy) {
                    self.quotient_wait += tried.elapsed();
                }
                // Inputs a device moved to the coset, and the last step if it finished.
                self.quotient_steps_on_gpu += steps.steps_done().saturating_sub(before) as u64;
                match result {
                    QuotientOnGpu::Done(h) => {
                        self.quotient_steps_on_gpu += 1;
                        free_in_background(steps);
                        return Ok(h);
                    }
                    QuotientOnGpu::Preempted | QuotientOnGpu::Busy if started.elapsed() < most => {
                        let slept = Instant::now();
                        std::thread::sleep(QUOTIENT_RETRY_SLEEP);
                        self.quotient_wait += slept.elapsed();
                    }
                    QuotientOnGpu::Preempted | QuotientOnGpu::Busy => {
                        log::info!(
                            "prove: no device for the quotient within {most:.2?}; finishing it on \
                             the CPU from step {} of 4",
                            steps.steps_done()
                        );
                        break;
                    }
                    QuotientOnGpu::NotThere => break,
                }
            }
        }
        steps.finish_on_cpu().map(canonical)
    }

    /// The quotient on a device, else on the CPU; but a quotient that a higher priority
    /// interrupts on the device comes back [`Quotient::Deferred`] instead of going to the CPU. The CPU's
    /// FFTs are an order of magnitude slower than the device's (23 s against 1.5 s at 2^24
    /// constraints on the H200 host), so the prover does its other multiexps first (on the CPU,
    /// and on the device again once the higher proof is done) and then offers the quotient to
    /// the device again.
    pub(super) fn quotient_or_defer(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Quotient, SynthesisError> {
        #[cfg(feature = "gpu")]
        if self.stepped_first_try {
            if let Some(claim) = self.claim.as_mut() {
                use crate::gpu::scheduler::QuotientOnGpu;
                let mut steps = QuotientSteps::new(a, b, c);
                match claim.quotient_steps(&mut steps) {
                    QuotientOnGpu::Done(h) => {
                        free_in_background(steps);
                        return Ok(Quotient::Done(h));
                    }
                    QuotientOnGpu::Preempted => {
                        let kept = steps.steps_done() as u64;
                        log::info!(
                            "prove: quotient interrupted by a higher priority after {kept} of its \
                             4 steps (kept); the other multiexps first, then the rest"
                        );
                        self.quotient_deferred = true;
                        self.quotient_first_try_steps = kept;
                        self.quotient_steps_on_gpu += kept;
                        return Ok(Quotient::Deferred(steps));
                    }
                    QuotientOnGpu::Busy | QuotientOnGpu::NotThere => {
                        return steps.finish_on_cpu().map(|h| Quotient::Done(canonical(h)))
                    }
                }
            }
        }
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim.as_mut() {
            use crate::gpu::scheduler::QuotientOnGpu;
            match claim.quotient(&a, &b, &c) {
                QuotientOnGpu::Done(h) => {
                    // The inputs (96 bytes a value) are freed off the path to the H multiexp.
                    free_in_background((a, b, c));
                    return Ok(Quotient::Done(h));
                }
                QuotientOnGpu::Preempted => {
                    log::info!(
                        "prove: quotient interrupted by a higher priority; the other multiexps \
                         first, then the quotient again"
                    );
                    self.quotient_deferred = true;
                    return Ok(Quotient::Deferred(QuotientSteps::new(a, b, c)));
                }
                QuotientOnGpu::Busy | QuotientOnGpu::NotThere => {}
            }
        }
        crate::domain::quotient(a, b, c).map(|h| Quotient::Done(canonical(h)))
    }

    pub(super) fn msm<G: CurveAffine>(
        &mut self,
        bases: &[G],
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G::Curve, SynthesisError> {
        if bases.len() != scalars.len() {
            return Err(mismatch(what, bases.len(), scalars.len()));
        }
        let started = Instant::now();
        let sum = self.msm_any(bases, scalars, what);
        log::debug!(
            "prove: {what} multiexp of {} terms in {:.2?} (from {:.2?} to {:.2?})",
            bases.len(),
            started.elapsed(),
            started - self.begun,
            self.begun.elapsed()
        );
        sum
    }

    fn msm_any<G: CurveAffine>(
        &mut self,
        bases: &[G],
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G::Curve, SynthesisError> {
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim.as_mut() {
            return Ok(G::scheduled_multiexp(
                claim,
                bases,
                scalars,
                self.chunk_terms,
            ));
        }
        self.cpu_multiexps += 1;
        multiexp(bases, scalars).map_err(|e: LengthMismatch| mismatch(what, e.bases, e.scalars))
    }

    /// Releases the devices and adds the counters to `report`.
    pub(super) fn finish(self, report: &mut ProofReport) {
        report.cpu_chunks += self.cpu_multiexps;
        report.total_chunks += self.cpu_multiexps;
        report.quotient_deferred |= self.quotient_deferred;
        report.quotient_steps_on_gpu += self.quotient_steps_on_gpu;
        report.quotient_first_try_steps += self.quotient_first_try_steps;
        report.wait += self.quotient_wait;
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim {
            claim.finish(report);
        }
    }
}

/// The quotient's coefficients from the CPU as the H multiexp reads them (a device hands them
/// over in that form already: `gpu::QuotientValue`).
fn canonical(h: Vec<Scalar>) -> Vec<ScalarRepr> {
    let scalars = scalar_reprs(&h);
    free_in_background(h);
    scalars
}

/// Runs `f`, the making of a multiexp's scalars: with the `gpu` feature on the pool of the CPU's
/// share of this proof's multiexps beside running devices (`scheduler::cpu_pool`: the
/// lower-priority one at the lowest level), which leaves the transfers' fill threads their cores;
/// without, on the crate's pool.
pub(super) fn making_scalars<R: Send>(priority: Priority, f: impl FnOnce() -> R + Send) -> R {
    #[cfg(feature = "gpu")]
    return multicore::install_on(crate::gpu::scheduler::cpu_pool(priority, true), f);
    #[cfg(not(feature = "gpu"))]
    {
        let _ = priority;
        multicore::install(f)
    }
}

/// Runs `multiexp` here and `next` (the next multiexp's scalars, [`making_scalars`]) on a thread
/// beside it, so that the device does not wait for them; without a thread, `next` runs after.
/// (`Copy`: it borrows what it reads, so a spawn that fails and drops it loses nothing.)
pub(super) fn with_next_scalars<M, N: Send>(
    priority: Priority,
    multiexp: impl FnOnce() -> M,
    next: impl FnOnce() -> N + Send + Copy,
) -> (M, N) {
    std::thread::scope(|scope| {
        let beside = std::thread::Builder::new()
            .name("groth16-scalars".into())
            .spawn_scoped(scope, move || making_scalars(priority, next))
            .ok();
        let sum = multiexp();
        let scalars = match beside {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => making_scalars(priority, next),
        };
        (sum, scalars)
    })
}

#[cfg(test)]
mod tests {
    use super::{Priority, ProveOptions, Work};
    use crate::groth16::DEFAULT_STEPPED_QUOTIENT_FROM;

    #[test]
    fn only_a_low_proof_with_a_large_quotient_tries_it_in_steps_first() {
        let stepped = |priority, n| {
            let options = ProveOptions {
                use_gpu: false,
                ..ProveOptions::with_priority(priority)
            };
            Work::new(&options, n).stepped_first_try
        };
        let large = DEFAULT_STEPPED_QUOTIENT_FROM;
        assert!(stepped(Priority::Low, large));
        assert!(stepped(Priority::Low, 2 * large));
        assert!(!stepped(Priority::Low, large / 2));
        assert!(!stepped(Priority::Normal, large));
        assert!(!stepped(Priority::High, 2 * large));
    }
}
