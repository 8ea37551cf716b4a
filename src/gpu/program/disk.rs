//! The disk cache of program binaries, kept where no other local user can plant one.
//!
//! A program binary is code the driver loads and runs without compiling it: whoever can write the
//! cache directory, or swap a file in it, chooses what a prover computes (and, for a prover run as
//! root, runs code as root). So the directory is used only when the process's effective user owns
//! it and neither its group nor others can write it, judged from the directory itself: a symbolic
//! link there is refused, not followed. A directory made here is made with mode 0700. A cached file
//! is opened without following a symbolic link and read only if it is a regular file of ours that
//! no one else can write, of at most [`MAX_BINARY`] bytes. When the directory fails a check (or
//! none is configured) programs are cached in memory only, and the process warns once.
//!
//! Only the last component of the directory is checked: a parent that others can write (other
//! than a sticky temp directory) lets them swap the whole directory between the check and an open,
//! and the per-file owner check is then what keeps their files out.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::config::Config;
pub use crate::config::CACHE_DIR_ENV;

/// The largest program binary read from (or written to) the cache. The largest of this crate's
/// programs on PoCL is 0.5 MB (the G2 multiexp); the bound leaves drivers with bulkier formats a
/// hundred times that, and keeps a planted file from costing its whole size in memory.
pub const MAX_BINARY: u64 = 64 << 20;

/// Permission bits that let the group or others write.
const WRITABLE_BY_OTHERS: u32 = 0o022;

/// Why the disk cache, or one file of it, is not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// None of the variables that name a cache directory is set.
    #[error("no cache directory: none of {CACHE_DIR_ENV}, XDG_CACHE_HOME or HOME is set")]
    NoDirectory,
    /// The path is a symbolic link, which is not followed.
    #[error("{} is a symbolic link", .0.display())]
    Symlink(PathBuf),
    /// The cache directory's path is something other than a directory.
    #[error("{} is not a directory", .0.display())]
    NotDirectory(PathBuf),
    /// A cached file is not a regular file (a FIFO, a device, a directory).
    #[error("{} is not a regular file", .0.display())]
    NotRegular(PathBuf),
    /// The path belongs to another user.
    #[error("{} belongs to uid {owner}, not to this process's uid {euid}", path.display())]
    NotOurs {
        /// The directory or file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The process's effective user.
        euid: u32,
    },
    /// The group or others can write the path.
    #[error("{} is writable by group or others (mode {mode:o}; `chmod go-w` it)", path.display())]
    Writable {
        /// The directory or file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A binary larger than [`MAX_BINARY`].
    #[error("{} is {len} bytes, more than a program binary's {MAX_BINARY}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        len: u64,
    },
    /// The driver handed back no binary to cache.
    #[error("the driver gave no program binary: {0}")]
    NoBinary(String),
    /// An I/O error on the path.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// Where built programs are kept between processes ([`cache_dir`]).
#[derive(Debug)]
pub enum CacheDir {
    /// In this directory: ours and private, or not made yet (made with mode 0700 at the first
    /// store).
    Disk(PathBuf),
    /// In memory only, for this reason.
    MemoryOnly(CacheError),
}

impl CacheDir {
    /// For printing, as `Path::display` is.
    pub fn display(&self) -> &Self {
        self
    }
}

impl std::fmt::Display for CacheDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheDir::Disk(dir) => write!(f, "{}", dir.display()),
            CacheDir::MemoryOnly(why) => write!(f, "in memory only ({why})"),
        }
    }
}

/// The directory for cached program binaries: [`CACHE_DIR_ENV`], else `$XDG_CACHE_HOME` or
/// `$HOME/.cache` with `preemptible-groth16/` appended, if it passes the checks of the module
/// docs; read at each call, as builds are rare and tests point it elsewhere.
pub fn cache_dir() -> CacheDir {
    match configured_dir().and_then(|dir| check_dir(&dir, true).map(|()| dir)) {
        Ok(dir) => CacheDir::Disk(dir),
        Err(why) => CacheDir::MemoryOnly(why),
    }
}

/// The cache directory for a build, or `None` (memory only) with one warning per process.
pub(super) fn usable_dir() -> Option<PathBuf> {
    static WARNED: AtomicBool = AtomicBool::new(false);
    match cache_dir() {
        CacheDir::Disk(dir) => Some(dir),
        CacheDir::MemoryOnly(why) => {
            if WARNED.swap(true, Ordering::Relaxed) {
                log::debug!("gpu: programs are cached in memory only: {why}");
            } else {
                log::warn!("gpu: programs are cached in memory only: {why}");
            }
            None
        }
    }
}

fn configured_dir() -> Result<PathBuf, CacheError> {
    Config::from_env().cache_dir.ok_or(CacheError::NoDirectory)
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks that `dir` itself, not a link's target, is a directory of ours that no one else can
/// write; a missing one passes when `missing_ok` (it will be made private).
fn check_dir(dir: &Path, missing_ok: bool) -> Result<(), CacheError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Err(e) if missing_ok && e.kind() == io::ErrorKind::NotFound => return Ok(()),
        found => found.map_err(io_at(dir))?,
    };
    if meta.file_type().is_symlink() {
        return Err(CacheError::Symlink(dir.to_path_buf()));
    }
    if !meta.is_dir() {
        return Err(CacheError::NotDirectory(dir.to_path_buf()));
    }
    check_private(dir, &meta)
}

