//! The lock protocol that shares GPUs between provers: threads of one process and separate
//! processes alike.
//!
//! Files, in the lock directory ([`lock_dir`]: `PREEMPTIBLE_GROTH16_LOCK_DIR`, else
//! `std::env::temp_dir()`), for each device id `D` and priority level `L` (0 lowest):
//!
//! - `pg16-D.lock`: an exclusive `flock` on it owns device `D` ([`GpuLock`]). The owner writes
//!   `pid level since-unix-ms` into it for the status view and empties it on release.
//! - `pg16-D.want-L.flag`: a shared `flock` on it says "a prover at level L wants or uses D"
//!   ([`PriorityFlag`]). A holder at level q probes the flags of levels above q with a
//!   non-blocking exclusive try-lock ([`HigherPriorityProbe`]): if that fails, someone above
//!   waits, and the holder yields between chunks.
//!
//! Invariants:
//!
//! 1. At most one [`GpuLock`] per device exists at any time, across all processes.
//! 2. A prover raises the flag of its own level only; holders probe only levels strictly above
//!    their own. So nobody yields to itself or to its equals: a prover that finds the device held
//!    at its own level computes on the CPU and takes the device at a chunk boundary once it is
//!    free, in no fixed order among equals.
//! 3. Every lock is a `flock` on an open file description, released by the kernel when the file
//!    is closed or its process dies: a crash at any point leaves nothing locked. A lock file's
//!    text may be stale after a crash; it is trusted only while the file is locked.
//! 4. Nothing here waits for long: acquisition and probes are try-locks; the shared lock of a
//!    flag waits at most for a probe, which holds its exclusive lock for two system calls.
//!    Callers that wait for a device sleep between tries.
//! 5. A probe that meets another probe (the status view's, say) does not read it as a request: a
//!    failed exclusive try is followed by a shared one and, if that succeeds, by converting it to
//!    exclusive, which fails only beside a flag held shared, that is raised (`flag_raised`); and a
//!    holder yields only when a flag reads raised twice, 200 us apart. Without this, a status view
//!    beside a holder makes it yield for nothing: beside the demo's status view, which samples
//!    every 2 ms, a 2^24 low prover that reads a failed exclusive try as a request yields 21 times
//!    for 12 high-priority proofs, 9 of them with no higher prover taking the device; with the
//!    shared try but no conversion, 13 times for 12 (H200; docs/BENCHMARKS.md). The conversion
//!    relies on Linux `flock`, which drops our shared lock before it checks for others; where
//!    converting on the same file fails against our own lock, a probe meeting a probe can still
//!    read as a request (a needless yield, never a missed request). A prover about to try for a
//!    device reads the flags above once, without the pause, and does not try if one is raised:
//!    a wrong yes only puts its try off.
//! 6. A file that cannot be created, opened or locked is a [`LockError`], never a panic; the
//!    caller then computes on the CPU.
//! 7. Deleting the lock directory while provers run breaks invariant 1 for a moment: a holder
//!    keeps its lock on the deleted file while a newcomer locks a new one. Holders check
//!    [`GpuLock::is_current`] at every probe and stop when it fails, so the overlap lasts at
//!    most one chunk. A temp cleaner deleting a flag file is the same case: probes reopen a flag
//!    whose path names another file, and a raised flag is raised again on the new file
//!    ([`PriorityFlag::refresh`]), so a request is seen again within one wait step.
//! 8. Every file in the directory is hostile input ([`file`]): no symlink is followed, nothing
//!    that is not a regular file with one link is used, only files this process created are
//!    chmod-ed, holder text is read with a bound. Nothing waits without bound on a file another
//!    user can lock: a flag is raised with a few non-blocking tries ([`PriorityFlag::raise`]), and
//!    a holder's text is believed only where the kernel's lock table shows its pid holding the
//!    lock ([`Holder::verified`]). What anyone who can open the files can still do (keep a
//!    device for themselves) is written down in docs/RELIABILITY.md, "Threat model".
//! 9. bellperson 0.27's provers are part of the protocol ([`bellperson`]): a [`GpuLock`] also
//!    holds a shared lock on `bellman.gpu.lock` and on the device's `bellman.gpu.lock.<id>` (the
//!    file bellperson locks per device with `BELLPERSON_GPUS_PER_LOCK`), so a bellperson prover
//!    and ours never hold a GPU at once; either file held exclusively makes the device busy, its
//!    holder a `Normal` one; and `bellman.priority.lock` held exclusively is a `High` request.
//!
//! flock is per open file description, so two threads that each open the file contend exactly
//! as two processes do: one mechanism serves both. (Calls name `fs2::FileExt` explicitly: recent
//! `std` has file-lock methods of the same names with other signatures.)

