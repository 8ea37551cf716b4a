//! Parameters and verifying keys, and their byte format.
//!
//! The format is bellman's, which bellperson keeps, so files move between the crates in both
//! directions. All integers are big-endian `u32`; points are uncompressed (96 bytes in G1, 192 in
//! G2):
//!
//! ```text
//! VerifyingKey: alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2 | len(ic) ic...
//! Parameters:   VerifyingKey | len(h) h... | len(l) l... | len(a) a... | len(b_g1) b_g1... |
//!               len(b_g2) b_g2...
//! ```
//!
//! Reading never trusts a length field: points are read in blocks of at most [`READ_BLOCK`] into
//! buffers that grow with the bytes actually present, so a hostile length claiming billions of
//! points fails at the end of the input instead of allocating for it. Blocks are decoded (and,
//! when `checked`, tested for being on the curve and in the prime-order subgroup) in parallel.
//!
//! Reading is canonical: a point is accepted only in the encoding [`Parameters::write`] gives it,
//! so whenever a read succeeds, writing the value back gives exactly the bytes read, and a file
//! or key named by its hash has one byte string. blst alone also takes, in an uncompressed slot,
//! a compressed encoding (its flag set) followed by any 48 (G1) or 96 (G2) bytes.

use super::shape::CircuitShape;
use crate::bases::Bases;
use crate::multicore;
use bellpepper_core::SynthesisError;
use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::UncompressedEncoding;
use rayon::prelude::*;
use std::io::{self, Read, Write};

/// Points decoded per parallel block (1.5 MiB of G1 points).
pub const READ_BLOCK: usize = 1 << 14;

/// Why a parameter file, verifying key or proof could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The input ended inside `section`.
    #[error("truncated input: it ends inside {section}")]
    Truncated {
        /// The part of the format being read.
        section: &'static str,
    },
    /// The reader failed for another reason than its end.
    #[error("I/O error while reading {section}: {source}")]
    Io {
        /// The part of the format being read.
        section: &'static str,
        /// The reader's error.
        #[source]
        source: io::Error,
    },
    /// A point's bytes are not a valid encoding, or (when checked) the point is off the curve or
    /// outside the prime-order subgroup.
    #[error("{section}[{index}] is not a valid point (bad encoding, off the curve, or outside the prime-order subgroup)")]
    InvalidPoint {
        /// The part of the format being read.
        section: &'static str,
        /// Index of the point within its section.
        index: usize,
    },
    /// A point decodes, but its bytes are not the one encoding that writing it gives (for instance
    /// a compressed encoding with other bytes after it in an uncompressed slot). Accepting it would
    /// give one value several byte strings, so a file or key could not be named by its hash.
    #[error("{section}[{index}] is not the canonical encoding of its point")]
    NonCanonicalPoint {
        /// The part of the format being read.
        section: &'static str,
        /// Index of the point within its section.
        index: usize,
    },
    /// A point that must not be the identity is.
    #[error("{section}[{index}] is the point at infinity")]
    PointAtInfinity {
        /// The part of the format being read.
        section: &'static str,
        /// Index of the point within its section.
        index: usize,
    },
    /// The sections do not fit together.
    #[error("malformed input: {0}")]
    Malformed(String),
}

impl From<ReadError> for io::Error {
    fn from(e: ReadError) -> io::Error {
        match e {
            ReadError::Truncated { .. } => io::Error::new(io::ErrorKind::UnexpectedEof, e),
            ReadError::Io { source, .. } => source,
            other => io::Error::new(io::ErrorKind::InvalidData, other),
        }
    }
}

impl From<ReadError> for SynthesisError {
    fn from(e: ReadError) -> SynthesisError {
        SynthesisError::IoError(e.into())
    }
}

pub(crate) fn io_error(section: &'static str) -> impl Fn(io::Error) -> ReadError {
    move |source| {
        if source.kind() == io::ErrorKind::UnexpectedEof {
            ReadError::Truncated { section }
        } else {
            ReadError::Io { section, source }
        }
    }
}

/// Whether a section may hold the point at infinity.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Identity {
    Allowed,
    Rejected,
}

