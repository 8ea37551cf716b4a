//! A Groth16 proof: three points, 192 bytes in bellman's compressed format `a (G1) | b (G2) | c (G1)`.

use super::params::{io_error, ReadError};
use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use group::GroupEncoding;
use std::io::{self, Read, Write};

/// A proof that the prover knows a witness for a circuit's public inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// `A = alpha + A(tau) + r * delta` in G1.
    pub a: G1Affine,
    /// `B = beta + B(tau) + s * delta` in G2.
    pub b: G2Affine,
    /// `C` in G1.
    pub c: G1Affine,
}

/// Size of a proof in bytes.
pub const PROOF_SIZE: usize = 48 + 96 + 48;

impl Proof {
    /// Writes the proof: `a`, `b`, `c` compressed.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        writer.write_all(self.a.to_bytes().as_ref())?;
        writer.write_all(self.b.to_bytes().as_ref())?;
        writer.write_all(self.c.to_bytes().as_ref())
    }

    /// Reads a proof, checking that each point is on the curve, in the prime-order subgroup, not
    /// the identity (a verifier must never accept points outside the subgroup: small-subgroup
    /// components would pass the pairing check for forged values) and in its canonical encoding,
    /// so that [`Proof::write`] gives back exactly the 192 bytes read.
    pub fn read<R: Read>(mut reader: R) -> Result<Self, ReadError> {
        Ok(Proof {
            a: read_compressed(&mut reader, "proof.a")?,
            b: read_compressed(&mut reader, "proof.b")?,
            c: read_compressed(&mut reader, "proof.c")?,
        })
    }

    /// The size of one proof in bytes (bellperson's `Proof::size`).
    pub const fn size() -> usize {
        PROOF_SIZE
    }

    /// Reads `count` proofs written one after another (bellperson's `Proof::read_many`), checking
    /// each as [`Proof::read`] does. The bytes must hold exactly `count` proofs: fewer is
    /// [`ReadError::Truncated`], more is [`ReadError::Malformed`]. The proofs are decoded in
    /// parallel (a G2 decompression with its subgroup check is the cost).
    pub fn read_many(bytes: &[u8], count: usize) -> Result<Vec<Proof>, ReadError> {
        use rayon::prelude::*;
        let needed = count.checked_mul(PROOF_SIZE);
        match needed {
            Some(n) if n == bytes.len() => {}
            Some(n) if n > bytes.len() => return Err(ReadError::Truncated { section: "proofs" }),
            _ => {
                return Err(ReadError::Malformed(format!(
                    "{} bytes for {count} proofs of {PROOF_SIZE} bytes",
                    bytes.len()
                )))
            }
        }
        bytes
            .par_chunks_exact(PROOF_SIZE)
            .map(Proof::read)
            .collect()
    }

    /// The proof as bytes.
    pub fn to_bytes(&self) -> [u8; PROOF_SIZE] {
        let mut out = [0u8; PROOF_SIZE];
        out[..48].copy_from_slice(self.a.to_bytes().as_ref());
        out[48..144].copy_from_slice(self.b.to_bytes().as_ref());
        out[144..].copy_from_slice(self.c.to_bytes().as_ref());
        out
    }
}

fn read_compressed<G, R>(reader: &mut R, section: &'static str) -> Result<G, ReadError>
where
    G: GroupEncoding + PrimeCurveAffine,
    R: Read,
{
    let mut repr = G::Repr::default();
    reader
        .read_exact(repr.as_mut())
        .map_err(io_error(section))?;
    let p: G =
        Option::from(G::from_bytes(&repr)).ok_or(ReadError::InvalidPoint { section, index: 0 })?;
    // blst accepts only the canonical compressed encoding today; comparing the re-encoding keeps
    // `write(read(bytes)) == bytes` true whatever the decoder allows (a proof named by its hash).
    if p.to_bytes().as_ref() != repr.as_ref() {
        return Err(ReadError::NonCanonicalPoint { section, index: 0 });
    }
    if bool::from(p.is_identity()) {
        return Err(ReadError::PointAtInfinity { section, index: 0 });
    }
    Ok(p)
}