use crate::priority::Priority;
use fs2::FileExt;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub mod bellperson;
mod file;
mod status;

use file::{is_at, open};
pub(crate) use file::{warn_if_unsafe_dir, warn_once};

pub use status::{holder_text, status, DeviceStatus, Holder, Waiting};

pub use crate::config::LOCK_DIR_ENV;

/// A lock file that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("lock file {path}: {source}")]
pub struct LockError {
    /// The file.
    pub path: PathBuf,
    /// What the system said.
    pub source: std::io::Error,
}

/// The lock directory: `PREEMPTIBLE_GROTH16_LOCK_DIR`, else the temp directory.
pub fn lock_dir() -> PathBuf {
    crate::config::Config::from_env().lock_dir
}

/// A device id made safe as part of a file name.
fn file_stem(device: &str) -> String {
    let safe: String = device
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("pg16-{safe}")
}

fn lock_path(dir: &Path, device: &str) -> PathBuf {
    dir.join(format!("{}.lock", file_stem(device)))
}

fn flag_path(dir: &Path, device: &str, priority: Priority) -> PathBuf {
    dir.join(format!(
        "{}.want-{}.flag",
        file_stem(device),
        priority.level()
    ))
}

fn would_block(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::WouldBlock || e.raw_os_error() == Some(11)
}

/// Ownership of one device: an exclusive flock on its lock file. Dropping it empties the file
/// and releases the device.
#[derive(Debug)]
pub struct GpuLock {
    file: File,
    /// Our share of bellperson's GPU lock files ([`bellperson`]), released with ours.
    _bellperson: bellperson::SharedGpuLock,
    path: PathBuf,
    device: String,
    priority: Priority,
    since: Instant,
}

impl GpuLock {
    /// Takes the device if nobody holds it; `Ok(None)` if somebody does. Beside it, shares
    /// bellperson's single GPU lock file only: [`GpuLock::try_acquire_sharing`] with `None`.
    pub fn try_acquire(
        dir: &Path,
        device: &str,
        priority: Priority,
    ) -> Result<Option<GpuLock>, LockError> {
        GpuLock::try_acquire_sharing(dir, device, priority, None)
    }

    /// Takes the device if nobody holds it, sharing bellperson's GPU lock files that cover it
    /// ([`bellperson`]): `bellman.gpu.lock`, and with `bellperson_id` the device's
    /// `bellman.gpu.lock.<bellperson_id>` too (the file bellperson locks per device). `Ok(None)` if somebody holds
    /// the device, a bellperson prover included.
    pub fn try_acquire_sharing(
        dir: &Path,
        device: &str,
        priority: Priority,
        bellperson_id: Option<&str>,
    ) -> Result<Option<GpuLock>, LockError> {
        let path = lock_path(dir, device);
        let mut file = open(&path)?;
        match FileExt::try_lock_exclusive(&file) {
            Ok(()) => {}
            Err(e) if would_block(&e) => return Ok(None),
            Err(source) => return Err(LockError { path, source }),
        }
        // A bellperson prover on the GPUs: the device is busy. Our lock goes before any text is
        // written (dropping the file releases it).
        let Some(bellperson) = bellperson::share_gpu_lock(&bellperson::dir(), bellperson_id)?
        else {
            return Ok(None);
        };
        let since_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let text = format!("{} {} {since_ms}\n", std::process::id(), priority.level());
        // The text is for the status view only; failing to write it does not lose the device.
        let _ = file
            .set_len(0)
            .and_then(|_| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(text.as_bytes()));
        Ok(Some(GpuLock {
            file,
            _bellperson: bellperson,
            path,
            device: device.to_string(),
            priority,
            since: Instant::now(),
        }))
    }

