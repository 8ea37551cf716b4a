//! A query's bases as the prover reads them: points in memory, or their encodings in a mapped
//! parameter file ([`crate::groth16::MappedParameters`]), decoded where they are used.
//!
//! A mapped query is never decoded whole, and its encodings are never read through the mapping:
//! they are read from the file (`pread`, [`MappedFile::read_at`]), from the page cache when the
//! file is there, mapping no page into this process (nothing to fault in or to give back, and a
//! file cut short under the mapping is a read error, not a `SIGBUS`):
//! - On the GPU path the query goes to the scheduler whole. A device's piece uploads the
//!   encodings as they are, as many bytes as the points, read straight into the staging memory,
//!   and the device decodes them (`gpu/cl/decode.cl`, with blst's checks): the host does about
//!   the work of copying points in memory. A CPU chunk decodes its own range
//!   ([`Bases::points`]).
//! - On the CPU path ([`Bases::for_each_window`]) the prover walks the query in windows of
//!   [`window_terms`] points (an eighth of the query, 48 to 384 MiB), decoding the next window on
//!   another thread while the current one's multiexp runs. A proof's resident memory for a mapped
//!   query is then about two decoded windows, whatever the file's size.

use crate::curve::CurveAffine;
use crate::multicore;
use bellpepper_core::SynthesisError;
use group::UncompressedEncoding;
use rayon::prelude::*;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Fewest bytes of a decoded window (2^19 points in G1, 2^18 in G2): each window is a multiexp
/// of its own, with its own bucket reductions and a narrower bucket window, so smaller ones cost
/// the CPU more (about 1% a G1 query at 2^19 points against one multiexp over 2^20 on two
/// cores, by the model in `multiexp::window_bits`).
const MIN_WINDOW_BYTES: usize = 48 << 20;
/// Most bytes of a decoded window (2^22 points in G1, 2^21 in G2).
const MAX_WINDOW_BYTES: usize = 384 << 20;
/// A query is cut into about this many windows, within the two bounds above
/// (`PREEMPTIBLE_GROTH16_MAPPED_WINDOWS` replaces it).
const WINDOWS_PER_QUERY: usize = 8;

/// Points of each decoded window of a mapped query of `len` points of `size` bytes each (in
/// memory: blstrs's affine points are as large as their uncompressed encodings), cut into about
/// `windows` windows.
pub(crate) fn window_terms(len: usize, size: usize, windows: usize) -> usize {
    // Rounded up in points, not in bytes, so that `windows` windows cover the query (a byte
    // count rounded down to whole points leaves a last window of a point or two: a device
    // call of its own).
    let (fewest, most) = (
        MIN_WINDOW_BYTES / size.max(1),
        MAX_WINDOW_BYTES / size.max(1),
    );
    len.div_ceil(windows.max(1))
        .clamp(fewest.max(1), most.max(1))
}

/// A parameter file mapped read-only into memory.
///
/// The file must not change while it is mapped. Its points are read with
/// [`MappedFile::read_at`], never through the mapping, so a file truncated meanwhile gives read
/// errors, not the `SIGBUS` a read of a lost page through the mapping would raise (the mapping
/// stays for the address that names a query, [`Bases::address`], and off Unix for the reads); a
/// file rewritten in place gives other points, which decoding rejects when they are not valid
/// encodings and which otherwise make proofs that do not verify. Replace a parameter file by
/// writing a new one and renaming it over the old: a mapping keeps the file it was made from.
pub(crate) struct MappedFile {
    map: memmap2::Mmap,
    /// The same file, for reads that do not go through the mapping ([`MappedFile::read_at`]).
    file: File,
}

impl MappedFile {
    /// Maps `file`, which the caller has checked to hold `len` bytes (the length its header
    /// implies): a mapping longer than the file would raise `SIGBUS` when read past its end.
    pub(crate) fn map(file: &File, len: u64) -> io::Result<MappedFile> {
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
        let options = {
            let mut o = memmap2::MmapOptions::new();
            o.len(len);
            o
        };
        // SAFETY: the mapping is read-only and no longer than the file, whose length the caller
        // checked just before. On Unix its bytes are never read through it (`read_at` uses
        // `pread`, so a file cut shorter is a read error); elsewhere they are read as plain
        // bytes and decoded with every check a reader of untrusted bytes needs, so bytes that
        // change under the mapping give errors or wrong points, and a file truncated under it
        // can fault the process there.
        #[allow(unsafe_code)]
        let map = unsafe { options.map(file)? };
        Ok(MappedFile {
            map,
            file: file.try_clone()?,
        })
    }

