//! The GPU API without the `gpu` feature: a priority guard that claims nothing and a query that
//! finds no device, with the signatures of the `gpu` build, so that code calling them builds
//! either way without a `cfg` of its own (the seed's review asked for the no-GPU side of every
//! such `cfg`). Without the feature every proof runs on the CPU.

use crate::groth16::Priority;

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
