//! Where a proof's quotient and multiexps run: the one seam between the protocol
//! (`groth16/prover.rs`) and the machines. The prover chooses a backend once per proof, after
//! synthesis: the GPU claim's (`gpu::GpuBackend`, with the `gpu` feature and devices) or
//! [`CpuBackend`]. Everything else in `groth16/` is the same for both.

use crate::bases::Bases;
use crate::domain::QuotientSteps;
use crate::multicore::{self, Pool};
use crate::multiexp::{into_scalar_reprs, multiexp, LengthMismatch, ScalarRepr};
use crate::options::ProofReport;
use bellpepper_core::SynthesisError;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::{Group, UncompressedEncoding};

/// The quotient polynomial's coefficients (as the H multiexp reads them), or the evaluations it
/// is made from when a higher priority took the device and it was put off.
pub(crate) enum Quotient {
    Done(Vec<ScalarRepr>),
    // Made only by the GPU backend, which a build without the `gpu` feature has none of.
    #[allow(dead_code)]
    Deferred(QuotientSteps),
}

/// Where one proof's quotient and multiexps run.
pub(crate) trait ProofBackend {
    /// The quotient from the constraints' evaluations: done, or put off (a backend that can be
    /// preempted gives it back so that the prover does its other multiexps first).
    fn quotient(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Quotient, SynthesisError>;

    /// A quotient put off by [`ProofBackend::quotient`], finished.
    fn deferred_quotient(
        &mut self,
        steps: QuotientSteps,
    ) -> Result<Vec<ScalarRepr>, SynthesisError>;

    /// `sum_i scalars[i] * bases[i]` in G1; the lengths match. Mapped bases are decoded where
    /// each part of the multiexp runs; one that is not a point on the curve is an error naming
    /// it.
    fn multiexp_g1(
        &mut self,
        bases: Bases<'_, G1Affine>,
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G1Projective, SynthesisError>;

    /// `sum_i scalars[i] * bases[i]` in G2, as [`ProofBackend::multiexp_g1`].
    fn multiexp_g2(
        &mut self,
        bases: Bases<'_, G2Affine>,
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G2Projective, SynthesisError>;

    /// Whether the witness's scalars are made beside the quotient rather than beside the H
    /// multiexp: where the quotient is likely to be put off, so that the L multiexp need not
    /// wait for them.
    fn witness_beside_quotient(&self) -> bool;

    /// The pool that makes the next multiexp's scalars beside a running one.
    fn scalar_pool(&self) -> Pool;

    /// Before a later proof of a batch on this backend: takes what it can of what it let go
    /// (the GPU's devices a higher priority took, or that were free).
    fn next_proof(&mut self) {}

    /// Adds the counters of the proof just done to `report`; the backend keeps what it holds
    /// for the batch's next proof.
    fn proof_done(&mut self, report: &mut ProofReport);

    /// Releases what the backend holds and adds the counters of that to `report` (the batch's
    /// last).
    fn finish(self, report: &mut ProofReport);
}

/// Everything on the CPU, on the crate's pool.
#[derive(Debug, Default)]
pub(crate) struct CpuBackend {
    /// Its part of the report: each multiexp is one CPU chunk.
    counts: ProofReport,
}

impl CpuBackend {
    /// Mapped bases a decoded window at a time ([`Bases::for_each_window`]), each window a
    /// multiexp (and a chunk in the report) of its own, their sums added.
    fn multiexp<G: crate::curve::CurveAffine + UncompressedEncoding>(
        &mut self,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G::Curve, SynthesisError> {
        let mut sum = G::Curve::identity();
        bases.for_each_window(|points, range| {
            self.counts.cpu_chunks += 1;
            self.counts.total_chunks += 1;
            let scalars = scalars.get(range).unwrap_or_default();
            sum += multiexp(points, scalars).map_err(|e: LengthMismatch| {
                SynthesisError::IncompatibleLengthVector(format!("{what}: {e}"))
            })?;
            Ok(())
        })?;
        Ok(sum)
    }
}

impl ProofBackend for CpuBackend {
    fn quotient(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Quotient, SynthesisError> {
        crate::domain::quotient(a, b, c).map(|h| Quotient::Done(into_scalar_reprs(h)))
    }

    fn deferred_quotient(
        &mut self,
        steps: QuotientSteps,
    ) -> Result<Vec<ScalarRepr>, SynthesisError> {
        steps.finish_on_cpu().map(into_scalar_reprs)
    }

    fn multiexp_g1(
        &mut self,
        bases: Bases<'_, G1Affine>,
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G1Projective, SynthesisError> {
        self.multiexp(bases, scalars, what)
    }

    fn multiexp_g2(
        &mut self,
        bases: Bases<'_, G2Affine>,
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G2Projective, SynthesisError> {
        self.multiexp(bases, scalars, what)
    }

    fn witness_beside_quotient(&self) -> bool {
        false
    }

    fn scalar_pool(&self) -> Pool {
        Pool::Main
    }

    fn proof_done(&mut self, report: &mut ProofReport) {
        report.absorb(std::mem::take(&mut self.counts));
    }

    fn finish(self, report: &mut ProofReport) {
        report.absorb(self.counts);
    }
}

/// Runs `multiexp` here and `next` (the next multiexp's scalars) on `pool` from a thread beside
/// it, so that the device does not wait for them; without a thread, `next` runs after.
/// (`Copy`: it borrows what it reads, so a spawn that fails and drops it loses nothing.)
pub(crate) fn with_next_scalars<M, N: Send>(
    pool: Pool,
    multiexp: impl FnOnce() -> M,
    next: impl FnOnce() -> N + Send + Copy,
) -> (M, N) {
    std::thread::scope(|scope| {
        let beside = std::thread::Builder::new()
            .name("groth16-scalars".into())
            .spawn_scoped(scope, move || multicore::install_on(pool, next))
            .ok();
        let sum = multiexp();
        let scalars = match beside {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => multicore::install_on(pool, next),
        };
        (sum, scalars)
    })
}
