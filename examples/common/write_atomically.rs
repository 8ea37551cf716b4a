//! Writing a file so that a reader (another run of an example, which reads its parameter cache
//! without the slow checks) finds the old file or the whole new one, never a part of one.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `path` with `fill`: into a temporary file beside it (named by the process and a
/// counter, so that no two writers share one), flushed, synced and then renamed into place. On
/// an error the temporary file is removed and the error returned; `path` is left as it was.
pub fn write_atomically(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temporary_name(path)?;
    // `create_new`: never a file someone else made, nor one of ours still being written.
    let file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
    let written = write_and_sync(file, fill).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        // Best effort: the error that matters is the one returned.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn write_and_sync(
    file: File,
    fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let mut writer = BufWriter::new(file);
    fill(&mut writer)?;
    // Flushed here, where its error is seen: dropping the writer would flush and ignore it.
    writer.flush()?;
    let file = writer
        .into_inner()
        .map_err(io::IntoInnerError::into_error)?;
    file.sync_all()
}

/// `.NAME.PID-N.partial` beside `path`.
fn temporary_name(path: &Path) -> io::Result<PathBuf> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let n = WRITES.fetch_add(1, Ordering::Relaxed);
    Ok(path.with_file_name(format!(
        ".{}.{}-{n}.partial",
        name.to_string_lossy(),
        std::process::id()
    )))
}
