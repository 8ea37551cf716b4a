//! Mixed fleets: bellperson 0.27's lock files, so that its provers and ours never use a GPU at
//! once and its priorities and ours agree.
//!
//! bellperson keeps two files in `std::env::temp_dir()` (not our lock directory):
//!
//! - `bellman.gpu.lock`: its prover holds it exclusively (a blocking `flock`) while it has kernels,
//!   for every GPU at once.
//! - `bellman.priority.lock`: its high-priority prover holds it exclusively for its whole proof;
//!   its other provers' kernels abort when they find it taken (a shared try fails), release the GPU
//!   lock, and block on the priority lock until it is free.
//!
//! So: while we hold any device we hold a *shared* lock on `bellman.gpu.lock` (ours share it with
//! each other; bellperson's exclusive lock waits for all of them), and a device we cannot share it
//! for is held by bellperson, which we treat as a holder at `Normal`. A `High` prover of ours that
//! waits for such a device holds `bellman.priority.lock` exclusively, which makes bellperson's
//! normal prover yield. And `bellman.priority.lock` held exclusively by anyone reads as a `High`
//! request to our holders below `High`. bellperson's per-device locks
//! (`BELLPERSON_GPUS_PER_LOCK`) are not read: with it set, a warning says so.
//! `BELLMAN_NO_GPU` (anything but `0`) turns our GPU use off as it does bellperson's.
//!
//! These files are opened by the same rules as ours (a symlink, a FIFO or a hard link is not used).

use super::file::{open, warn_once};
use super::{would_block, LockError};
use fs2::FileExt;
use std::fs::File;
use std::path::{Path, PathBuf};

/// bellperson's GPU lock file, in `dir`.
fn gpu_lock_path(dir: &Path) -> PathBuf {
    dir.join("bellman.gpu.lock")
}

/// bellperson's priority lock file, in `dir`.
pub(super) fn priority_lock_path(dir: &Path) -> PathBuf {
    dir.join("bellman.priority.lock")
}

/// Where bellperson keeps its files: the temp directory, as bellperson computes it.
pub fn dir() -> PathBuf {
    std::env::temp_dir()
}

/// Whether `BELLMAN_NO_GPU` turns GPU use off (bellperson's rule: set to anything but `0`).
pub fn gpu_disabled() -> bool {
    crate::config::Config::from_env().bellman_no_gpu
}

/// Warns, once, when `config` says bellperson's per-device locks are in use: they are not read
/// here, only `bellman.gpu.lock`.
pub(crate) fn warn_if_per_device_locks(config: &crate::config::Config) {
    if config.bellperson_gpus_per_lock {
        warn_once(
            "BELLPERSON_GPUS_PER_LOCK",
            "gpu: BELLPERSON_GPUS_PER_LOCK is set: bellperson's per-device locks are not read, \
             only bellman.gpu.lock",
        );
    }
}

/// Our share of bellperson's GPU lock, held beside a [`super::GpuLock`].
#[derive(Debug)]
pub(super) struct SharedGpuLock {
    /// `None` where bellperson's file could not be used.
    _file: Option<File>,
}

/// Takes a shared lock on bellperson's GPU lock; `Ok(None)` if a bellperson prover holds it.
/// A file that cannot be used (planted by someone) is warned about once and not shared: the
/// protocol between our own provers does not depend on it.
pub(super) fn share_gpu_lock(dir: &Path) -> Result<Option<SharedGpuLock>, LockError> {
    let path = gpu_lock_path(dir);
    let file = match open(&path) {
        Ok(f) => f,
        Err(e) => {
            warn_once(&path.to_string_lossy(), &format!("gpu: {e}; not shared"));
            return Ok(Some(SharedGpuLock { _file: None }));
        }
    };
    match FileExt::try_lock_shared(&file) {
        Ok(()) => Ok(Some(SharedGpuLock { _file: Some(file) })),
        Err(e) if would_block(&e) => Ok(None),
        Err(source) => Err(LockError { path, source }),
    }
}

/// Whether a bellperson prover holds its GPU lock now (an exclusive lock on the file; ours are
/// shared). `false` where the file is missing or unusable.
pub fn holds_gpu(dir: &Path) -> bool {
    let Ok(Some(file)) = super::file::open_existing(&gpu_lock_path(dir)) else {
        return false;
    };
    match FileExt::try_lock_shared(&file) {
        Ok(()) => {
            let _ = FileExt::unlock(&file);
            false
        }
        Err(e) => would_block(&e),
    }
}

/// A `High` request in bellperson's terms: its priority lock, held exclusively until dropped.
#[derive(Debug)]
pub struct PriorityRequest {
    _file: File,
}

impl PriorityRequest {
    /// Takes bellperson's priority lock if nobody holds it (a bellperson high prover, or another
    /// of our high provers, may: their request stands for ours).
    pub fn try_raise(dir: &Path) -> Result<Option<PriorityRequest>, LockError> {
        let path = priority_lock_path(dir);
        let file = open(&path)?;
        match FileExt::try_lock_exclusive(&file) {
            Ok(()) => Ok(Some(PriorityRequest { _file: file })),
            Err(e) if would_block(&e) => Ok(None),
            Err(source) => Err(LockError { path, source }),
        }
    }
}

/// Whether bellperson's priority lock, open as `file`, is held exclusively by someone (a
/// bellperson high prover, or a high prover of ours asking for a device bellperson holds): a
/// shared try fails only then. bellperson's normal provers take it exclusively for an instant
/// when they resume; the caller reads it twice, 200 us apart, as it does our flags.
pub(super) fn priority_taken(path: &Path, file: &File) -> Result<bool, LockError> {
    match FileExt::try_lock_shared(file) {
        Ok(()) => {
            FileExt::unlock(file).map_err(|source| LockError {
                path: path.to_path_buf(),
                source,
            })?;
            Ok(false)
        }
        Err(e) if would_block(&e) => Ok(true),
        Err(source) => Err(LockError {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_dir::dir;

    #[test]
    fn our_provers_share_the_gpu_lock_and_bellpersons_excludes_them() {
        let d = dir("share");
        let a = share_gpu_lock(&d.0).unwrap().unwrap();
        let b = share_gpu_lock(&d.0).unwrap().unwrap();
        // bellperson's exclusive lock must wait for both.
        let theirs = File::options()
            .write(true)
            .open(gpu_lock_path(&d.0))
            .unwrap();
        assert!(FileExt::try_lock_exclusive(&theirs).is_err());
        assert!(!holds_gpu(&d.0), "ours are shared");
        drop((a, b));
        FileExt::try_lock_exclusive(&theirs).unwrap();
        assert!(holds_gpu(&d.0));
        assert!(share_gpu_lock(&d.0).unwrap().is_none());
    }

    #[test]
    fn a_priority_request_reads_as_taken() {
        let d = dir("priority");
        let path = priority_lock_path(&d.0);
        let probe = open(&path).unwrap();
        assert!(!priority_taken(&path, &probe).unwrap());
        let request = PriorityRequest::try_raise(&d.0).unwrap().unwrap();
        assert!(priority_taken(&path, &probe).unwrap());
        assert!(PriorityRequest::try_raise(&d.0).unwrap().is_none());
        drop(request);
        assert!(!priority_taken(&path, &probe).unwrap());
    }
}