    /// Fills `out` with the file's bytes from `offset` on, read (`pread`) rather than through
    /// the mapping: they come from the page cache without mapping pages into this process, so
    /// there is no page fault a page and nothing to give back afterwards (the device's uploads
    /// read so, straight into the staging memory: faster than copying through the mapping with
    /// its pages released, docs/BENCHMARKS.md). A file cut shorter under the mapping is an error
    /// here. Every read of the points goes through this.
    pub(crate) fn read_at(&self, offset: usize, out: &mut [u8]) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(out, offset as u64)
        }
        #[cfg(not(unix))]
        {
            let _ = &self.file;
            let bytes = self.map.get(offset..offset + out.len()).ok_or_else(|| {
                io::Error::new(io::ErrorKind::UnexpectedEof, "read past the mapping")
            })?;
            out.copy_from_slice(bytes);
            Ok(())
        }
    }

    /// The mapped bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("len", &self.map.len())
            .finish()
    }
}

/// A query's bases as a [`crate::groth16::ParameterSource`] lends them to the prover: a slice of
/// points in memory (`From<&[G]>`), or a section of a mapped parameter file decoded on demand.
/// Only its length is read before the multiexp.
#[derive(Debug)]
pub struct Bases<'a, G> {
    repr: Repr<'a, G>,
}

#[derive(Debug)]
enum Repr<'a, G> {
    Decoded(&'a [G]),
    Encoded(Encoded<'a>),
}

/// Points in a mapped file: `len` uncompressed encodings from byte `start` on, the first of
/// them point `first` of its section (for errors).
#[derive(Debug, Clone, Copy)]
struct Encoded<'a> {
    file: &'a MappedFile,
    start: usize,
    len: usize,
    first: usize,
    section: &'static str,
}

impl<G> Clone for Bases<'_, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G> Copy for Bases<'_, G> {}

impl<G> Clone for Repr<'_, G> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<G> Copy for Repr<'_, G> {}

impl<'a, G> From<&'a [G]> for Bases<'a, G> {
    fn from(points: &'a [G]) -> Self {
        Bases {
            repr: Repr::Decoded(points),
        }
    }
}

impl<'a, G> From<&'a Vec<G>> for Bases<'a, G> {
    fn from(points: &'a Vec<G>) -> Self {
        Bases::from(points.as_slice())
    }
}

impl<'a, G> Bases<'a, G> {
    /// Number of points.
    pub fn len(&self) -> usize {
        match self.repr {
            Repr::Decoded(points) => points.len(),
            Repr::Encoded(e) => e.len,
        }
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The points in memory, or `None` for a mapped section.
    pub fn as_slice(&self) -> Option<&'a [G]> {
        match self.repr {
            Repr::Decoded(points) => Some(points),
            Repr::Encoded(_) => None,
        }
    }

    /// Where point 0 of these lies: its address in memory, or its encoding's in the mapping. With
    /// the length, what tells a query from another while its parameters are borrowed (bases a
    /// device keeps between the proofs of a batch).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn address(&self) -> usize {
        match self.repr {
            Repr::Decoded(points) => points.as_ptr() as usize,
            Repr::Encoded(e) => e.file.bytes().as_ptr() as usize + e.start,
        }
    }
}

impl<'a, G: CurveAffine + UncompressedEncoding> Bases<'a, G> {
    /// The `len` points encoded in `file` from byte `start` on (section `section`, for errors);
    /// the caller has checked that they lie inside the file.
    pub(crate) fn mapped(
        file: &'a MappedFile,
        start: usize,
        len: usize,
        section: &'static str,
    ) -> Self {
        debug_assert!(start + len * encoded_size::<G>() <= file.bytes().len());
        Bases {
            repr: Repr::Encoded(Encoded {
                file,
                start,
                len,
                first: 0,
                section,
            }),
        }
    }

