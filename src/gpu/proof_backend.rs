//! A batch's work through its GPU claim ([`GpuBackend`]), one proof after another: chunks of each
//! multiexp on the held devices and the CPU ([`super::scheduler`]), the quotient on a device, put
//! off when a higher priority takes it and offered to a device again after the other multiexps.
//! The claim, and in a batch the bases its devices keep, last from the first proof's multiexps to
//! the batch's end; a higher priority takes a device at any time.

use super::scheduler::{cpu_pool, GpuClaim, QuotientOnGpu};
use crate::backend::{ProofBackend, Quotient};
use crate::bases::{invalid_bases, Bases};
use crate::config::Config;
use crate::domain::QuotientSteps;
use crate::free::free_in_background;
use crate::multicore::Pool;
use crate::multiexp::{into_scalar_reprs, ScalarRepr};
use crate::options::{ProofReport, ProveOptions};
use crate::priority::Priority;
use bellpepper_core::SynthesisError;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use std::time::{Duration, Instant};

/// How long a put-off quotient waits for a device, per value: about a third of the CPU's time for
/// it on the 16 cores of the H200 host (23 s at 2^24, 1.4 us per value), so waiting for a device
/// held by short higher-priority proofs beats the CPU, and a device that stays busy costs at most
/// a third more than going to the CPU at once.
const QUOTIENT_WAIT_PER_VALUE: Duration = Duration::from_nanos(500);
/// Sleep between tries for that device (one try is a few system calls).
const QUOTIENT_RETRY_SLEEP: Duration = Duration::from_millis(4);

/// Device memory the quotient takes per value of its domain, about: its three vectors of 32
/// bytes a value, and the twiddle and power tables beside them (the bases a batch keeps leave
/// this much free).
const QUOTIENT_DEVICE_BYTES_PER_VALUE: u64 = 4 * 32;

/// One batch's work through its claim on this process's devices.
pub(crate) struct GpuBackend {
    claim: GpuClaim,
    priority: Priority,
    /// Terms of a G1 multiexp's chunk ([`ProveOptions::chunk_terms`]).
    chunk_terms: usize,
    /// Whether the quotient's first try on a device goes in steps
    /// ([`ProveOptions::stepped_quotient_from`]).
    stepped_first_try: bool,
    /// The quotient's part of the report: whether it was put off, its steps on a device, and
    /// the time it waited for one (its tries that found every device busy, and the sleeps
    /// between tries).
    counts: ProofReport,
}

impl GpuBackend {
    /// Readies this process's devices on a thread of their own when `options` allow the GPU (the
    /// prover calls this before synthesis: see [`super::backend::ready_in_background`]).
    pub(crate) fn ready_in_background(options: &ProveOptions) {
        if options.use_gpu {
            super::backend::ready_in_background();
        }
    }

    /// The backend of a batch whose quotient domain has `domain_size` values, when `options`
    /// allow the GPU and this process has devices (else the proofs run on the CPU). For a
    /// `batch` of several proofs (and [`ProveOptions::keep_bases_on_device`]) the held devices
    /// keep each query's bases between proofs, in the memory the quotient leaves.
    pub(crate) fn claim(
        options: &ProveOptions,
        domain_size: usize,
        batch: bool,
    ) -> Option<GpuBackend> {
        if !options.use_gpu {
            return None;
        }
        // Read for each batch, so that a service can change the lock directory or
        // `BELLMAN_NO_GPU` between batches.
        let config = Config::from_env();
        let keep_bases = (batch && options.keep_bases_on_device)
            .then(|| QUOTIENT_DEVICE_BYTES_PER_VALUE * domain_size as u64);
        let claim = GpuClaim::new(
            options.priority,
            options.devices.as_deref(),
            &config,
            keep_bases,
        )?;
        Some(GpuBackend {
            claim,
            priority: options.priority,
            chunk_terms: options.chunk_terms,
            stepped_first_try: stepped_first_try(options, domain_size),
            counts: ProofReport::default(),
        })
    }

