//! Opening the lock directory's files, which every local user can write, as hostile input.
//!
//! The default lock directory is the temp directory: another user can plant a symlink (to
//! `/etc/passwd`, say) where a lock file goes, a FIFO that blocks a reader, a sparse file of
//! gigabytes, or a hard link. So a lock or flag file is:
//!
//! - opened with `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`: a symlink is refused, a FIFO does not block
//!   the open;
//! - opened first without `O_CREAT`, because with `fs.protected_regular` (systemd's default) an
//!   `O_CREAT` open of another user's file in a sticky directory fails even for root, and created
//!   only with `O_CREAT | O_EXCL`, which never opens what someone else put there;
//! - used only if `fstat` shows a regular file with one link (not a FIFO, device or hard link to
//!   a file elsewhere);
//! - made shareable (mode 0666) only when this process created it: nothing else is ever chmod-ed;
//! - read with a small bound.
//!
//! A file that fails these checks is a [`LockError`]: the device is treated as held by someone
//! unknown and the work goes to the CPU, with one warning per file ([`warn_once`]).

use super::LockError;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Mutex;

/// Holder text longer than this is not a holder's ("pid level since-ms" is under 40 bytes).
pub(super) const TEXT_LIMIT: u64 = 256;

fn error(path: &Path, source: io::Error) -> LockError {
    LockError {
        path: path.to_path_buf(),
        source,
    }
}

fn options(write: bool) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.read(true)
        .write(write)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
    o
}

/// Opens an existing lock file read-write, or read-only where its mode allows no more (a flock
/// needs no write access; only the holder's text is then not written). `Ok(None)` if there is
/// no file at `path`.
pub(super) fn open_existing(path: &Path) -> Result<Option<File>, LockError> {
    let file = match options(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => match options(false).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(refused(path, e)),
        },
        Err(e) => return Err(refused(path, e)),
    };
    check(path, &file)?;
    Ok(Some(file))
}

/// Opens a lock file, creating it (mode 0666, so that other users' provers can lock it) if it
/// does not exist.
pub(super) fn open(path: &Path) -> Result<File, LockError> {
    // Two rounds: a file created by someone else between our open and our create is opened in
    // the second.
    for _ in 0..2 {
        if let Some(file) = open_existing(path)? {
            return Ok(file);
        }
        let mut create = options(true);
        create.create_new(true).mode(0o666);
        match create.open(path) {
            Ok(file) => {
                // The umask may have removed bits; the file is ours, so widening it is safe.
                if let Err(e) = file.set_permissions(std::fs::Permissions::from_mode(0o666)) {
                    log::debug!("gpu: cannot make {} shareable: {e}", path.display());
                }
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(error(path, e)),
        }
    }
    Err(error(
        path,
        io::Error::other("replaced while being created, twice"),
    ))
}

/// An open that failed: `ELOOP` from `O_NOFOLLOW` means a symlink, said plainly.
fn refused(path: &Path, e: io::Error) -> LockError {
    if e.raw_os_error() == Some(libc::ELOOP) {
        error(path, io::Error::other("is a symbolic link; not followed"))
    } else {
        error(path, e)
    }
}

/// A regular file with one link, or an error naming what it is.
fn check(path: &Path, file: &File) -> Result<(), LockError> {
    let meta = file.metadata().map_err(|e| error(path, e))?;
    if !meta.file_type().is_file() {
        return Err(error(path, io::Error::other("is not a regular file")));
    }
    if meta.nlink() != 1 {
        return Err(error(
            path,
            io::Error::other(format!("has {} hard links, not 1", meta.nlink())),
        ));
    }
    Ok(())
}

/// At most [`TEXT_LIMIT`] bytes of an existing lock file, as text (`None`: no such file, or not a
/// regular file with one link, or not text).
pub(super) fn read_text(path: &Path) -> Option<(String, File)> {
    let file = open_existing(path).ok()??;
    let mut bytes = Vec::new();
    (&file).take(TEXT_LIMIT).read_to_end(&mut bytes).ok()?;
    Some((String::from_utf8(bytes).ok()?, file))
}

/// Whether `file` is still the file at `path` (same device and inode). A temp cleaner that
/// deleted it, or anyone who replaced it, makes this false; so does an error reading either.
pub(super) fn is_at(path: &Path, file: &File) -> bool {
    match (std::fs::symlink_metadata(path), file.metadata()) {
        (Ok(on_disk), Ok(ours)) => on_disk.dev() == ours.dev() && on_disk.ino() == ours.ino(),
        _ => false,
    }
}

/// Logs `message` at warn level the first time this process logs one about `what` (a file, a
/// device), then at debug level: a service proving thousands of times beside one planted file
/// gets one warning, not thousands.
pub(crate) fn warn_once(what: &str, message: &str) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let first = WARNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(what.to_string());
    if first {
        log::warn!("{message}");
    } else {
        log::debug!("{message}");
    }
}

/// Warns (once per process) when the lock directory can be written by every user and has no
/// sticky bit: anyone could then delete or replace the files a prover holds, which the checks
/// here notice only after the fact.
pub(crate) fn warn_if_unsafe_dir(dir: &Path) {
    static CHECKED: std::sync::Once = std::sync::Once::new();
    CHECKED.call_once(|| {
        let Ok(meta) = std::fs::metadata(dir) else {
            return;
        };
        let mode = meta.permissions().mode();
        if mode & 0o002 != 0 && mode & 0o1000 == 0 {
            log::warn!(
                "gpu: lock directory {} is writable by every user and not sticky (mode {:o}): \
                 any user can delete or replace the lock files; see the README's production setup",
                dir.display(),
                mode & 0o7777
            );
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::super::test_dir::dir;

    #[test]
    fn creates_shareable_files_and_reopens_them() {
        let d = dir("create");
        let p = d.0.join("a.lock");
        drop(open(&p).unwrap());
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666);
        let f = open(&p).unwrap();
        assert!(is_at(&p, &f));
        std::fs::remove_file(&p).unwrap();
        assert!(!is_at(&p, &f));
    }

    #[test]
    fn refuses_symlinks_fifos_directories_and_hard_links() {
        let d = dir("refuse");
        let target = d.0.join("target");
        std::fs::write(&target, b"precious").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = d.0.join("link.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = open(&link).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let hard = d.0.join("hard.lock");
        std::fs::hard_link(&target, &hard).unwrap();
        assert!(open(&hard).unwrap_err().to_string().contains("hard links"));
        let fifo = d.0.join("fifo.lock");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert!(open(&fifo).unwrap_err().to_string().contains("regular"));
        assert!(read_text(&fifo).is_none());
        std::fs::create_dir(d.0.join("dir.lock")).unwrap();
        assert!(open(&d.0.join("dir.lock")).is_err());
        // The target is untouched: same text, same mode.
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn reads_at_most_the_text_limit() {
        let d = dir("huge");
        let p = d.0.join("huge.lock");
        let f = File::create(&p).unwrap();
        f.set_len(1 << 30).unwrap();
        let (text, _) = read_text(&p).unwrap();
        assert_eq!(text.len() as u64, TEXT_LIMIT);
    }
}