    /// The points of `range`, in memory or mapped as these are. Panics if `range` is not inside
    /// `0..self.len()`, as slicing does.
    pub fn range(&self, range: Range<usize>) -> Self {
        debug_assert!(range.start <= range.end && range.end <= self.len());
        let repr = match self.repr {
            Repr::Decoded(points) => Repr::Decoded(&points[range]),
            Repr::Encoded(e) => Repr::Encoded(Encoded {
                start: e.start + range.start * encoded_size::<G>(),
                len: range.len(),
                first: e.first + range.start,
                ..e
            }),
        };
        Bases { repr }
    }

    /// The points, decoded if mapped (on the pool of the calling thread, if it is one of the
    /// crate's: [`multicore::install`]); or what is wrong with the first that is not a point on
    /// the curve or could not be read ([`invalid_bases`] makes it an error).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn points(&self) -> Result<std::borrow::Cow<'a, [G]>, String> {
        match self.repr {
            Repr::Decoded(points) => Ok(std::borrow::Cow::Borrowed(points)),
            Repr::Encoded(e) => e
                .decode::<G>(0..e.len, Vec::new())
                .map(std::borrow::Cow::Owned),
        }
    }

    /// Reads the encodings of `points` (a range of these, inside `0..self.len()`) into `out`,
    /// `points.len()` times the encoding's size, from the file rather than through the mapping
    /// ([`MappedFile::read_at`]); the error names the section. Points in memory have no
    /// encodings to read: an error.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn read_encodings(&self, points: Range<usize>, out: &mut [u8]) -> io::Result<()> {
        let Repr::Encoded(e) = self.repr else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "points in memory have no encodings",
            ));
        };
        let size = encoded_size::<G>();
        e.file
            .read_at(e.start + points.start * size, out)
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!(
                        "{}[{}..{}] could not be read from the mapped parameter file: {error}",
                        e.section,
                        e.first + points.start,
                        e.first + points.end
                    ),
                )
            })
    }

    /// What is wrong with point `index` of these, whose encoding is not a point on the curve
    /// (found where it was decoded: on a device, or here).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn invalid_point_message(&self, index: usize) -> String {
        match self.repr {
            Repr::Decoded(_) => invalid_point_message("a query", index),
            Repr::Encoded(e) => invalid_point_message(e.section, e.first + index),
        }
    }

    /// Calls `each(points, range)` on consecutive ranges that cover `0..self.len()` and their
    /// points, in order, and stops at its first error. Points in memory come as one slice; a
    /// mapped section comes in decoded windows, the next one decoded on another thread while
    /// `each` runs.
    pub(crate) fn for_each_window(
        &self,
        each: impl FnMut(&[G], Range<usize>) -> Result<(), SynthesisError>,
    ) -> Result<(), SynthesisError> {
        let windows = crate::config::Config::from_env()
            .mapped_windows
            .unwrap_or(WINDOWS_PER_QUERY);
        self.for_each_window_of(window_terms(self.len(), encoded_size::<G>(), windows), each)
    }

    /// [`Bases::for_each_window`] with windows of `step` points.
    fn for_each_window_of(
        &self,
        step: usize,
        mut each: impl FnMut(&[G], Range<usize>) -> Result<(), SynthesisError>,
    ) -> Result<(), SynthesisError> {
        let encoded = match self.repr {
            Repr::Decoded(points) => return each(points, 0..points.len()),
            Repr::Encoded(e) => e,
        };
        let windows: Vec<Range<usize>> = (0..encoded.len)
            .step_by(step.max(1))
            .map(|s| s..(s + step).min(encoded.len))
            .collect();
        let Some(first) = windows.first() else {
            return Ok(());
        };
        let started = Instant::now();
        let mut current = encoded
            .decode::<G>(first.clone(), Vec::new())
            .map_err(invalid_bases)?;
        // The window before last's vector, decoded into again: its pages are already this
        // process's, so a window costs no page faults beside the file's own.
        let mut spare = Vec::new();
        let first_decode = started.elapsed();
        // Where a mapped query's time goes: `each` (the multiexps), and the wait for a decode
        // that had not finished when `each` returned.
        let (mut in_each, mut waited) = (Duration::ZERO, Duration::ZERO);
        let result = std::thread::scope(|scope| {
            for (i, range) in windows.iter().enumerate() {
                let next = windows.get(i + 1).cloned();
                let into = std::mem::take(&mut spare);
                let ahead = next.clone().map(|r| {
                    std::thread::Builder::new()
                        .name("groth16-decode".into())
                        .spawn_scoped(scope, move || encoded.decode::<G>(r, into))
                });
                let t = Instant::now();
                let result = each(&current, range.clone());
                in_each += t.elapsed();
                let t = Instant::now();
                let decoded = match (ahead, next) {
                    (Some(Ok(thread)), _) => Some(
                        thread
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                    ),
                    // No thread to be had: the next window is decoded here.
                    (Some(Err(_)), Some(r)) => Some(encoded.decode::<G>(r, Vec::new())),
                    _ => None,
                };
                waited += t.elapsed();
                result?;
                match decoded {
                    Some(points) => {
                        spare = std::mem::replace(&mut current, points.map_err(invalid_bases)?)
                    }
                    None => break,
                }
            }
            Ok(())
        });
        log::debug!(
            "mapped {}: {} points in {} windows, {:.2?}: first decode {first_decode:.2?}, \
             multiexps {in_each:.2?}, waited for decodes {waited:.2?}",
            encoded.section,
            encoded.len,
            windows.len(),
            started.elapsed()
        );
        result
    }
}

