//! A priority claim that outlives one proof, and a query whether a device is free: the seed's
//! `acquire_gpu` / `PriorityLock` and `gpu_is_available`, on the lock protocol of
//! [`super::locks`].

use super::backend;
use super::locks::{self, LockError, PriorityFlag};
use crate::groth16::Priority;

/// Keeps a priority's request raised on every device for as long as it lives. A proof made of
/// many partitions holds one across all of them: lower priorities yield the devices at their next
/// chunk and do not take them again until the guard is dropped, so they cannot slip in between
/// two partitions. Proofs at the guard's own priority (or above) are not affected by it: nobody
/// yields to its own level.
#[derive(Debug)]
pub struct PriorityGuard {
    priority: Priority,
    _flags: Vec<PriorityFlag>,
}

impl PriorityGuard {
    /// Raises `priority`'s flag on every device of this process.
    pub fn acquire(priority: Priority) -> Result<PriorityGuard, LockError> {
        let dir = locks::lock_dir();
        std::fs::create_dir_all(&dir).map_err(|source| LockError {
            path: dir.clone(),
            source,
        })?;
        let flags = backend::devices()
            .iter()
            .map(|d| PriorityFlag::raise(&dir, &d.id, priority))
            .collect::<Result<_, _>>()?;
        log::info!("gpu: {priority} priority claimed on every device until dropped");
        Ok(PriorityGuard {
            priority,
            _flags: flags,
        })
    }

    /// The claimed priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }
}

/// Whether any device of this process is free right now (nobody holds its lock). A snapshot:
/// the answer can change as soon as it is returned.
pub fn gpu_is_available() -> Result<bool, LockError> {
    let dir = locks::lock_dir();
    if !dir.exists() {
        return Ok(!backend::devices().is_empty());
    }
    let status = locks::status(&dir, &backend::device_ids())?;
    Ok(status.iter().any(|d| d.holder.is_none()))
}
