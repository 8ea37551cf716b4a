//! Mixed fleets: bellperson 0.27's lock files, so that its provers and ours never use a GPU at
//! once and its priorities and ours agree.
//!
//! bellperson keeps its files in `std::env::temp_dir()` (not our lock directory):
//!
//! - `bellman.gpu.lock`: its prover holds it exclusively (a blocking `flock`) while it has kernels,
//!   for every GPU at once.
//! - `bellman.gpu.lock.<id>`, one per device, in its place where `BELLPERSON_GPUS_PER_LOCK` is a
//!   positive number n: its prover try-locks each device's file exclusively (`try_lock_exclusive`),
//!   skips the devices whose files it cannot lock, and uses the first n whose files it holds.
//!   `<id>` is the device's unique id as rust-gpu-tools 0.7 writes it
//!   ([`crate::gpu::device::Device::bellperson_id`]: its UUID, else its PCI bus and slot).
//! - `bellman.priority.lock`: its high-priority prover holds it exclusively for its whole proof;
//!   its other provers' kernels abort when they find it taken (a shared try fails), release the GPU
//!   lock, and block on the priority lock until it is free.
//!
//! (bellperson 0.27's `src/gpu/locks.rs`, `GPULock::lock` and `PriorityLock`.)
//!
//! So: while we hold a device we hold a *shared* lock on `bellman.gpu.lock` and on the device's
//! `bellman.gpu.lock.<id>`. Ours share them with each other; bellperson's exclusive lock on the
//! single file waits for all of them, and its try-lock on the device's file fails, so it skips
//! the device. Both files are shared whatever our own `BELLPERSON_GPUS_PER_LOCK` says, because
//! what matters is the setting of the bellperson provers, which often run with an environment
//! of their own: a bellperson prover locks through one of the two, and sharing the other costs
//! one `flock`. A device for which we cannot share one of the files is held by bellperson, which
//! we treat as a holder at `Normal`. A `High` prover of ours that waits for such a device holds
//! `bellman.priority.lock` exclusively, which makes bellperson's normal prover yield. And
//! `bellman.priority.lock` held exclusively by anyone reads as a `High` request to our holders
//! below `High`. `BELLMAN_NO_GPU` (anything but `0`) turns our
//! GPU use off as it does bellperson's.
//!
//! Two cases are outside what these files can say. A bellperson prover with per-device locks that
//! finds every device's file taken holds no lock at all and uses every device (bellperson's
//! `GPULock::devices` reads "no lock" as "all devices"), so it meets ours on a device we hold; it
//! is kept off only while a device is left free for it, and our provers take every free device
//! they may use (leave it one through `PREEMPTIBLE_GROTH16_GPUS`). Two bellperson provers meet
//! the same way. A device that tells neither a UUID nor a PCI id has no per-device file here
//! (rust-gpu-tools numbers such devices in its own listing's order): a warning says so, and only
//! the single file covers it. And our own brief locks on a device's file (the shared try of
//! [`holds_gpu`], released at once; a device taken and let go again because a higher request
//! waits) make a bellperson try-lock that lands in that instant skip the device.
//! `BELLPERSON_GPUS_PER_LOCK=0` makes bellperson take no lock at all.
//!
//! These files are opened by the same rules as ours (a symlink, a FIFO or a hard link is not used),
//! and a device id that is not a plain file name is not put into a path.

use super::file::{open, warn_once};
use super::{would_block, LockError};
use fs2::FileExt;
use std::fs::File;
use std::path::{Path, PathBuf};

/// bellperson's single GPU lock file's name; a device's own file adds `.<id>`.
const GPU_LOCK: &str = "bellman.gpu.lock";

/// bellperson's GPU lock files in `dir` that cover a device: `bellman.gpu.lock`, then, with
/// `per_device`, the device's own `bellman.gpu.lock.<per_device>` (bellperson's `tmp_path`). An
/// id with anything but ASCII letters, digits, `-`, `:`, `.` and `_` (one from
/// `PREEMPTIBLE_GROTH16_FAKE_GPU_IDS`, say) is an error in place of its path, so that it never
/// names a file elsewhere.
fn gpu_lock_paths(
    dir: &Path,
    per_device: Option<&str>,
) -> impl Iterator<Item = Result<PathBuf, LockError>> {
    let single = Ok(dir.join(GPU_LOCK));
    let device = per_device.map(|id| {
        let path = dir.join(format!("{GPU_LOCK}.{id}"));
        let plain = id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '.' | '_'));
        if plain {
            Ok(path)
        } else {
            Err(LockError {
                path,
                source: std::io::Error::other("the device id is not a plain file name"),
            })
        }
    });
    std::iter::once(single).chain(device)
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

/// Logs which of bellperson's GPU lock files our provers share for each of `devices` (our id,
/// bellperson's id). A device without an id is warned about once where this process's
/// `BELLPERSON_GPUS_PER_LOCK` (`gpus_per_lock`, as bellperson reads it) says bellperson's provers
/// lock per device; elsewhere it is only logged.
pub(crate) fn log_files<'a>(
    gpus_per_lock: Option<usize>,
    devices: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) {
    for (device, id) in devices {
        match (id, gpus_per_lock) {
            (Some(id), _) => {
                log::debug!("gpu: sharing bellperson's {GPU_LOCK} and {GPU_LOCK}.{id} for {device}")
            }
            (None, None) => {
                log::debug!("gpu: sharing bellperson's {GPU_LOCK} for {device} (it has no id)")
            }
            (None, Some(n)) => warn_once(
                &format!("{GPU_LOCK}.{device}"),
                &format!(
                    "gpu: {device} tells neither a UUID nor a PCI id: bellperson's per-device \
                     lock for it (BELLPERSON_GPUS_PER_LOCK={n}) is not shared, only {GPU_LOCK}"
                ),
            ),
        }
    }
}