    /// The quotient's first try in steps (a low priority's large one): a step a higher priority
    /// interrupts loses only itself, and the quotient is put off with the finished steps kept.
    fn quotient_in_steps(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Quotient, SynthesisError> {
        let mut steps = QuotientSteps::new(a, b, c);
        match self.claim.quotient_steps(&mut steps) {
            QuotientOnGpu::Done(h) => {
                free_in_background(steps);
                Ok(Quotient::Done(h))
            }
            QuotientOnGpu::Preempted => {
                let kept = steps.steps_done() as u64;
                log::info!(
                    "prove: quotient interrupted by a higher priority after {kept} of its 4 steps \
                     (kept); the other multiexps first, then the rest"
                );
                self.counts.quotient_deferred = true;
                self.counts.quotient_first_try_steps = kept;
                self.counts.quotient_steps_on_gpu += kept;
                Ok(Quotient::Deferred(steps))
            }
            QuotientOnGpu::Busy | QuotientOnGpu::NotThere => steps
                .finish_on_cpu()
                .map(|h| Quotient::Done(into_scalar_reprs(h))),
        }
    }
}

/// Whether a proof's quotient is first tried on a device in steps: only a low priority's, from
/// [`ProveOptions::stepped_quotient_from`] values on.
fn stepped_first_try(options: &ProveOptions, domain_size: usize) -> bool {
    options.priority == Priority::Low && domain_size >= options.stepped_quotient_from
}

impl ProofBackend for GpuBackend {
    /// The quotient on a device, else on the CPU; but a quotient that a higher priority
    /// interrupts on the device comes back [`Quotient::Deferred`] instead of going to the CPU.
    /// The CPU's FFTs are an order of magnitude slower than the device's (23 s against 1.5 s at
    /// 2^24 constraints on the H200 host), so the prover does its other multiexps first (on the
    /// CPU, and on the device again once the higher proof is done) and then offers the quotient
    /// to the device again.
    fn quotient(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Quotient, SynthesisError> {
        if self.stepped_first_try {
            return self.quotient_in_steps(a, b, c);
        }
        match self.claim.quotient(&a, &b, &c) {
            QuotientOnGpu::Done(h) => {
                // The inputs (96 bytes a value) are freed off the path to the H multiexp.
                free_in_background((a, b, c));
                Ok(Quotient::Done(h))
            }
            QuotientOnGpu::Preempted => {
                log::info!(
                    "prove: quotient interrupted by a higher priority; the other multiexps \
                     first, then the quotient again"
                );
                self.counts.quotient_deferred = true;
                Ok(Quotient::Deferred(QuotientSteps::new(a, b, c)))
            }
            QuotientOnGpu::Busy | QuotientOnGpu::NotThere => {
                crate::domain::quotient(a, b, c).map(|h| Quotient::Done(into_scalar_reprs(h)))
            }
        }
    }

    /// The put-off quotient: on a device, waiting for one while other provers hold them
    /// (retried when preempted again) for up to [`QUOTIENT_WAIT_PER_VALUE`] per value, else on
    /// the CPU. It goes in steps whose results are kept ([`QuotientSteps`]): a device taken away
    /// again loses only the step it was in, so the quotient moves on in the short stretches a
    /// busy device leaves, and the CPU goes on from the last finished step.
    fn deferred_quotient(
        &mut self,
        mut steps: QuotientSteps,
    ) -> Result<Vec<ScalarRepr>, SynthesisError> {
        let most = Duration::from_nanos(
            QUOTIENT_WAIT_PER_VALUE.as_nanos() as u64 * steps.values().max(1) as u64,
        );
        let started = Instant::now();
        loop {
            let before = steps.steps_done();
            let tried = Instant::now();
            let result = self.claim.quotient_steps(&mut steps);
            if matches!(result, QuotientOnGpu::Busy) {
                self.counts.wait += tried.elapsed();
            }
            // Inputs a device moved to the coset, and the last step if it finished.
            self.counts.quotient_steps_on_gpu += steps.steps_done().saturating_sub(before) as u64;
            match result {
                QuotientOnGpu::Done(h) => {
                    self.counts.quotient_steps_on_gpu += 1;
                    free_in_background(steps);
                    return Ok(h);
                }
                QuotientOnGpu::Preempted | QuotientOnGpu::Busy if started.elapsed() < most => {
                    let slept = Instant::now();
                    std::thread::sleep(QUOTIENT_RETRY_SLEEP);
                    self.counts.wait += slept.elapsed();
                }
                QuotientOnGpu::Preempted | QuotientOnGpu::Busy => {
                    log::info!(
                        "prove: no device for the quotient within {most:.2?}; finishing it on the \
                         CPU from step {} of 4",
                        steps.steps_done()
                    );
                    break;
                }
                QuotientOnGpu::NotThere => break,
            }
        }
        steps.finish_on_cpu().map(into_scalar_reprs)
    }

    fn multiexp_g1(
        &mut self,
        bases: Bases<'_, G1Affine>,
        scalars: &[ScalarRepr],
        _what: &str,
    ) -> Result<G1Projective, SynthesisError> {
        self.claim
            .multiexp(bases, scalars, self.chunk_terms)
            .map_err(invalid_bases)
    }

    fn multiexp_g2(
        &mut self,
        bases: Bases<'_, G2Affine>,
        scalars: &[ScalarRepr],
        _what: &str,
    ) -> Result<G2Projective, SynthesisError> {
        // A G2 term costs about 2.5x a G1 term on the device (docs/BENCHMARKS.md): a quarter of
        // the terms keeps a chunk, and so a hand-over, about as short as a G1 chunk.
        let chunk_terms = (self.chunk_terms / 4).max(1);
        self.claim
            .multiexp(bases, scalars, chunk_terms)
            .map_err(invalid_bases)
    }

    fn witness_beside_quotient(&self) -> bool {
        self.stepped_first_try
    }

    /// The pool of the CPU's share of this proof's multiexps beside running devices (the
    /// lower-priority one at the lowest level), which leaves the transfers' fill threads their
    /// cores.
    fn scalar_pool(&self) -> Pool {
        cpu_pool(self.priority, true)
    }

    fn next_proof(&mut self) {
        self.claim.next_proof();
    }

    fn proof_done(&mut self, report: &mut ProofReport) {
        report.absorb(self.claim.proof_done());
        report.absorb(std::mem::take(&mut self.counts));
    }

    fn finish(self, report: &mut ProofReport) {
        report.absorb(self.claim.finish());
        report.absorb(self.counts);
    }
}

#[cfg(test)]
mod tests {
    use super::stepped_first_try;
    use crate::options::{Priority, ProveOptions, DEFAULT_STEPPED_QUOTIENT_FROM};

    #[test]
    fn only_a_low_proof_with_a_large_quotient_tries_it_in_steps_first() {
        let stepped = |priority, n| stepped_first_try(&ProveOptions::with_priority(priority), n);
        let large = DEFAULT_STEPPED_QUOTIENT_FROM;
        assert!(stepped(Priority::Low, large));
        assert!(stepped(Priority::Low, 2 * large));
        assert!(!stepped(Priority::Low, large / 2));
        assert!(!stepped(Priority::Normal, large));
        assert!(!stepped(Priority::High, 2 * large));
    }
}