/// Bytes of one uncompressed encoding of a `G`.
pub(crate) fn encoded_size<G: UncompressedEncoding>() -> usize {
    G::Uncompressed::default().as_ref().len()
}

/// Encodings each decoding thread reads from the file at once (`pread` into a buffer of its own):
/// 384 KiB of G1, 768 KiB of G2.
const READ_POINTS: usize = 1 << 12;

/// A decoding thread's last read: `READ_POINTS` encodings from point `first` on (`usize::MAX`:
/// none yet), or the error that read gave.
struct ReadBlock {
    first: usize,
    bytes: Vec<u8>,
    error: Option<io::Error>,
}

impl Encoded<'_> {
    /// The points of `range`, decoded in parallel on the crate's pool into `into` (emptied
    /// first; its capacity is kept) (each encoding must be a point on the curve: blst's check;
    /// the subgroup is checked when the file is opened with `checked`). The encodings are read
    /// from the file ([`MappedFile::read_at`]), not through the mapping: a file cut short under
    /// the mapping is an error naming the points that could not be read, never a `SIGBUS`, and
    /// no page is mapped into the process, so none is left resident.
    fn decode<G: CurveAffine + UncompressedEncoding>(
        &self,
        range: Range<usize>,
        into: Vec<G>,
    ) -> Result<Vec<G>, String> {
        let size = encoded_size::<G>();
        // Written in place by all cores (an indexed extend: each thread faults in and fills its
        // own part of the vector); the first bad point is remembered and the window rejected.
        // Collecting into a `Result` instead gathers per-thread pieces and copies them into
        // one vector on one thread, which left a 16-core host decoding at the speed of two.
        // Each thread reads the blocks of `READ_POINTS` encodings its indices fall in (rayon
        // hands a thread runs of at least a block), keeping the last in a buffer of its own.
        let first_bad = AtomicUsize::new(usize::MAX);
        let unread = AtomicUsize::new(usize::MAX);
        let read_error: std::sync::Mutex<Option<io::Error>> = std::sync::Mutex::new(None);
        let mut decoded = into;
        decoded.clear();
        decoded.reserve(range.len());
        multicore::install(|| {
            decoded.par_extend(
                range
                    .clone()
                    .into_par_iter()
                    .with_min_len(READ_POINTS)
                    .map_init(
                        || ReadBlock {
                            first: usize::MAX,
                            bytes: Vec::new(),
                            error: None,
                        },
                        |block, index| {
                            let first = index - index % READ_POINTS;
                            if block.first != first {
                                let end = (first + READ_POINTS).min(self.len);
                                block.first = first;
                                block.bytes.resize((end - first) * size, 0);
                                block.error = self
                                    .file
                                    .read_at(self.start + first * size, &mut block.bytes)
                                    .err();
                            }
                            if let Some(e) = block.error.take() {
                                if unread.fetch_min(index, Ordering::Relaxed) > index {
                                    *read_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                                }
                            }
                            if unread.load(Ordering::Relaxed) <= index {
                                return G::identity();
                            }
                            let at = (index - first) * size;
                            let mut repr = G::Uncompressed::default();
                            repr.as_mut().copy_from_slice(&block.bytes[at..at + size]);
                            Option::from(G::from_uncompressed_unchecked(&repr)).unwrap_or_else(
                                || {
                                    first_bad.fetch_min(index, Ordering::Relaxed);
                                    G::identity()
                                },
                            )
                        },
                    ),
            )
        });
        if let Some(e) = read_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            let from = unread.into_inner();
            return Err(format!(
                "{}[{}..{}] could not be read from the mapped parameter file: {e}",
                self.section,
                self.first + from,
                self.first + range.end
            ));
        }
        match first_bad.into_inner() {
            usize::MAX => Ok(decoded),
            index => Err(invalid_point_message(self.section, self.first + index)),
        }
    }
}

