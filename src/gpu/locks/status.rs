//! The status view's reading of the lock files: who holds each device (the text its holder
//! wrote), which levels' flags are raised, and, on Linux, which processes hold those flags (from
//! `/proc/locks`), so that an operator sees who waits.

use super::{flag_path, flag_raised, lock_path, open, would_block, LockError};
use crate::groth16::Priority;
use fs2::FileExt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Who holds a device, as its lock file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The holder's process id.
    pub pid: u32,
    /// Its priority.
    pub priority: Priority,
    /// When it took the device, in milliseconds since the Unix epoch.
    pub since_unix_ms: u128,
}

/// The holder named in `device`'s lock file, read without locking: callers use it right after a
/// failed [`super::GpuLock::try_acquire`], when the device is held. `None` if the text is missing or
/// partly written.
pub fn holder_text(dir: &Path, device: &str) -> Option<Holder> {
    let mut text = String::new();
    File::open(lock_path(dir, device))
        .ok()?
        .read_to_string(&mut text)
        .ok()?;
    let mut parts = text.split_whitespace();
    let pid = parts.next()?.parse().ok()?;
    let priority = Priority::from_level(parts.next()?.parse().ok()?)?;
    let since_unix_ms = parts.next()?.parse().ok()?;
    Some(Holder {
        pid,
        priority,
        since_unix_ms,
    })
}

/// One device as the status view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    /// The device's id.
    pub device: String,
    /// Who holds it, if anyone (checked by a try-lock, so a dead holder's text is not shown).
    pub holder: Option<Holder>,
    /// The levels whose flag is raised: provers waiting for or using the device (a holder keeps
    /// its own level's flag raised, and a [`crate::gpu::PriorityGuard`] raises its level's).
    pub wanted_at: Vec<Priority>,
    /// Of those, the levels above the holder's (or every raised level of a free device): the
    /// provers that wait for the device, with their process ids where the system says them.
    pub waiting: Vec<Waiting>,
}

/// Provers at one level that wait for a device ([`DeviceStatus::waiting`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiting {
    /// Their level.
    pub priority: Priority,
    /// The processes holding the level's flag, from `/proc/locks` (Linux; empty elsewhere or
    /// when it cannot be read). A process with several provers at the level is listed once.
    pub pids: Vec<u32>,
}

/// Who holds each of `devices` and which levels want them. Probing takes each file's lock for
/// two system calls, so a prover trying to take a device at that very moment may find it busy
/// once and retry at its next chunk.
pub fn status(dir: &Path, devices: &[String]) -> Result<Vec<DeviceStatus>, LockError> {
    if !dir.exists() {
        // Nobody has used the directory yet: every device is free.
        return Ok(devices
            .iter()
            .map(|device| DeviceStatus {
                device: device.clone(),
                holder: None,
                wanted_at: Vec::new(),
                waiting: Vec::new(),
            })
            .collect());
    }
    devices
        .iter()
        .map(|device| {
            let path = lock_path(dir, device);
            let file = open(&path)?;
            let holder = match FileExt::try_lock_shared(&file) {
                Ok(()) => {
                    let _ = FileExt::unlock(&file);
                    None
                }
                Err(e) if would_block(&e) => holder_text(dir, device),
                Err(source) => return Err(LockError { path, source }),
            };
            let mut wanted_at = Vec::new();
            let mut waiting = Vec::new();
            for p in Priority::ALL {
                let path = flag_path(dir, device, p);
                let file = open(&path)?;
                if !flag_raised(&path, &file)? {
                    continue;
                }
                wanted_at.push(p);
                if holder.as_ref().map_or(true, |h| p > h.priority) {
                    waiting.push(Waiting {
                        priority: p,
                        pids: flock_pids(&file),
                    });
                }
            }
            Ok(DeviceStatus {
                device: device.clone(),
                holder,
                wanted_at,
                waiting,
            })
        })
        .collect()
}

/// The processes holding a `flock` on `file`, from `/proc/locks`, whose lines name each lock's
/// process and file as `pid major:minor:inode` (the device numbers in hex). Where no line has
/// the file's device numbers (on btrfs `stat` gives a subvolume's number, not the one the kernel
/// prints), lines with its inode are taken. Empty where that file cannot be read, and without
/// pid 0 (a process the kernel does not show in this pid namespace): the pids are for the
/// operator, not the protocol.
#[cfg(target_os = "linux")]
fn flock_pids(file: &File) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let (Ok(meta), Ok(locks)) = (file.metadata(), std::fs::read_to_string("/proc/locks")) else {
        return Vec::new();
    };
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let device = format!("{major:02x}:{minor:02x}");
    let inode = meta.ino().to_string();
    // (pid, whether the device numbers match) of each flock held on a file with this inode.
    let holders: Vec<(u32, bool)> = locks
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // "1: FLOCK  ADVISORY  READ  1234 fe:00:5678 0 EOF"; blocked waiters ("->") are
            // not holders.
            let at = fields.iter().position(|f| *f == "FLOCK")?;
            if fields.get(at.checked_sub(1)?) == Some(&"->") {
                return None;
            }
            let (file_device, file_inode) = fields.get(at + 4)?.rsplit_once(':')?;
            let pid: u32 = fields.get(at + 3)?.parse().ok()?;
            (file_inode == inode && pid != 0).then_some((pid, file_device == device))
        })
        .collect();
    let exact = holders.iter().any(|&(_, same_device)| same_device);
    let mut pids: Vec<u32> = holders
        .into_iter()
        .filter(|&(_, same_device)| same_device || !exact)
        .map(|(pid, _)| pid)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

#[cfg(not(target_os = "linux"))]
fn flock_pids(_: &File) -> Vec<u32> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::super::{GpuLock, PriorityFlag};
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("pg16-status-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn status_shows_holder_and_wanted_levels() {
        let d = dir("status");
        let devices = vec!["x".to_string()];
        let s = status(&d, &devices).unwrap();
        assert_eq!(s[0].holder, None);
        assert!(s[0].wanted_at.is_empty());
        let _lock = GpuLock::try_acquire(&d, "x", Priority::Normal)
            .unwrap()
            .unwrap();
        let _flag = PriorityFlag::raise(&d, "x", Priority::High).unwrap();
        let s = status(&d, &devices).unwrap();
        assert_eq!(s[0].holder.as_ref().unwrap().priority, Priority::Normal);
        assert_eq!(s[0].wanted_at, vec![Priority::High]);
        // On Linux /proc/locks names this process as the flag's holder.
        let pids = if cfg!(target_os = "linux") {
            vec![std::process::id()]
        } else {
            vec![]
        };
        assert_eq!(
            s[0].waiting,
            vec![Waiting {
                priority: Priority::High,
                pids
            }]
        );
        // The holder's own level's flag (it keeps one raised) is not a waiter.
        let _own = PriorityFlag::raise(&d, "x", Priority::Normal).unwrap();
        let s = status(&d, &devices).unwrap();
        assert_eq!(s[0].wanted_at, vec![Priority::Normal, Priority::High]);
        assert_eq!(s[0].waiting.len(), 1);
    }
}
