//! bellperson's `Parameters<E>`, `VerifyingKey<E>` and `ParameterSource<E>`, in the byte format
//! both crates share.

use crate::compat::bellperson::SupportedEngine;
use crate::groth16 as native;
use crate::groth16::{write_points, Bases};
use std::fmt;
use std::io::{self, Read, Write};
use std::sync::Arc;

/// What a verifier needs to check proofs of one circuit, with bellperson's fields.
pub struct VerifyingKey<E: SupportedEngine> {
    /// `alpha * G1`.
    pub alpha_g1: E::G1Affine,
    /// `beta * G1`.
    pub beta_g1: E::G1Affine,
    /// `beta * G2`.
    pub beta_g2: E::G2Affine,
    /// `gamma * G2`.
    pub gamma_g2: E::G2Affine,
    /// `delta * G1`.
    pub delta_g1: E::G1Affine,
    /// `delta * G2`.
    pub delta_g2: E::G2Affine,
    /// The input commitments, the constant input `one` first.
    pub ic: Vec<E::G1Affine>,
}

impl<E: SupportedEngine> VerifyingKey<E> {
    /// Writes the key in bellman's format.
    pub fn write<W: Write>(&self, writer: W) -> io::Result<()> {
        native::VerifyingKey::from(self).write(writer)
    }

    /// Reads a key in bellman's format, checking every point as
    /// [`crate::groth16::VerifyingKey::read`] does.
    pub fn read<R: Read>(reader: R) -> io::Result<Self> {
        Ok(native::VerifyingKey::read(reader)?.into())
    }
}

impl<E: SupportedEngine> From<native::VerifyingKey> for VerifyingKey<E> {
    fn from(vk: native::VerifyingKey) -> Self {
        VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic,
        }
    }
}

impl<E: SupportedEngine> From<&VerifyingKey<E>> for native::VerifyingKey {
    fn from(vk: &VerifyingKey<E>) -> Self {
        native::VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic.clone(),
        }
    }
}

impl<E: SupportedEngine> From<VerifyingKey<E>> for native::VerifyingKey {
    fn from(vk: VerifyingKey<E>) -> Self {
        native::VerifyingKey {
            alpha_g1: vk.alpha_g1,
            beta_g1: vk.beta_g1,
            beta_g2: vk.beta_g2,
            gamma_g2: vk.gamma_g2,
            delta_g1: vk.delta_g1,
            delta_g2: vk.delta_g2,
            ic: vk.ic,
        }
    }
}

// By hand rather than derived: a derive would ask `E` itself to be `Clone`, `PartialEq`, ...
impl<E: SupportedEngine> Clone for VerifyingKey<E> {
    fn clone(&self) -> Self {
        native::VerifyingKey::from(self).into()
    }
}

impl<E: SupportedEngine> PartialEq for VerifyingKey<E> {
    fn eq(&self, other: &Self) -> bool {
        native::VerifyingKey::from(self) == native::VerifyingKey::from(other)
    }
}

impl<E: SupportedEngine> Eq for VerifyingKey<E> {}

impl<E: SupportedEngine> fmt::Debug for VerifyingKey<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&native::VerifyingKey::from(self), f)
    }
}

/// Proving parameters of one circuit, with bellperson's fields (the queries shared through
/// `Arc`s, so that clones are cheap).
pub struct Parameters<E: SupportedEngine> {
    /// The verifying key.
    pub vk: VerifyingKey<E>,
    /// The basis of the quotient `H`.
    pub h: Arc<Vec<E::G1Affine>>,
    /// The `L` query, one point per auxiliary variable.
    pub l: Arc<Vec<E::G1Affine>>,
    /// The `A` query (inputs, then auxiliary variables that appear in `A`).
    pub a: Arc<Vec<E::G1Affine>>,
    /// The `B` query in G1.
    pub b_g1: Arc<Vec<E::G1Affine>>,
    /// The `B` query in G2.
    pub b_g2: Arc<Vec<E::G2Affine>>,
}

impl<E: SupportedEngine> Parameters<E> {
    /// Writes the parameters in bellman's format.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        self.vk.write(&mut writer)?;
        write_points(&mut writer, &self.h)?;
        write_points(&mut writer, &self.l)?;
        write_points(&mut writer, &self.a)?;
        write_points(&mut writer, &self.b_g1)?;
        write_points(&mut writer, &self.b_g2)
    }

    /// Reads parameters in bellman's format; `checked` as in
    /// [`crate::groth16::Parameters::read`].
    pub fn read<R: Read>(reader: R, checked: bool) -> io::Result<Self> {
        Ok(native::Parameters::read(reader, checked)?.into())
    }
}

