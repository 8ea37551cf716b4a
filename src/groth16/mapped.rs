//! Parameters proved from a mapped file ([`MappedParameters`]): how a service proves with
//! parameter files of tens of gigabytes without reading them into memory.
//!
//! Opening reads the verifying key and the five queries' lengths (the file's length is checked
//! against them before anything is mapped, so a truncated file is an error, never a `SIGBUS`),
//! then maps the file. The prover decodes each query a part at a time where the part is used
//! ([`Bases`]): a device decodes the encodings it uploads, a CPU chunk its own range, the CPU
//! backend a window at a time, each refusing a point off the curve; with `checked`, every point
//! is also checked in full (in the subgroup too) once, at open, as [`Parameters::read`] checks it.

use super::params::{
    check_shape, decode_block, io_error, Identity, ParameterSource, ReadError, VerifyingKey,
    READ_BLOCK,
};
use crate::bases::{encoded_size, Bases, MappedFile};
use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Proving parameters in a mapped file, in the format of [`Parameters::write`]: the verifying
/// key in memory, the queries decoded while proving, a part at a time (on the GPU path by the
/// device), so that a proof holds a small part of them decoded (`docs/BENCHMARKS.md`, "Memory:
/// mapped parameters").
///
/// The file must not change while it is mapped: truncating it makes the proofs that read the
/// lost part fail with an error naming the points that could not be read (the points are read
/// from the file with `pread`, not through the mapping, so there is no `SIGBUS`; on systems other
/// than Unix they are read through the mapping, where a cut file can fault the process), and
/// rewriting it in place gives other points (decoding rejects those off the curve; others make
/// proofs that the prover's check refuses).
/// Replace a file by renaming a new one over it; an open `MappedParameters` keeps reading the
/// old one.
///
/// [`Parameters::write`]: super::Parameters::write
#[derive(Debug)]
pub struct MappedParameters {
    path: PathBuf,
    file: MappedFile,
    vk: VerifyingKey,
    h: Section,
    l: Section,
    a: Section,
    b_g1: Section,
    b_g2: Section,
    checked: bool,
}

/// Where a query's points lie in the file.
#[derive(Debug, Clone, Copy)]
struct Section {
    /// Byte offset of the first point.
    start: usize,
    /// Number of points.
    len: usize,
}

impl MappedParameters {
    /// Opens and maps the parameter file at `path`. With `checked`, every point is tested for
    /// being on the curve, in the prime-order subgroup and in its canonical encoding, and query
    /// points at infinity are rejected, as [`Parameters::read`] does (as slow as reading the
    /// file, once); without, only the verifying key is checked now, and each query point is
    /// checked to be on the curve when a proof decodes it.
    ///
    /// A file shorter than its lengths say fails with [`ReadError::Truncated`]; lengths that do
    /// not fit together with [`ReadError::Malformed`]. Bytes after the `B` query are ignored.
    ///
    /// [`Parameters::read`]: super::Parameters::read
    pub fn open(path: impl AsRef<Path>, checked: bool) -> Result<Self, ReadError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(io_error("the parameter file"))?;
        let file_len = file
            .metadata()
            .map_err(io_error("the parameter file"))?
            .len();
        let mut reader = BufReader::new(&file);
        let vk = VerifyingKey::read_with(&mut reader, checked)?;
        let mut layout = Layout {
            reader,
            offset: vk_bytes(&vk),
            file_len,
        };
        let h = layout.section::<G1Affine>("h")?;
        let l = layout.section::<G1Affine>("l")?;
        let a = layout.section::<G1Affine>("a")?;
        let b_g1 = layout.section::<G1Affine>("b_g1")?;
        let b_g2 = layout.section::<G2Affine>("b_g2")?;
        check_shape(h.len, b_g1.len, b_g2.len)?;
        let mapped = MappedFile::map(&file, layout.offset)
            .map_err(io_error("the parameter file (mapping it)"))?;
        let params = MappedParameters {
            path,
            file: mapped,
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
            checked,
        };
        if checked {
            params.check_points()?;
        }
        log::debug!(
            "mapped parameters: {} ({} bytes of queries, checked: {checked})",
            params.path.display(),
            layout.offset
        );
        Ok(params)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether every point was checked at open.
    pub fn checked(&self) -> bool {
        self.checked
    }

