//! A priority claim that outlives one proof ([`PriorityGuard`]), and a query whether a device is
//! free ([`gpu_is_available`]), on the lock protocol of [`super::locks`].

use super::backend;
use super::locks::{self, LockError, PriorityFlag};
use crate::priority::Priority;
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a guard checks that its flags are still on the files at their paths (a temp
/// cleaner may delete them; lower provers would then stop seeing the claim).
const REFRESH_EVERY: Duration = Duration::from_secs(1);

/// Keeps a priority's request raised on every device for as long as it lives. A proof made of
/// many partitions holds one across all of them: lower priorities yield the devices at their next
/// chunk and do not take them again until the guard is dropped, so they cannot slip in between
/// two partitions. Proofs at the guard's own priority (or above) are not affected by it: nobody
/// yields to its own level. A small thread raises a flag again if its file is deleted.
#[derive(Debug)]
pub struct PriorityGuard {
    priority: Priority,
    /// Dropping it stops the refresher, which then drops the flags.
    stop: Option<Sender<()>>,
    refresher: Option<JoinHandle<()>>,
}

impl PriorityGuard {
    /// Raises `priority`'s flag on every device of this process.
    pub fn acquire(priority: Priority) -> Result<PriorityGuard, LockError> {
        let dir = locks::lock_dir();
        locks::warn_if_unsafe_dir(&dir);
        std::fs::create_dir_all(&dir).map_err(|source| LockError {
            path: dir.clone(),
            source,
        })?;
        let mut flags: Vec<PriorityFlag> = backend::devices()
            .iter()
            .map(|d| PriorityFlag::raise(&dir, &d.id, priority))
            .collect::<Result<_, _>>()?;
        let (stop, stopped) = channel::<()>();
        let refresher = std::thread::Builder::new()
            .name("gpu-guard-refresh".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(REFRESH_EVERY) {
                    for flag in &mut flags {
                        if let Err(e) = flag.refresh() {
                            locks::warn_once(
                                &e.path.to_string_lossy(),
                                &format!("gpu: priority guard cannot raise its flag again: {e}"),
                            );
                        }
                    }
                }
            })
            .map_err(|source| LockError { path: dir, source })?;
        log::info!("gpu: {priority} priority claimed on every device until dropped");
        Ok(PriorityGuard {
            priority,
            stop: Some(stop),
            refresher: Some(refresher),
        })
    }

    /// The claimed priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }
}

impl Drop for PriorityGuard {
    /// Lowers the flags before returning: the refresher owns them and drops them as it stops.
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(refresher) = self.refresher.take() {
            if refresher.join().is_err() {
                log::debug!("gpu: the priority guard's refresher panicked");
            }
        }
    }
}

/// Whether any device of this process is free right now (nobody holds its lock, and its lock file
/// is usable: a device whose file another user planted counts as not free). A snapshot: the
/// answer can change as soon as it is returned. An error only where a lock can be neither taken
/// nor refused (the system's flock failed).
pub fn gpu_is_available() -> Result<bool, LockError> {
    let dir = locks::lock_dir();
    let status = locks::status(&dir, &backend::device_ids())?;
    Ok(status.iter().any(|d| !d.held && d.unusable.is_none()))
}