/// Where a point sits, for errors.
#[derive(Clone, Copy)]
struct At {
    section: &'static str,
    index: usize,
}

/// Decodes the point whose uncompressed encoding is `bytes`, accepting only its canonical
/// encoding: the re-encoding is compared with the input (cheap for uncompressed points, no square
/// root; see [`ReadError::NonCanonicalPoint`]).
fn decode<G>(bytes: &[u8], at: At, checked: bool, identity: Identity) -> Result<G, ReadError>
where
    G: UncompressedEncoding + PrimeCurveAffine,
{
    let At { section, index } = at;
    let mut repr = G::Uncompressed::default();
    repr.as_mut().copy_from_slice(bytes);
    let decoded = if checked {
        G::from_uncompressed(&repr)
    } else {
        G::from_uncompressed_unchecked(&repr)
    };
    let p: G = Option::from(decoded).ok_or(ReadError::InvalidPoint { section, index })?;
    if p.to_uncompressed().as_ref() != bytes {
        return Err(ReadError::NonCanonicalPoint { section, index });
    }
    if identity == Identity::Rejected && bool::from(p.is_identity()) {
        return Err(ReadError::PointAtInfinity { section, index });
    }
    Ok(p)
}

fn read_point<G, R>(
    reader: &mut R,
    section: &'static str,
    checked: bool,
    identity: Identity,
) -> Result<G, ReadError>
where
    G: UncompressedEncoding + PrimeCurveAffine,
    R: Read,
{
    let mut repr = G::Uncompressed::default();
    reader
        .read_exact(repr.as_mut())
        .map_err(io_error(section))?;
    decode(repr.as_ref(), At { section, index: 0 }, checked, identity)
}

/// Reads `len(u32) points...`, a block at a time.
fn read_points<G, R>(
    reader: &mut R,
    section: &'static str,
    checked: bool,
    identity: Identity,
) -> Result<Vec<G>, ReadError>
where
    G: UncompressedEncoding + PrimeCurveAffine,
    R: Read,
{
    let mut len = [0u8; 4];
    reader.read_exact(&mut len).map_err(io_error(section))?;
    let len = u32::from_be_bytes(len) as usize;
    let size = G::Uncompressed::default().as_ref().len();
    let mut points = Vec::new();
    let mut bytes = Vec::new();
    while points.len() < len {
        let first = points.len();
        let want = (len - first).min(READ_BLOCK) * size;
        // `take` + `read_to_end` grows the buffer with the bytes that arrive, so a length field
        // claiming more than the input holds never allocates for the missing part.
        bytes.clear();
        Read::take(&mut *reader, want as u64)
            .read_to_end(&mut bytes)
            .map_err(io_error(section))?;
        if bytes.len() < want {
            return Err(ReadError::Truncated { section });
        }
        points.extend(decode_block::<G>(
            &bytes, section, first, checked, identity,
        )?);
    }
    Ok(points)
}

/// Decodes the points encoded back to back in `bytes`, the first being `section[first]`, in
/// parallel ([`decode`] for each).
pub(super) fn decode_block<G>(
    bytes: &[u8],
    section: &'static str,
    first: usize,
    checked: bool,
    identity: Identity,
) -> Result<Vec<G>, ReadError>
where
    G: UncompressedEncoding + PrimeCurveAffine,
{
    let size = G::Uncompressed::default().as_ref().len();
    multicore::install(|| {
        bytes
            .par_chunks_exact(size)
            .enumerate()
            .map(|(i, chunk)| {
                let at = At {
                    section,
                    index: first + i,
                };
                decode(chunk, at, checked, identity)
            })
            .collect()
    })
}

pub(crate) fn write_points<G, W>(writer: &mut W, points: &[G]) -> io::Result<()>
where
    G: UncompressedEncoding,
    W: Write,
{
    let len = u32::try_from(points.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "more than 2^32 points in one section",
        )
    })?;
    writer.write_all(&len.to_be_bytes())?;
    for p in points {
        writer.write_all(p.to_uncompressed().as_ref())?;
    }
    Ok(())
}