    /// Checks every query point as [`super::Parameters::read`] with `checked` does, a block at a
    /// time, read from the file (not through the mapping: a file cut short meanwhile is an
    /// error, and no page stays resident).
    fn check_points(&self) -> Result<(), ReadError> {
        self.check_section::<G1Affine>(self.h, "h")?;
        self.check_section::<G1Affine>(self.l, "l")?;
        self.check_section::<G1Affine>(self.a, "a")?;
        self.check_section::<G1Affine>(self.b_g1, "b_g1")?;
        self.check_section::<G2Affine>(self.b_g2, "b_g2")
    }

    fn check_section<G>(&self, section: Section, name: &'static str) -> Result<(), ReadError>
    where
        G: UncompressedEncoding + PrimeCurveAffine,
    {
        let size = encoded_size::<G>();
        let mut bytes = Vec::new();
        for first in (0..section.len).step_by(READ_BLOCK) {
            let count = READ_BLOCK.min(section.len - first);
            bytes.resize(count * size, 0);
            self.file
                .read_at(section.start + first * size, &mut bytes)
                .map_err(io_error(name))?;
            decode_block::<G>(&bytes, name, first, true, Identity::Rejected)?;
        }
        Ok(())
    }
}

/// Bytes of a verifying key in the file: six points, then `len(ic)` and `ic`.
fn vk_bytes(vk: &VerifyingKey) -> u64 {
    let (g1, g2) = (
        encoded_size::<G1Affine>() as u64,
        encoded_size::<G2Affine>() as u64,
    );
    3 * g1 + 3 * g2 + 4 + g1 * vk.ic.len() as u64
}

/// The file's sections as its lengths lay them out, read one length at a time.
struct Layout<'f> {
    reader: BufReader<&'f File>,
    /// Where the next section's length is.
    offset: u64,
    file_len: u64,
}

impl Layout<'_> {
    /// The section whose length is at the current offset; the offset moves past its points.
    fn section<G: UncompressedEncoding>(
        &mut self,
        name: &'static str,
    ) -> Result<Section, ReadError> {
        let mut len = [0u8; 4];
        self.reader
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| self.reader.read_exact(&mut len))
            .map_err(io_error(name))?;
        let len = u32::from_be_bytes(len) as u64;
        let start = self.offset + 4;
        let end = start + len * encoded_size::<G>() as u64;
        if end > self.file_len {
            return Err(ReadError::Truncated { section: name });
        }
        self.offset = end;
        let to_usize = |v: u64| {
            usize::try_from(v)
                .map_err(|_| ReadError::Malformed(format!("{name} does not fit in memory")))
        };
        Ok(Section {
            start: to_usize(start)?,
            len: to_usize(len)?,
        })
    }
}

impl ParameterSource for MappedParameters {
    fn vk(&self) -> &VerifyingKey {
        &self.vk
    }
    fn h(&self) -> Bases<'_, G1Affine> {
        Bases::mapped(&self.file, self.h.start, self.h.len, "h")
    }
    fn l(&self) -> Bases<'_, G1Affine> {
        Bases::mapped(&self.file, self.l.start, self.l.len, "l")
    }
    fn a(&self) -> Bases<'_, G1Affine> {
        Bases::mapped(&self.file, self.a.start, self.a.len, "a")
    }
    fn b_g1(&self) -> Bases<'_, G1Affine> {
        Bases::mapped(&self.file, self.b_g1.start, self.b_g1.len, "b_g1")
    }
    fn b_g2(&self) -> Bases<'_, G2Affine> {
        Bases::mapped(&self.file, self.b_g2.start, self.b_g2.len, "b_g2")
    }
}
