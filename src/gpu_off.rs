//! The GPU API without the `gpu` feature: a priority guard that claims nothing and a query that
//! finds no device, with the signatures of the `gpu` build, so that code calling them builds
//! either way without a `cfg` of its own (the no-GPU side of every such `cfg` is here, in one
//! place). Without the feature every proof runs on the CPU.

use crate::priority::Priority;

/// The lock files (none without the `gpu` feature).
pub mod locks {
    use std::path::PathBuf;

    /// A lock file that could not be used: never returned without the `gpu` feature, where
    /// there are no lock files; the type keeps the signatures of the `gpu` build.
    #[derive(Debug, thiserror::Error)]
    #[error("lock file {path}: {source}")]
    pub struct LockError {
        /// The file.
        pub path: PathBuf,
        /// What the system said.
        pub source: std::io::Error,
    }
}

/// A priority claim across proofs; without the `gpu` feature there is no device to claim, and it
/// holds nothing.
#[derive(Debug)]
pub struct PriorityGuard {
    priority: Priority,
}

impl PriorityGuard {
    /// Claims `priority` (nothing to claim without the `gpu` feature).
    pub fn acquire(priority: Priority) -> Result<PriorityGuard, locks::LockError> {
        Ok(PriorityGuard { priority })
    }

    /// The claimed priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }
}

/// Whether a device is free now: never, without the `gpu` feature.
pub fn gpu_is_available() -> Result<bool, locks::LockError> {
    Ok(false)
}

/// The GPU backend of a proof: never there without the `gpu` feature (the type has no values),
/// so the prover's one choice of backend reads the same in both builds.
pub(crate) enum GpuBackend {}

impl GpuBackend {
    /// Nothing to ready without the `gpu` feature.
    pub(crate) fn ready_in_background(_options: &crate::options::ProveOptions) {}

    /// No claim without the `gpu` feature: every proof runs on the CPU.
    pub(crate) fn claim(
        _options: &crate::options::ProveOptions,
        _domain_size: usize,
        _batch: bool,
    ) -> Option<GpuBackend> {
        None
    }
}

mod backend_impl {
    use super::GpuBackend;
    use crate::backend::{ProofBackend, Quotient};
    use crate::bases::Bases;
    use crate::domain::QuotientSteps;
    use crate::multicore::Pool;
    use crate::multiexp::ScalarRepr;
    use crate::options::ProofReport;
    use bellpepper_core::SynthesisError;
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};

    impl ProofBackend for GpuBackend {
        fn quotient(
            &mut self,
            _: Vec<Scalar>,
            _: Vec<Scalar>,
            _: Vec<Scalar>,
        ) -> Result<Quotient, SynthesisError> {
            match *self {}
        }
        fn deferred_quotient(
            &mut self,
            _: QuotientSteps,
        ) -> Result<Vec<ScalarRepr>, SynthesisError> {
            match *self {}
        }
        fn multiexp_g1(
            &mut self,
            _: Bases<'_, G1Affine>,
            _: &[ScalarRepr],
            _: &str,
        ) -> Result<G1Projective, SynthesisError> {
            match *self {}
        }
        fn multiexp_g2(
            &mut self,
            _: Bases<'_, G2Affine>,
            _: &[ScalarRepr],
            _: &str,
        ) -> Result<G2Projective, SynthesisError> {
            match *self {}
        }
        fn witness_beside_quotient(&self) -> bool {
            match *self {}
        }
        fn scalar_pool(&self) -> Pool {
            match *self {}
        }
        fn proof_done(&mut self, _: &mut ProofReport) {
            match *self {}
        }
        fn finish(self, _: &mut ProofReport) {
            match self {}
        }
    }
}
