//! bellperson's `Proof<E>`: three points, the same 192 bytes as [`crate::groth16::Proof`].

use crate::compat::bellperson::SupportedEngine;
use crate::groth16 as native;
use std::fmt;
use std::io::{self, Read, Write};

/// A Groth16 proof, with bellperson's fields and methods.
pub struct Proof<E: SupportedEngine> {
    /// `A` in G1.
    pub a: E::G1Affine,
    /// `B` in G2.
    pub b: E::G2Affine,
    /// `C` in G1.
    pub c: E::G1Affine,
}

impl<E: SupportedEngine> Proof<E> {
    /// Writes the proof: `a`, `b`, `c` compressed (192 bytes).
    pub fn write<W: Write>(&self, writer: W) -> io::Result<()> {
        native::Proof::from(self).write(writer)
    }

    /// Reads a proof, checking each point as [`crate::groth16::Proof::read`] does.
    pub fn read<R: Read>(reader: R) -> io::Result<Self> {
        Ok(native::Proof::read(reader)?.into())
    }

    /// The size of one proof in bytes.
    pub const fn size() -> usize {
        native::Proof::size()
    }

    /// Reads `num_proofs` proofs written one after another; the bytes must hold exactly that
    /// many.
    pub fn read_many(proof_bytes: &[u8], num_proofs: usize) -> io::Result<Vec<Self>> {
        let proofs = native::Proof::read_many(proof_bytes, num_proofs)?;
        Ok(proofs.into_iter().map(Proof::from).collect())
    }
}

impl<E: SupportedEngine> From<native::Proof> for Proof<E> {
    fn from(p: native::Proof) -> Self {
        Proof {
            a: p.a,
            b: p.b,
            c: p.c,
        }
    }
}

impl<E: SupportedEngine> From<&Proof<E>> for native::Proof {
    fn from(p: &Proof<E>) -> Self {
        native::Proof {
            a: p.a,
            b: p.b,
            c: p.c,
        }
    }
}

impl<E: SupportedEngine> From<Proof<E>> for native::Proof {
    fn from(p: Proof<E>) -> Self {
        native::Proof::from(&p)
    }
}

// By hand rather than derived: a derive would ask `E` itself to be `Clone`, `PartialEq`, ...
impl<E: SupportedEngine> Clone for Proof<E> {
    fn clone(&self) -> Self {
        Proof {
            a: self.a,
            b: self.b,
            c: self.c,
        }
    }
}

impl<E: SupportedEngine> PartialEq for Proof<E> {
    fn eq(&self, other: &Self) -> bool {
        self.a == other.a && self.b == other.b && self.c == other.c
    }
}

impl<E: SupportedEngine> Eq for Proof<E> {}

impl<E: SupportedEngine> fmt::Debug for Proof<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proof")
            .field("a", &self.a)
            .field("b", &self.b)
            .field("c", &self.c)
            .finish()
    }
}