impl<E: SupportedEngine> From<native::Parameters> for Parameters<E> {
    fn from(p: native::Parameters) -> Self {
        Parameters {
            vk: p.vk.into(),
            h: Arc::new(p.h),
            l: Arc::new(p.l),
            a: Arc::new(p.a),
            b_g1: Arc::new(p.b_g1),
            b_g2: Arc::new(p.b_g2),
        }
    }
}

impl<E: SupportedEngine> From<Parameters<E>> for native::Parameters {
    /// Moves the queries out of their `Arc`s, copying only those still shared.
    fn from(p: Parameters<E>) -> Self {
        fn take<T: Clone>(v: Arc<Vec<T>>) -> Vec<T> {
            Arc::try_unwrap(v).unwrap_or_else(|shared| (*shared).clone())
        }
        native::Parameters {
            vk: p.vk.into(),
            h: take(p.h),
            l: take(p.l),
            a: take(p.a),
            b_g1: take(p.b_g1),
            b_g2: take(p.b_g2),
        }
    }
}

impl<E: SupportedEngine> Clone for Parameters<E> {
    fn clone(&self) -> Self {
        Parameters {
            vk: self.vk.clone(),
            h: Arc::clone(&self.h),
            l: Arc::clone(&self.l),
            a: Arc::clone(&self.a),
            b_g1: Arc::clone(&self.b_g1),
            b_g2: Arc::clone(&self.b_g2),
        }
    }
}

impl<E: SupportedEngine> PartialEq for Parameters<E> {
    fn eq(&self, other: &Self) -> bool {
        self.vk == other.vk
            && self.h == other.h
            && self.l == other.l
            && self.a == other.a
            && self.b_g1 == other.b_g1
            && self.b_g2 == other.b_g2
    }
}

impl<E: SupportedEngine> Eq for Parameters<E> {}

impl<E: SupportedEngine> fmt::Debug for Parameters<E> {
    /// The key and the queries' lengths (the points of a real circuit run to gigabytes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parameters")
            .field("vk", &self.vk)
            .field("h", &self.h.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b_g1", &self.b_g1.len())
            .field("b_g2", &self.b_g2.len())
            .finish()
    }
}

/// Where the prover gets its parameters (bellperson's name): implemented for `&Parameters<E>`
/// and `&MappedParameters<E>`, as bellperson's is. Sealed; the prover reads the queries through
/// [`crate::groth16::ParameterSource`].
pub trait ParameterSource<E: SupportedEngine>: Send + Sync + sealed::Lend {}

impl<E: SupportedEngine> ParameterSource<E> for &Parameters<E> {}

impl<E: SupportedEngine> sealed::Lend for &Parameters<E> {
    fn lend(&self) -> sealed::Lent<'_> {
        sealed::Lent {
            vk: native::VerifyingKey::from(&self.vk),
            h: Bases::from(&**self.h),
            l: Bases::from(&**self.l),
            a: Bases::from(&**self.a),
            b_g1: Bases::from(&**self.b_g1),
            b_g2: Bases::from(&**self.b_g2),
        }
    }
}

pub(super) mod sealed {
    use crate::groth16 as native;
    use crate::groth16::Bases;
    use blstrs::{G1Affine, G2Affine};

    /// Lends a source's queries to the prover.
    pub trait Lend {
        /// The verifying key (copied: a few points per public input) and the queries.
        fn lend(&self) -> Lent<'_>;
    }

    /// A source's queries as the prover reads them.
    pub struct Lent<'a> {
        pub(crate) vk: native::VerifyingKey,
        pub(crate) h: Bases<'a, G1Affine>,
        pub(crate) l: Bases<'a, G1Affine>,
        pub(crate) a: Bases<'a, G1Affine>,
        pub(crate) b_g1: Bases<'a, G1Affine>,
        pub(crate) b_g2: Bases<'a, G2Affine>,
    }

    impl native::ParameterSource for Lent<'_> {
        fn vk(&self) -> &native::VerifyingKey {
            &self.vk
        }
        fn h(&self) -> Bases<'_, G1Affine> {
            self.h
        }
        fn l(&self) -> Bases<'_, G1Affine> {
            self.l
        }
        fn a(&self) -> Bases<'_, G1Affine> {
            self.a
        }
        fn b_g1(&self) -> Bases<'_, G1Affine> {
            self.b_g1
        }
        fn b_g2(&self) -> Bases<'_, G2Affine> {
            self.b_g2
        }
    }
}