    /// The device's id.
    pub fn device(&self) -> &str {
        &self.device
    }

    /// The priority it was taken at.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// Whether the lock file is still the one at its path. If the lock directory was deleted
    /// (or the file replaced) while we hold it, another prover can create a new file there and
    /// take the device: the holder must then stop at its next probe (invariant 1 holds again from
    /// there). Errors reading either file count as "no longer ours".
    pub fn is_current(&self) -> bool {
        is_at(&self.path, &self.file)
    }

    /// How long it has been held.
    pub fn held_for(&self) -> std::time::Duration {
        self.since.elapsed()
    }
}

impl Drop for GpuLock {
    /// Empties the holder's text and unlocks. Neither failing loses the device for anyone (the
    /// kernel drops the lock when the file closes, right after); both are logged at debug level.
    fn drop(&mut self) {
        if let Err(e) = self.file.set_len(0) {
            log::debug!("gpu: could not empty {}: {e}", self.path.display());
        }
        if let Err(e) = FileExt::unlock(&self.file) {
            log::debug!(
                "gpu: could not unlock {} (the close releases it): {e}",
                self.path.display()
            );
        }
    }
}

/// Pause before a raised flag is read again ([`HigherPriorityProbe::anyone_waiting`]).
const CONFIRM_PAUSE: std::time::Duration = std::time::Duration::from_micros(200);

/// How often [`PriorityFlag::raise`] tries for the flag's shared lock, and the pause between
/// tries: a probe holds the file exclusively for two system calls, so 20 tries 100 us apart (2 ms)
/// get through any number of probes, while a file that another user holds exclusively on purpose
/// costs 2 ms and an error instead of a wait without end.
const RAISE_TRIES: u32 = 20;
const RAISE_PAUSE: Duration = Duration::from_micros(100);

/// "A prover at this level wants or uses this device": a shared flock on the level's flag file,
/// held until dropped.
#[derive(Debug)]
pub struct PriorityFlag {
    file: File,
    path: PathBuf,
}

impl PriorityFlag {
    /// Raises the flag of `priority` for `device`. Fails, after at most 2 ms, if the file stays
    /// locked exclusively (by someone who is not a probe).
    pub fn raise(dir: &Path, device: &str, priority: Priority) -> Result<PriorityFlag, LockError> {
        let path = flag_path(dir, device, priority);
        let file = open(&path)?;
        lock_shared_soon(&path, &file)?;
        Ok(PriorityFlag { file, path })
    }

    /// Whether the flag is still raised on the file at its path (a temp cleaner may have deleted
    /// it, or someone replaced it: holders then probe a new file and cannot see this one).
    pub fn is_current(&self) -> bool {
        is_at(&self.path, &self.file)
    }

    /// Raises the flag again on the file now at its path if it is no longer current; the old
    /// lock is kept until the new one is held, so the request never drops for a moment. An error
    /// (the new file unusable) keeps the old flag and is returned for the caller to log.
    pub fn refresh(&mut self) -> Result<(), LockError> {
        if self.is_current() {
            return Ok(());
        }
        let file = open(&self.path)?;
        lock_shared_soon(&self.path, &file)?;
        log::info!(
            "gpu: flag {} was deleted or replaced; raised again",
            self.path.display()
        );
        self.file = file;
        Ok(())
    }
}