/// What a verifier needs to check proofs of one circuit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// `alpha * G1`.
    pub alpha_g1: G1Affine,
    /// `beta * G1`.
    pub beta_g1: G1Affine,
    /// `beta * G2`.
    pub beta_g2: G2Affine,
    /// `gamma * G2`.
    pub gamma_g2: G2Affine,
    /// `delta * G1`.
    pub delta_g1: G1Affine,
    /// `delta * G2`.
    pub delta_g2: G2Affine,
    /// `(beta * A_i(tau) + alpha * B_i(tau) + C_i(tau)) / gamma * G1` for each public input `i`,
    /// the constant input `one` first.
    pub ic: Vec<G1Affine>,
}

impl VerifyingKey {
    /// Writes the key in bellman's format.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        writer.write_all(self.alpha_g1.to_uncompressed().as_ref())?;
        writer.write_all(self.beta_g1.to_uncompressed().as_ref())?;
        writer.write_all(self.beta_g2.to_uncompressed().as_ref())?;
        writer.write_all(self.gamma_g2.to_uncompressed().as_ref())?;
        writer.write_all(self.delta_g1.to_uncompressed().as_ref())?;
        writer.write_all(self.delta_g2.to_uncompressed().as_ref())?;
        write_points(&mut writer, &self.ic)
    }

    /// Reads a key in bellman's format, checking every point (on the curve, in the subgroup, in
    /// its canonical encoding). The six fixed points must not be the identity: a key with
    /// `delta = 0` would accept forgeries.
    pub fn read<R: Read>(mut reader: R) -> Result<Self, ReadError> {
        Self::read_with(&mut reader, true)
    }

    pub(super) fn read_with<R: Read>(reader: &mut R, checked: bool) -> Result<Self, ReadError> {
        let no_identity = Identity::Rejected;
        let vk = VerifyingKey {
            alpha_g1: read_point(reader, "vk.alpha_g1", checked, no_identity)?,
            beta_g1: read_point(reader, "vk.beta_g1", checked, no_identity)?,
            beta_g2: read_point(reader, "vk.beta_g2", checked, no_identity)?,
            gamma_g2: read_point(reader, "vk.gamma_g2", checked, no_identity)?,
            delta_g1: read_point(reader, "vk.delta_g1", checked, no_identity)?,
            delta_g2: read_point(reader, "vk.delta_g2", checked, no_identity)?,
            ic: read_points(reader, "vk.ic", checked, Identity::Allowed)?,
        };
        if vk.ic.is_empty() {
            return Err(ReadError::Malformed(
                "vk.ic is empty; it needs at least the entry for the constant input".into(),
            ));
        }
        Ok(vk)
    }

    /// Number of public inputs a proof for this key takes (the constant `one` not counted).
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }
}

/// Proving parameters of one circuit: the verifying key and the prover's queries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameters {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// `tau^i * Z(tau) / delta * G1` for `i < n - 1`: the basis of the quotient `H`.
    pub h: Vec<G1Affine>,
    /// `(beta * A_i + alpha * B_i + C_i)(tau) / delta * G1` for each auxiliary variable.
    pub l: Vec<G1Affine>,
    /// `A_i(tau) * G1` for the variables (inputs, then auxiliary) that appear in `A`.
    pub a: Vec<G1Affine>,
    /// `B_i(tau) * G1` for the variables that appear in `B`.
    pub b_g1: Vec<G1Affine>,
    /// `B_i(tau) * G2` for the variables that appear in `B`.
    pub b_g2: Vec<G2Affine>,
}

