//! The status view's reading of the lock files: who holds each device (the text its holder
//! wrote), which levels' flags are raised, and, on Linux, which processes hold those flags (from
//! `/proc/locks`), so that an operator sees who waits.

use super::file::{open_existing, read_text};
use super::{flag_path, flag_raised, lock_path, would_block, LockError};
use crate::priority::Priority;
use fs2::FileExt;
use std::fs::File;
use std::path::Path;

/// Who holds a device, as its lock file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The holder's process id, as its text says.
    pub pid: u32,
    /// Its priority, as its text says.
    pub priority: Priority,
    /// When it took the device, in milliseconds since the Unix epoch.
    pub since_unix_ms: u128,
    /// Whether the kernel's lock table (`/proc/locks`) shows process `pid` holding the file's
    /// exclusive lock. Anyone who can write the file can write any text into it; only a verified
    /// holder's level is acted on (a prover waits at its start only for a verified lower holder).
    /// Always false where `/proc/locks` cannot be read (other systems, other pid namespaces).
    pub verified: bool,
}

/// The holder named in `device`'s lock file, read without locking and with a bound (256 bytes):
/// callers use it right after a failed
/// [`super::GpuLock::try_acquire`], when the device is held. `None` if the text is missing,
/// partly written or not a holder's, or the file is not a regular file with one link.
pub fn holder_text(dir: &Path, device: &str) -> Option<Holder> {
    let (text, file) = read_text(&lock_path(dir, device))?;
    let mut parts = text.split_whitespace();
    let pid = parts.next()?.parse().ok()?;
    let priority = Priority::from_level(parts.next()?.parse().ok()?)?;
    let since_unix_ms = parts.next()?.parse().ok()?;
    let verified = flock_holders(&file).is_some_and(|holders| {
        holders
            .iter()
            .any(|h| h.pid == pid && h.exclusive && pid != 0)
    });
    Some(Holder {
        pid,
        priority,
        since_unix_ms,
        verified,
    })
}

/// One device as the status view shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    /// The device's id.
    pub device: String,
    /// Whether someone holds its lock (checked by a try-lock), whether or not its text says who.
    pub held: bool,
    /// Who holds it, as the holder's text says, if the device is held and the text reads as a
    /// holder's (see [`Holder::verified`] before trusting it).
    pub holder: Option<Holder>,
    /// Why its lock file cannot be used (a symlink, a FIFO, several links, ...), if so: provers
    /// then leave the device alone.
    pub unusable: Option<String>,
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
/// once and retry at its next chunk. Files are not created: a missing file is a free device or a
/// level nobody wants. A file that cannot be used shows in [`DeviceStatus::unusable`] (the lock
/// file) or is skipped (a flag), instead of failing the whole view.
pub fn status(dir: &Path, devices: &[String]) -> Result<Vec<DeviceStatus>, LockError> {
    devices
        .iter()
        .map(|device| device_status(dir, device))
        .collect()
}

fn device_status(dir: &Path, device: &str) -> Result<DeviceStatus, LockError> {
    let mut out = DeviceStatus {
        device: device.to_string(),
        held: false,
        holder: None,
        unusable: None,
        wanted_at: Vec::new(),
        waiting: Vec::new(),
    };
    let path = lock_path(dir, device);
    match open_existing(&path) {
        Ok(None) => {}
        Ok(Some(file)) => match FileExt::try_lock_shared(&file) {
            Ok(()) => {
                let _ = FileExt::unlock(&file);
            }
            Err(e) if would_block(&e) => {
                out.held = true;
                out.holder = holder_text(dir, device);
            }
            Err(source) => return Err(LockError { path, source }),
        },
        Err(e) => out.unusable = Some(e.source.to_string()),
    }
    for p in Priority::ALL {
        let path = flag_path(dir, device, p);
        let Ok(Some(file)) = open_existing(&path) else {
            continue;
        };
        if !flag_raised(&path, &file)? {
            continue;
        }
        out.wanted_at.push(p);
        if out.holder.as_ref().is_none_or(|h| p > h.priority) {
            out.waiting.push(Waiting {
                priority: p,
                pids: flock_holders(&file)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|h| h.pid)
                    .collect(),
            });
        }
    }
    for w in &mut out.waiting {
        w.pids.sort_unstable();
        w.pids.dedup();
    }
    Ok(out)
}

/// A process holding a `flock` on a file, as `/proc/locks` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FlockHolder {
    pid: u32,
    exclusive: bool,
}

/// The processes holding a `flock` on `file`, from `/proc/locks`, whose lines name each lock's
/// kind, process and file as `WRITE pid major:minor:inode` (the device numbers in hex). Where no
/// line has the file's device numbers (on btrfs `stat` gives a subvolume's number, not the one the
/// kernel prints), lines with its inode are taken. Read line by line (another user can hold many
/// locks), without pid 0 (a process the kernel does not show in this pid namespace). `None` where
/// that file cannot be read.
#[cfg(target_os = "linux")]
fn flock_holders(file: &File) -> Option<Vec<FlockHolder>> {
    use std::io::BufRead;
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    let locks = std::io::BufReader::new(File::open("/proc/locks").ok()?);
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let device = format!("{major:02x}:{minor:02x}");
    let inode = meta.ino().to_string();
    // Each flock held on a file with this inode, and whether the device numbers match.
    let mut holders: Vec<(FlockHolder, bool)> = Vec::new();
    for line in locks.lines() {
        let line = line.ok()?;
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE  1234 fe:00:5678 0 EOF"; blocked waiters ("->") are not
        // holders.
        let Some(at) = fields.iter().position(|f| *f == "FLOCK") else {
            continue;
        };
        if at == 0 || fields[at - 1] == "->" {
            continue;
        }
        let (Some(kind), Some(pid), Some(id)) =
            (fields.get(at + 2), fields.get(at + 3), fields.get(at + 4))
        else {
            continue;
        };
        let (Some((file_device, file_inode)), Ok(pid)) = (id.rsplit_once(':'), pid.parse()) else {
            continue;
        };
        if file_inode == inode && pid != 0 {
            let exclusive = *kind == "WRITE";
            holders.push((FlockHolder { pid, exclusive }, file_device == device));
        }
    }
    let exact = holders.iter().any(|&(_, same_device)| same_device);
    Some(
        holders
            .into_iter()
            .filter(|&(_, same_device)| same_device || !exact)
            .map(|(h, _)| h)
            .collect(),
    )
}

#[cfg(not(target_os = "linux"))]
fn flock_holders(_: &File) -> Option<Vec<FlockHolder>> {
    None
}

#[cfg(test)]
mod tests {
    use super::super::{GpuLock, PriorityFlag};
    use super::*;

    use super::super::test_dir::dir;

    #[test]
    fn unusable_files_show_as_such_and_do_not_fail_the_view() {
        let d = dir("unusable");
        std::os::unix::fs::symlink("/etc/passwd", lock_path(&d, "x")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", flag_path(&d, "x", Priority::High)).unwrap();
        let s = status(&d, &["x".to_string()]).unwrap();
        assert!(s[0].unusable.as_deref().unwrap().contains("symbolic link"));
        assert!(!s[0].held && s[0].wanted_at.is_empty());
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