/// Our share of bellperson's GPU lock files, held beside a [`super::GpuLock`].
#[derive(Debug)]
pub(super) struct SharedGpuLock {
    /// The files shared; a file that could not be used is not among them.
    _files: Vec<File>,
}

/// Takes a shared lock on bellperson's GPU lock and, with `per_device`, on the device's own file
/// ([`gpu_lock_paths`]); `Ok(None)` if a bellperson prover holds one of them (the locks taken so
/// far go with the files). A file that cannot be used (planted by someone, or a device id that is
/// no file name) is warned about once and not shared: the protocol between our own provers does
/// not depend on it.
pub(super) fn share_gpu_lock(
    dir: &Path,
    per_device: Option<&str>,
) -> Result<Option<SharedGpuLock>, LockError> {
    let mut files = Vec::new();
    for path in gpu_lock_paths(dir, per_device) {
        let (path, file) = match path.and_then(|path| open(&path).map(|file| (path, file))) {
            Ok(opened) => opened,
            Err(e) => {
                warn_once(&e.path.to_string_lossy(), &format!("gpu: {e}; not shared"));
                continue;
            }
        };
        match FileExt::try_lock_shared(&file) {
            Ok(()) => files.push(file),
            Err(e) if would_block(&e) => return Ok(None),
            Err(source) => return Err(LockError { path, source }),
        }
    }
    Ok(Some(SharedGpuLock { _files: files }))
}

/// Whether a bellperson prover holds a GPU lock that covers the device now: `bellman.gpu.lock`
/// or, with `per_device`, the device's own file, held exclusively (ours are shared). A missing or
/// unusable file counts as not held.
pub fn holds_gpu(dir: &Path, per_device: Option<&str>) -> bool {
    gpu_lock_paths(dir, per_device).any(|path| path.is_ok_and(|path| held_exclusively(&path)))
}

/// Whether someone holds the existing lock file at `path` exclusively (a shared try fails).
fn held_exclusively(path: &Path) -> bool {
    let Ok(Some(file)) = super::file::open_existing(path) else {
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

    /// bellperson's side of a lock file: opened as `File::create` opens it.
    fn theirs(path: &Path) -> File {
        File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .unwrap()
    }

    #[test]
    fn our_provers_share_the_gpu_lock_and_bellpersons_excludes_them() {
        let d = dir("share");
        let a = share_gpu_lock(&d.0, None).unwrap().unwrap();
        let b = share_gpu_lock(&d.0, None).unwrap().unwrap();
        // bellperson's exclusive lock must wait for both.
        let theirs = theirs(&d.0.join(GPU_LOCK));
        assert!(FileExt::try_lock_exclusive(&theirs).is_err());
        assert!(!holds_gpu(&d.0, None), "ours are shared");
        drop((a, b));
        FileExt::try_lock_exclusive(&theirs).unwrap();
        assert!(holds_gpu(&d.0, None));
        assert!(share_gpu_lock(&d.0, None).unwrap().is_none());
        // The single file covers every device, also where bellperson locks per device.
        assert!(holds_gpu(&d.0, Some("17:00")));
        assert!(share_gpu_lock(&d.0, Some("17:00")).unwrap().is_none());
    }

    #[test]
    fn a_devices_own_file_is_shared_and_bellpersons_try_lock_skips_that_device() {
        let d = dir("per-device");
        let (id, other) = ("46abccd6-022e-b783-572d-833f7104d05f", "e3:00");
        let ours = share_gpu_lock(&d.0, Some(id)).unwrap().unwrap();
        let also_ours = share_gpu_lock(&d.0, Some(id)).unwrap().unwrap();
        // bellperson's try-lock fails on our device's file, and not on another device's.
        let device = theirs(&d.0.join(format!("bellman.gpu.lock.{id}")));
        let other_device = theirs(&d.0.join(format!("bellman.gpu.lock.{other}")));
        assert!(FileExt::try_lock_exclusive(&device).is_err());
        FileExt::try_lock_exclusive(&other_device).unwrap();
        assert!(!holds_gpu(&d.0, Some(id)), "ours are shared");
        assert!(holds_gpu(&d.0, Some(other)));
        assert!(!holds_gpu(&d.0, None), "the single file is not held");
        drop((ours, also_ours));
        // Released with ours: bellperson takes the device, which is then busy for us.
        FileExt::try_lock_exclusive(&device).unwrap();
        assert!(holds_gpu(&d.0, Some(id)));
        assert!(share_gpu_lock(&d.0, Some(id)).unwrap().is_none());
        FileExt::unlock(&device).unwrap();
        assert!(share_gpu_lock(&d.0, Some(id)).unwrap().is_some());
    }

    #[test]
    fn a_device_id_that_is_no_file_name_names_no_file() {
        let d = dir("bad-id");
        std::fs::create_dir(d.0.join("sub")).unwrap();
        // Only the single file is shared; nothing is made below `sub` or elsewhere.
        let ours = share_gpu_lock(&d.0.join("sub"), Some("../../escaped")).unwrap();
        assert!(ours.is_some());
        assert!(!d.0.join("escaped").exists());
        assert!(!holds_gpu(&d.0.join("sub"), Some("../../escaped")));
        assert_eq!(std::fs::read_dir(d.0.join("sub")).unwrap().count(), 1);
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