impl Parameters {
    /// Writes the parameters in bellman's format.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        self.vk.write(&mut writer)?;
        write_points(&mut writer, &self.h)?;
        write_points(&mut writer, &self.l)?;
        write_points(&mut writer, &self.a)?;
        write_points(&mut writer, &self.b_g1)?;
        write_points(&mut writer, &self.b_g2)
    }

    /// Reads parameters in bellman's format. With `checked`, every point is tested for being on
    /// the curve and in the prime-order subgroup (slow for large files, but a file from an
    /// untrusted source needs it); without, only the encoding is checked. Either way every point
    /// must be in its canonical encoding (the one `write` gives), and query points at infinity are
    /// rejected. Reading stops after `b_g2`: bytes after it are left unread.
    pub fn read<R: Read>(mut reader: R, checked: bool) -> Result<Self, ReadError> {
        let reader = &mut reader;
        let no_identity = Identity::Rejected;
        let vk = VerifyingKey::read_with(reader, checked)?;
        let params = Parameters {
            vk,
            h: read_points(reader, "h", checked, no_identity)?,
            l: read_points(reader, "l", checked, no_identity)?,
            a: read_points(reader, "a", checked, no_identity)?,
            b_g1: read_points(reader, "b_g1", checked, no_identity)?,
            b_g2: read_points(reader, "b_g2", checked, no_identity)?,
        };
        check_shape(params.h.len(), params.b_g1.len(), params.b_g2.len())?;
        Ok(params)
    }
}

/// Checks that the queries' lengths fit together: `h` one short of a power of two (the
/// quotient's domain), the `B` query as long in G1 as in G2.
pub(super) fn check_shape(h: usize, b_g1: usize, b_g2: usize) -> Result<(), ReadError> {
    if !(h + 1).is_power_of_two() {
        return Err(ReadError::Malformed(format!(
            "h has {h} points; a domain of size n needs n - 1, n a power of two"
        )));
    }
    if b_g1 != b_g2 {
        return Err(ReadError::Malformed(format!(
            "b_g1 has {b_g1} points but b_g2 has {b_g2}"
        )));
    }
    Ok(())
}

/// Where the prover gets its queries: in memory ([`Parameters`]), mapped from a file
/// ([`super::MappedParameters`]), or any other store that can lend them as slices
/// (`Bases::from(&points[..])`). The prover checks every length against the circuit and fails with
/// [`SynthesisError::IncompatibleLengthVector`], naming the query, when one does not match.
pub trait ParameterSource {
    /// The verifying key.
    fn vk(&self) -> &VerifyingKey;
    /// The `H` query.
    fn h(&self) -> Bases<'_, G1Affine>;
    /// The `L` query.
    fn l(&self) -> Bases<'_, G1Affine>;
    /// The `A` query, inputs first.
    fn a(&self) -> Bases<'_, G1Affine>;
    /// The `B` query in G1, inputs first.
    fn b_g1(&self) -> Bases<'_, G1Affine>;
    /// The `B` query in G2, inputs first.
    fn b_g2(&self) -> Bases<'_, G2Affine>;
    /// The recorded shape of the circuit these parameters are for, if the source carries one
    /// ([`super::PreparedParameters`]): proofs then run their circuits for the witness only.
    fn shape(&self) -> Option<&CircuitShape> {
        None
    }
}

impl ParameterSource for Parameters {
    fn vk(&self) -> &VerifyingKey {
        &self.vk
    }
    fn h(&self) -> Bases<'_, G1Affine> {
        Bases::from(&self.h)
    }
    fn l(&self) -> Bases<'_, G1Affine> {
        Bases::from(&self.l)
    }
    fn a(&self) -> Bases<'_, G1Affine> {
        Bases::from(&self.a)
    }
    fn b_g1(&self) -> Bases<'_, G1Affine> {
        Bases::from(&self.b_g1)
    }
    fn b_g2(&self) -> Bases<'_, G2Affine> {
        Bases::from(&self.b_g2)
    }
}

impl<P: ParameterSource + ?Sized> ParameterSource for &P {
    fn vk(&self) -> &VerifyingKey {
        (**self).vk()
    }
    fn h(&self) -> Bases<'_, G1Affine> {
        (**self).h()
    }
    fn l(&self) -> Bases<'_, G1Affine> {
        (**self).l()
    }
    fn a(&self) -> Bases<'_, G1Affine> {
        (**self).a()
    }
    fn b_g1(&self) -> Bases<'_, G1Affine> {
        (**self).b_g1()
    }
    fn b_g2(&self) -> Bases<'_, G2Affine> {
        (**self).b_g2()
    }
    fn shape(&self) -> Option<&CircuitShape> {
        (**self).shape()
    }
}
