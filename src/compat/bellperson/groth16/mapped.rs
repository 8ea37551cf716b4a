//! bellperson's `MappedParameters<E>` and `Parameters::build_mapped_parameters`, over
//! [`crate::groth16::MappedParameters`].

use super::params::{sealed, ParameterSource, Parameters, VerifyingKey};
use super::verifier::{prepare_verifying_key, PreparedVerifyingKey};
use crate::compat::bellperson::SupportedEngine;
use crate::groth16 as native;
use std::fmt;
use std::io;
use std::path::PathBuf;

impl<E: SupportedEngine> Parameters<E> {
    /// Maps the parameter file at `param_file_path` (bellperson's name for
    /// [`crate::groth16::MappedParameters::open`], which says what `checked` does and what
    /// happens when the file changes while mapped).
    pub fn build_mapped_parameters(
        param_file_path: PathBuf,
        checked: bool,
    ) -> io::Result<MappedParameters<E>> {
        let inner = native::MappedParameters::open(&param_file_path, checked)?;
        let vk = VerifyingKey::from(native::ParameterSource::vk(&inner).clone());
        Ok(MappedParameters {
            pvk: prepare_verifying_key(&vk),
            vk,
            param_file_path,
            checked,
            inner,
        })
    }
}

/// Parameters proved from a mapped file, with bellperson's public fields (the file's mapping
/// and the queries' places stay inside): see [`crate::groth16::MappedParameters`].
pub struct MappedParameters<E: SupportedEngine> {
    /// The parameter file.
    pub param_file_path: PathBuf,
    /// The verifying key, read when the file was opened.
    pub vk: VerifyingKey<E>,
    /// The verifying key, prepared.
    pub pvk: PreparedVerifyingKey<E>,
    /// Whether every point was checked when the file was opened.
    pub checked: bool,
    inner: native::MappedParameters,
}

impl<E: SupportedEngine> fmt::Debug for MappedParameters<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl<E: SupportedEngine> ParameterSource<E> for &MappedParameters<E> {}

impl<E: SupportedEngine> sealed::Lend for &MappedParameters<E> {
    fn lend(&self) -> sealed::Lent<'_> {
        use native::ParameterSource as _;
        let p = &self.inner;
        sealed::Lent {
            vk: p.vk().clone(),
            h: p.h(),
            l: p.l(),
            a: p.a(),
            b_g1: p.b_g1(),
            b_g2: p.b_g2(),
        }
    }
}