/// Checks that `path` (described by `meta`) is ours and that no one else can write it.
fn check_private(path: &Path, meta: &std::fs::Metadata) -> Result<(), CacheError> {
    let euid = euid();
    if meta.uid() != euid {
        return Err(CacheError::NotOurs {
            path: path.to_path_buf(),
            owner: meta.uid(),
            euid,
        });
    }
    if meta.mode() & WRITABLE_BY_OTHERS != 0 {
        return Err(CacheError::Writable {
            path: path.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

#[allow(unsafe_code)]
fn euid() -> u32 {
    // SAFETY: `geteuid` takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// The cached binary `name` in `dir`: `Ok(None)` when there is none, an error when the file is
/// not one to trust (module docs) or cannot be read.
pub(super) fn load(dir: &Path, name: &str) -> Result<Option<Vec<u8>>, CacheError> {
    let path = dir.join(name);
    // Non-blocking, so that a FIFO cannot hang the open; regular files ignore the flag.
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
    {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(CacheError::Symlink(path)),
        opened => opened.map_err(io_at(&path))?,
    };
    let meta = file.metadata().map_err(io_at(&path))?;
    if !meta.is_file() {
        return Err(CacheError::NotRegular(path));
    }
    check_private(&path, &meta)?;
    let too_large = |len| CacheError::TooLarge {
        path: path.clone(),
        len,
    };
    if meta.len() > MAX_BINARY {
        return Err(too_large(meta.len()));
    }
    // Bounded again while reading: the file may grow after the `fstat`.
    let mut binary = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_BINARY + 1)
        .read_to_end(&mut binary)
        .map_err(io_at(&path))?;
    if binary.len() as u64 > MAX_BINARY {
        return Err(too_large(binary.len() as u64));
    }
    Ok(Some(binary))
}

/// Writes `binary` as `name` in `dir` (made with mode 0700 if missing): into a temporary file of
/// this process and thread, synced, then renamed into place, so that a reader finds a whole
/// binary or none. On an error the temporary file is removed.
pub(super) fn store(dir: &Path, name: &str, binary: &[u8]) -> Result<(), CacheError> {
    let path = dir.join(name);
    if binary.len() as u64 > MAX_BINARY {
        return Err(CacheError::TooLarge {
            path,
            len: binary.len() as u64,
        });
    }
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_at(dir))?;
    // Checked again: the directory may have been made, or replaced, since `cache_dir` looked.
    check_dir(dir, false)?;
    // The process id and a counter of the process: two threads or processes never share a
    // temporary file, and `create_new` refuses a name that someone else made.
    static TEMPORARIES: AtomicU64 = AtomicU64::new(0);
    let n = TEMPORARIES.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(io_at(&tmp))?;
    let written = file
        .write_all(binary)
        .and_then(|()| file.sync_all())
        .map_err(io_at(&tmp))
        .and_then(|()| std::fs::rename(&tmp, &path).map_err(io_at(&path)));
    drop(file);
    if written.is_err() {
        // Best effort: the error that matters is the one returned.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private temporary directory, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            let path = std::env::temp_dir().join(format!("pg16-disk-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            DirBuilder::new().mode(0o700).create(&path).expect("dir");
            TempDir(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Threads storing the same binary at once each use a temporary file of their own: all
    /// succeed, and one private file is left, with no temporaries beside it.
    #[test]
    fn concurrent_stores_leave_one_private_file() {
        let dir = TempDir::new("concurrent");
        let cache = dir.0.join("cache");
        let binary = vec![0xa5u8; 1 << 16];
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| store(&cache, "k.bin", &binary).expect("store"));
            }
        });
        let names: Vec<_> = std::fs::read_dir(&cache)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["k.bin"]);
        let mode = |p: &Path| std::fs::symlink_metadata(p).expect("stat").mode() & 0o777;
        assert_eq!(mode(&cache), 0o700);
        assert_eq!(mode(&cache.join("k.bin")), 0o600);
        assert_eq!(load(&cache, "k.bin").expect("load"), Some(binary));
        assert!(load(&cache, "missing.bin").expect("no file").is_none());
    }

    /// A FIFO under a cached binary's name is refused at once, not waited on.
    #[test]
    fn a_fifo_is_not_read() {
        let dir = TempDir::new("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(dir.0.join("k.bin"))
            .status()
            .expect("mkfifo");
        assert!(status.success());
        assert!(matches!(
            load(&dir.0, "k.bin"),
            Err(CacheError::NotRegular(_))
        ));
    }

    /// A binary too large to be read back is not written.
    #[test]
    fn an_oversized_binary_is_not_stored() {
        let dir = TempDir::new("oversized");
        let binary = vec![0u8; MAX_BINARY as usize + 1];
        let stored = store(&dir.0, "k.bin", &binary);
        assert!(matches!(stored, Err(CacheError::TooLarge { .. })));
        assert_eq!(std::fs::read_dir(&dir.0).expect("read dir").count(), 0);
    }
}