/// What is wrong with point `index` of `section`, whose encoding in the mapped file is not a
/// point on the curve.
fn invalid_point_message(section: &str, index: usize) -> String {
    format!(
        "{section}[{index}] in the mapped parameter file is not a point on the curve: the file \
         is corrupt or changed after it was opened"
    )
}

/// The error of a multiexp over bases that are not all points on the curve (`message`:
/// [`Bases::invalid_point_message`]).
pub(crate) fn invalid_bases(message: String) -> SynthesisError {
    SynthesisError::IoError(io::Error::new(io::ErrorKind::InvalidData, message))
}

#[cfg(test)]
mod tests {
    use super::{window_terms, Bases, MappedFile, MAX_WINDOW_BYTES, MIN_WINDOW_BYTES};
    use crate::multiexp::{multiexp, ScalarRepr};
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
    use ff::Field;
    use group::{Curve, Group, UncompressedEncoding};
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;
    use std::io::Write;

    #[test]
    fn windows_are_an_eighth_of_a_query_within_bounds() {
        let (g1, g2) = (96, 192);
        assert_eq!(window_terms(1, g1, 8), 1 << 19);
        assert_eq!(window_terms(1 << 20, g1, 8), 1 << 19);
        assert_eq!(window_terms(1 << 20, g2, 8), 1 << 18);
        assert_eq!(window_terms(1 << 24, g1, 8), 1 << 21);
        assert_eq!(window_terms(1 << 24, g2, 8), 1 << 21);
        assert_eq!(window_terms(1 << 27, g1, 8), 1 << 22);
        assert_eq!(window_terms(1 << 27, g2, 8), 1 << 21);
        assert_eq!(window_terms(1 << 20, g1, 8) * g1, MIN_WINDOW_BYTES);
        assert_eq!(window_terms(1 << 30, g2, 8) * g2, MAX_WINDOW_BYTES);
        // Fewer windows are larger, within the same bounds; the windows cover the query.
        assert_eq!(
            ((1usize << 23) - 1).div_ceil(window_terms((1 << 23) - 1, g1, 8)),
            8
        );
        assert_eq!(window_terms(1 << 22, g1, 2), 1 << 21);
        assert_eq!(window_terms(1 << 23, g1, 2), 1 << 22);
        assert_eq!(window_terms(1 << 20, g1, 1), 1 << 20);
    }