/// A shared lock on `file` within [`RAISE_TRIES`] non-blocking tries, or an error.
fn lock_shared_soon(path: &Path, file: &File) -> Result<(), LockError> {
    let error = |source| LockError {
        path: path.to_path_buf(),
        source,
    };
    for _ in 0..RAISE_TRIES {
        match FileExt::try_lock_shared(file) {
            Ok(()) => return Ok(()),
            Err(e) if would_block(&e) => std::thread::sleep(RAISE_PAUSE),
            Err(source) => return Err(error(source)),
        }
    }
    Err(error(std::io::Error::new(
        std::io::ErrorKind::WouldBlock,
        "held exclusively by another process for 2 ms",
    )))
}

/// The flags above one level of one device, kept open so that a probe is two system calls per
/// level (and a `stat` to notice a flag file deleted or replaced).
#[derive(Debug)]
pub struct HigherPriorityProbe {
    /// Each level's flag path and open file; behind a mutex only so that a file can be reopened
    /// through `&self` (one thread probes a held device at a time).
    flags: std::sync::Mutex<Vec<(PathBuf, File)>>,
    /// bellperson's priority lock, a `High` request, for holders below `High`.
    bellperson: Option<(PathBuf, File)>,
}

impl HigherPriorityProbe {
    /// The probe for a holder of `device` at `priority`.
    pub fn open(
        dir: &Path,
        device: &str,
        priority: Priority,
    ) -> Result<HigherPriorityProbe, LockError> {
        let flags = Priority::ALL
            .into_iter()
            .filter(|p| *p > priority)
            .map(|p| {
                let path = flag_path(dir, device, p);
                open(&path).map(|f| (path, f))
            })
            .collect::<Result<_, _>>()?;
        let bellperson = if priority < Priority::High {
            let path = bellperson::priority_lock_path(&bellperson::dir());
            match open(&path) {
                Ok(file) => Some((path, file)),
                Err(e) => {
                    warn_once(&path.to_string_lossy(), &format!("gpu: {e}; not probed"));
                    None
                }
            }
        } else {
            None
        };
        Ok(HigherPriorityProbe {
            flags: std::sync::Mutex::new(flags),
            bellperson,
        })
    }

    /// Whether a prover of a higher level has raised its flag. A flag that reads raised is read
    /// again 200 us later and counts only if it still is: a real request stays up
    /// until its prover has the device, while two probes meeting (invariant 5) last
    /// microseconds. The pause is added to every hand-over. A flag file no longer at its path
    /// (invariant 7) is reopened first; one that cannot be is warned about once and probed as it
    /// was.
    pub fn anyone_waiting(&self) -> Result<bool, LockError> {
        self.raised(true)
    }

    /// Whether a flag above reads raised at one look, without the confirmation's pause: for a
    /// prover deciding whether to try for a free device, where a wrong yes (two probes meeting)
    /// only puts the try off to the next one, and a pause at every try would slow its CPU work
    /// beside a higher prover's device.
    pub fn anyone_may_be_waiting(&self) -> Result<bool, LockError> {
        self.raised(false)
    }

    fn raised(&self, confirm: bool) -> Result<bool, LockError> {
        let mut flags = self.flags.lock().unwrap_or_else(|e| e.into_inner());
        for (path, file) in flags.iter_mut() {
            if !is_at(path, file) {
                match open(path) {
                    Ok(new) => *file = new,
                    Err(e) => warn_once(
                        &path.to_string_lossy(),
                        &format!("gpu: cannot reopen a flag: {e}"),
                    ),
                }
            }
            if flag_raised(path, file)? {
                if !confirm {
                    return Ok(true);
                }
                std::thread::sleep(CONFIRM_PAUSE);
                if flag_raised(path, file)? {
                    return Ok(true);
                }
            }
        }
        if let Some((path, file)) = &self.bellperson {
            if bellperson::priority_taken(path, file)? {
                if !confirm {
                    return Ok(true);
                }
                std::thread::sleep(CONFIRM_PAUSE);
                return bellperson::priority_taken(path, file);
            }
        }
        Ok(false)
    }
}

/// Whether the flag open as `file` is raised: held shared by another prover. Three tries on our
/// own file description tell a raised flag from a probe that holds the file for an instant:
///
/// 1. An exclusive try succeeds: nobody holds the file, no.
/// 2. It failed; a shared try fails too: another probe holds it exclusively, which excludes any
///    raised flag at this moment (one raised meanwhile is seen at the next probe), no.
/// 3. The shared try succeeded, which happens both beside a raised flag and after the other
///    probe let go between our two tries (without the conversion, this race makes a 2^24 holder
///    yield for nothing about once in 13 preemptions on the H200). Converting our shared lock to
///    an exclusive one tells them apart: it succeeds only when nobody else holds the file.
///
/// Two probes in step 3 at once can still read each other as raised;
/// [`HigherPriorityProbe::anyone_waiting`] reads a flag twice before it says yes.
fn flag_raised(path: &Path, file: &File) -> Result<bool, LockError> {
    let error = |source| LockError {
        path: path.to_path_buf(),
        source,
    };
    match FileExt::try_lock_exclusive(file) {
        Ok(()) => {
            FileExt::unlock(file).map_err(error)?;
            return Ok(false);
        }
        Err(e) if would_block(&e) => {}
        Err(source) => return Err(error(source)),
    }
    match FileExt::try_lock_shared(file) {
        Ok(()) => {}
        Err(e) if would_block(&e) => return Ok(false),
        Err(source) => return Err(error(source)),
    }
    // A failed conversion may leave us holding nothing (flock converts by unlocking first);
    // the unlock below is then a no-op.
    let raised = match FileExt::try_lock_exclusive(file) {
        Ok(()) => false,
        Err(e) if would_block(&e) => true,
        Err(source) => return Err(error(source)),
    };
    FileExt::unlock(file).map_err(error)?;
    Ok(raised)
}

/// A test's lock directory, removed when the test ends (also when it fails): for the unit tests
/// of this module and its submodules.
#[cfg(test)]
mod test_dir {
    use std::path::{Path, PathBuf};

    pub struct Dir(pub PathBuf);