    /// A file of `prefix` bytes, then `points` encoded, mapped; removed when mapped.
    fn mapped<G: UncompressedEncoding>(name: &str, prefix: usize, points: &[G]) -> MappedFile {
        let path = std::env::temp_dir().join(format!("bases-{name}-{}", std::process::id()));
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![7u8; prefix]).unwrap();
        for p in points {
            file.write_all(p.to_uncompressed().as_ref()).unwrap();
        }
        drop(file);
        let file = std::fs::File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        let map = MappedFile::map(&file, len).unwrap();
        std::fs::remove_file(&path).unwrap();
        map
    }

    fn random<G: Group>(n: usize, seed: u64) -> (Vec<G>, Vec<ScalarRepr>) {
        let rng = &mut ChaCha20Rng::seed_from_u64(seed);
        let points = (0..n).map(|_| G::random(&mut *rng)).collect();
        let scalars = (0..n)
            .map(|_| ScalarRepr::from(&Scalar::random(&mut *rng)))
            .collect();
        (points, scalars)
    }

    #[test]
    fn mapped_windows_cover_the_points_in_order_and_sum_to_the_multiexp() {
        let (points, scalars) = random::<G1Projective>(50, 1);
        let points: Vec<G1Affine> = points.iter().map(|p| p.to_affine()).collect();
        let file = mapped("g1", 13, &points);
        let bases = Bases::<G1Affine>::mapped(&file, 13, points.len(), "h");
        assert_eq!(bases.len(), 50);
        assert!(bases.as_slice().is_none());
        let whole = multiexp(&points, &scalars).unwrap();
        for step in [1, 7, 49, 50, 64] {
            let (mut seen, mut sum) = (Vec::new(), G1Projective::identity());
            bases
                .for_each_window_of(step, |window, range| {
                    assert!(window.len() <= step);
                    assert_eq!(window.len(), range.len());
                    seen.extend_from_slice(window);
                    sum += multiexp(window, &scalars[range]).unwrap();
                    Ok(())
                })
                .unwrap();
            assert_eq!(seen, points, "windows of {step}");
            assert_eq!(sum, whole, "windows of {step}");
        }
    }

    #[test]
    fn a_range_of_a_mapped_section_is_its_points_encodings_and_errors() {
        let (points, _) = random::<G1Projective>(20, 4);
        let mut points: Vec<G1Affine> = points.iter().map(|p| p.to_affine()).collect();
        points[3] = G1Affine::from(G1Projective::identity());
        let file = mapped("range", 5, &points);
        let bases = Bases::<G1Affine>::mapped(&file, 5, 20, "a");
        let part = bases.range(6..15);
        assert_eq!(part.len(), 9);
        assert_eq!(&*part.points().unwrap(), &points[6..15]);
        let bytes: Vec<u8> = points[6..15]
            .iter()
            .flat_map(|p| p.to_uncompressed().as_ref().to_vec())
            .collect();
        let mut read = vec![0u8; bytes.len()];
        part.read_encodings(0..9, &mut read).unwrap();
        assert_eq!(read, bytes);
        // Errors name the point by its index in the section, not in the range.
        assert!(part.invalid_point_message(2).starts_with("a[8] "));
        assert!(part
            .range(1..3)
            .invalid_point_message(1)
            .starts_with("a[8] "));
        assert_eq!(&*bases.range(0..5).points().unwrap(), &points[..5]);
        // Points in memory: the same slice, no encodings.
        let in_memory = Bases::from(&points).range(6..15);
        assert_eq!(in_memory.as_slice().unwrap(), &points[6..15]);
        assert!(in_memory.read_encodings(0..1, &mut [0u8; 96]).is_err());
        assert_eq!(&*in_memory.points().unwrap(), &points[6..15]);
    }

    #[test]
    fn mapped_g2_points_decode_too() {
        let (points, _) = random::<G2Projective>(9, 2);
        let points: Vec<G2Affine> = points.iter().map(|p| p.to_affine()).collect();
        let file = mapped("g2", 0, &points);
        let mut seen = Vec::new();
        Bases::<G2Affine>::mapped(&file, 0, 9, "b_g2")
            .for_each_window_of(4, |window, _| {
                seen.extend_from_slice(window);
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, points);
    }

    #[test]
    fn a_point_off_the_curve_is_an_error_naming_it() {
        let (points, _) = random::<G1Projective>(10, 3);
        let points: Vec<G1Affine> = points.iter().map(|p| p.to_affine()).collect();
        let path = std::env::temp_dir().join(format!("bases-bad-{}", std::process::id()));
        let mut bytes: Vec<u8> = points
            .iter()
            .flat_map(|p| p.to_uncompressed().as_ref().to_vec())
            .collect();
        bytes[6 * 96 + 60] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let map = MappedFile::map(&file, bytes.len() as u64).unwrap();
        std::fs::remove_file(&path).unwrap();
        let mut windows = 0;
        let result = Bases::<G1Affine>::mapped(&map, 0, 10, "l").for_each_window_of(4, |_, _| {
            windows += 1;
            Ok(())
        });
        let message = result.unwrap_err().to_string();
        assert!(message.contains("l[6]"), "{message}");
        // The window holding the bad point is never handed out.
        assert_eq!(windows, 1);
    }
}