    impl std::ops::Deref for Dir {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A fresh, empty directory for the test `name` (names are unique across the lock tests).
    pub fn dir(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("pg16-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use test_dir::dir;

    #[test]
    fn a_flag_held_exclusively_by_someone_else_fails_fast() {
        let d = dir("held-flag");
        let hostile = open(&flag_path(&d, "g", Priority::High)).unwrap();
        FileExt::try_lock_exclusive(&hostile).unwrap();
        let t = Instant::now();
        assert!(PriorityFlag::raise(&d, "g", Priority::High).is_err());
        assert!(
            t.elapsed() < Duration::from_millis(500),
            "{:?}",
            t.elapsed()
        );
        FileExt::unlock(&hostile).unwrap();
        assert!(PriorityFlag::raise(&d, "g", Priority::High).is_ok());
    }

    #[test]
    fn holder_text_is_verified_against_the_lock_table() {
        let d = dir("verify");
        let lock = GpuLock::try_acquire(&d, "g", Priority::Low)
            .unwrap()
            .unwrap();
        let h = holder_text(&d, "g").unwrap();
        assert_eq!(h.verified, cfg!(target_os = "linux"), "{h:?}");
        // Text that names another process (pid 1) is not believed.
        std::fs::write(lock_path(&d, "g"), "1 0 0\n").unwrap();
        let h = holder_text(&d, "g").unwrap();
        assert_eq!((h.pid, h.verified), (1, false));
        drop(lock);
        // Text left behind with nobody holding the lock is not believed either.
        std::fs::write(lock_path(&d, "g"), format!("{} 0 0\n", std::process::id())).unwrap();
        assert!(!holder_text(&d, "g").unwrap().verified);
    }

    #[test]
    fn a_deleted_flag_file_is_raised_again_and_probes_follow_it() {
        let d = dir("cleaned");
        let low = HigherPriorityProbe::open(&d, "g", Priority::Low).unwrap();
        let mut flag = PriorityFlag::raise(&d, "g", Priority::High).unwrap();
        assert!(low.anyone_waiting().unwrap());
        // A temp cleaner deletes the flag file: the probe reopens the path (a new, empty file)
        // and sees nothing until the flag is raised again there.
        std::fs::remove_file(flag_path(&d, "g", Priority::High)).unwrap();
        assert!(!flag.is_current());
        assert!(!low.anyone_waiting().unwrap());
        flag.refresh().unwrap();
        assert!(flag.is_current());
        assert!(low.anyone_waiting().unwrap());
        drop(flag);
        assert!(!low.anyone_waiting().unwrap());
    }

    #[test]
    fn one_holder_per_device_and_release_on_drop() {
        let d = dir("one");
        let a = GpuLock::try_acquire(&d, "dev:0", Priority::Low).unwrap();
        assert!(a.is_some());
        assert!(GpuLock::try_acquire(&d, "dev:0", Priority::High)
            .unwrap()
            .is_none());
        assert!(GpuLock::try_acquire(&d, "dev:1", Priority::High)
            .unwrap()
            .is_some());
        let h = holder_text(&d, "dev:0").unwrap();
        assert_eq!((h.pid, h.priority), (std::process::id(), Priority::Low));
        drop(a);
        assert!(holder_text(&d, "dev:0").is_none(), "the text is emptied");
        assert!(GpuLock::try_acquire(&d, "dev:0", Priority::High)
            .unwrap()
            .is_some());
    }

    #[test]
    fn holders_see_only_higher_flags() {
        let d = dir("flags");
        let low = HigherPriorityProbe::open(&d, "g", Priority::Low).unwrap();
        let normal = HigherPriorityProbe::open(&d, "g", Priority::Normal).unwrap();
        let high = HigherPriorityProbe::open(&d, "g", Priority::High).unwrap();
        assert!(!low.anyone_waiting().unwrap());
        let own = PriorityFlag::raise(&d, "g", Priority::Normal).unwrap();
        assert!(low.anyone_waiting().unwrap());
        assert!(!normal.anyone_waiting().unwrap(), "not its own level");
        let h = PriorityFlag::raise(&d, "g", Priority::High).unwrap();
        let h2 = PriorityFlag::raise(&d, "g", Priority::High).unwrap();
        assert!(normal.anyone_waiting().unwrap());
        assert!(!high.anyone_waiting().unwrap(), "nothing above high");
        drop(h);
        assert!(normal.anyone_waiting().unwrap(), "two high flags, one left");
        drop(h2);
        assert!(!normal.anyone_waiting().unwrap());
        assert!(!HigherPriorityProbe::open(&d, "other", Priority::Low)
            .unwrap()
            .anyone_waiting()
            .unwrap());
        drop(own);
        assert!(!low.anyone_waiting().unwrap());
    }

    #[test]
    fn a_probe_meeting_another_probe_sees_no_request() {
        let d = dir("probes");
        let low = HigherPriorityProbe::open(&d, "g", Priority::Low).unwrap();
        // Another probe of the high flag (the status view's, or a holder's) at this moment: an
        // exclusive lock through a file description of its own.
        let other = open(&flag_path(&d, "g", Priority::High)).unwrap();
        FileExt::try_lock_exclusive(&other).unwrap();
        assert!(!low.anyone_waiting().unwrap(), "a probe is not a request");
        assert!(status(&d, &["g".to_string()]).unwrap()[0]
            .wanted_at
            .is_empty());
        FileExt::unlock(&other).unwrap();
        // A raised flag still reads as one.
        let h = PriorityFlag::raise(&d, "g", Priority::High).unwrap();
        assert!(low.anyone_waiting().unwrap());
        drop(h);
        assert!(!low.anyone_waiting().unwrap());
    }

    #[test]
    fn probes_racing_a_busy_status_view_see_no_request_and_still_see_a_real_one() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let d = dir("busy-probes");
        let low = HigherPriorityProbe::open(&d, "g", Priority::Low).unwrap();
        let stop = AtomicBool::new(false);
        // Stops the status views however the scope ends (a failed assertion included), so that
        // the test fails rather than hangs.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let (spurious, seen) = std::thread::scope(|scope| {
            let _stop = Stop(&stop);
            // Two status views probing the high flag every 100 us (the demo's samples it every
            // 2 ms), each through its own file description: their exclusive locks come and go
            // between our tries.
            for _ in 0..2 {
                scope.spawn(|| {
                    let view = HigherPriorityProbe::open(&d, "g", Priority::Normal).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        let _ = view.anyone_waiting();
                        std::thread::sleep(std::time::Duration::from_micros(100));
                    }
                });
            }
            let mut spurious = 0;
            for _ in 0..3000 {
                spurious += low.anyone_waiting().unwrap_or(true) as usize;
                std::thread::sleep(std::time::Duration::from_micros(10));
            }
            // A raised flag reads raised through the same traffic.
            let h = PriorityFlag::raise(&d, "g", Priority::High).unwrap();
            let seen = (0..20).all(|_| low.anyone_waiting().unwrap_or(false));
            drop(h);
            (spurious, seen)
        });
        assert!(seen, "a raised flag was missed beside busy status views");
        assert_eq!(spurious, 0, "probes read other probes as requests");
    }

    /// Where bellperson locks per device: a held device's own bellperson file cannot be locked
    /// exclusively (bellperson's try-lock skips the device) until the device is released, and
    /// that file held exclusively makes the device busy for us.
    #[test]
    fn a_held_device_keeps_bellpersons_per_device_try_lock_off() {
        let d = dir("bellperson-per-device");
        // A unique id: bellperson's files are in the temp directory that every test shares.
        let id = format!("pg16-test-{}", std::process::id());
        let file = bellperson::dir().join(format!("bellman.gpu.lock.{id}"));
        let theirs = File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&file)
            .unwrap();
        let ours = GpuLock::try_acquire_sharing(&d, "g", Priority::Low, Some(&id))
            .unwrap()
            .unwrap();
        assert!(FileExt::try_lock_exclusive(&theirs).is_err());
        drop(ours);
        FileExt::try_lock_exclusive(&theirs).unwrap();
        assert!(
            GpuLock::try_acquire_sharing(&d, "g", Priority::High, Some(&id))
                .unwrap()
                .is_none()
        );
        assert!(bellperson::holds_gpu(&bellperson::dir(), Some(&id)));
        // Another device is not covered by that file.
        assert!(
            GpuLock::try_acquire_sharing(&d, "h", Priority::High, Some("pg16-none"))
                .unwrap()
                .is_some()
        );
        FileExt::unlock(&theirs).unwrap();
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(bellperson::dir().join("bellman.gpu.lock.pg16-none"));
    }

    #[test]
    fn a_deleted_directory_is_noticed_by_the_holder() {
        let d = dir("deleted");
        let old = GpuLock::try_acquire(&d, "x", Priority::Low)
            .unwrap()
            .unwrap();
        assert!(old.is_current());
        std::fs::remove_dir_all(&*d).unwrap();
        assert!(!old.is_current());
        std::fs::create_dir_all(&*d).unwrap();
        // A new file lets another prover in: the old holder must notice (it probes) and stop.
        let new = GpuLock::try_acquire(&d, "x", Priority::Low)
            .unwrap()
            .unwrap();
        assert!(new.is_current());
        assert!(!old.is_current());
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let d = std::env::temp_dir().join("pg16-no-such-dir/deeper");
        assert!(GpuLock::try_acquire(&d, "x", Priority::Low).is_err());
        assert!(PriorityFlag::raise(&d, "x", Priority::Low).is_err());
    }
}
