//! Circuits of both bellpepper-core trait versions, seen as one.
//!
//! This crate's API takes circuits of bellpepper-core 0.4; bellperson 0.27 (and every gadget
//! written for it) uses 0.2. The two versions' traits have the same shape but are different
//! traits, so this crate's constraint systems implement both (the prover's, the generator's and
//! the shape recorder's through one wrapper, [`Recording`]; the witness generator's on its own),
//! and a circuit is wrapped once ([`Current`] or [`Bellperson`]) to say which trait it is
//! synthesized through. Nothing is converted per constraint: both versions' linear combinations
//! are read in place through [`Terms`].

use bellpepper_core::SynthesisError;
use bellpepper_core_02 as v02;
use blstrs::Scalar;

/// A constraint system of this crate: it takes circuits of either trait version.
pub(crate) trait BothVersions:
    bellpepper_core::ConstraintSystem<Scalar> + v02::ConstraintSystem<Scalar>
{
}

impl<CS> BothVersions for CS where
    CS: bellpepper_core::ConstraintSystem<Scalar> + v02::ConstraintSystem<Scalar>
{
}

/// What one of this crate's constraint systems does with a circuit's allocations and
/// constraints. [`Recording`] makes it a constraint system of both trait versions, so that the
/// two traits' boilerplate (names, namespaces, each version's variables and errors) is written
/// once, here, rather than twice for each system.
pub(crate) trait Record: Send {
    /// A new auxiliary variable's index; `value` is called only by a system that keeps the
    /// witness.
    fn aux(
        &mut self,
        value: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError>;
    /// A new input's index; `value` as for [`Record::aux`].
    fn input(
        &mut self,
        value: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError>;
    /// The constraint `a * b = c`.
    fn constraint<T: Terms>(&mut self, a: &T, b: &T, c: &T);
}

/// A [`Record`] as a constraint system of both bellpepper-core versions: names and namespaces
/// are dropped, allocations and constraints go to the record.
pub(crate) struct Recording<'a, R>(pub(crate) &'a mut R);

impl<R: Record> bellpepper_core::ConstraintSystem<Scalar> for Recording<'_, R> {
    type Root = Self;

    #[inline]
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<bellpepper_core::Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let i = self.0.aux(f)?;
        Ok(bellpepper_core::Variable::new_unchecked(
            bellpepper_core::Index::Aux(i),
        ))
    }

    #[inline]
    fn alloc_input<F, A, AR>(
        &mut self,
        _: A,
        f: F,
    ) -> Result<bellpepper_core::Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let i = self.0.input(f)?;
        Ok(bellpepper_core::Variable::new_unchecked(
            bellpepper_core::Index::Input(i),
        ))
    }

    #[inline]
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(
            bellpepper_core::LinearCombination<Scalar>,
        ) -> bellpepper_core::LinearCombination<Scalar>,
        LB: FnOnce(
            bellpepper_core::LinearCombination<Scalar>,
        ) -> bellpepper_core::LinearCombination<Scalar>,
        LC: FnOnce(
            bellpepper_core::LinearCombination<Scalar>,
        ) -> bellpepper_core::LinearCombination<Scalar>,
    {
        let zero = bellpepper_core::LinearCombination::zero;
        self.0.constraint(&a(zero()), &b(zero()), &c(zero()));
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// bellpepper-core 0.2's trait (bellperson 0.27's circuits and gadgets): the same record, each
/// error carried across as its variant in the other version.
impl<R: Record> v02::ConstraintSystem<Scalar> for Recording<'_, R> {
    type Root = Self;

    #[inline]
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<v02::Variable, v02::SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, v02::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let i = self
            .0
            .aux(|| f().map_err(error_from_v02))
            .map_err(error_to_v02)?;
        Ok(v02::Variable::new_unchecked(v02::Index::Aux(i)))
    }

    #[inline]
    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<v02::Variable, v02::SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, v02::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let i = self
            .0
            .input(|| f().map_err(error_from_v02))
            .map_err(error_to_v02)?;
        Ok(v02::Variable::new_unchecked(v02::Index::Input(i)))
    }

    #[inline]
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(v02::LinearCombination<Scalar>) -> v02::LinearCombination<Scalar>,
        LB: FnOnce(v02::LinearCombination<Scalar>) -> v02::LinearCombination<Scalar>,
        LC: FnOnce(v02::LinearCombination<Scalar>) -> v02::LinearCombination<Scalar>,
    {
        let zero = v02::LinearCombination::zero;
        self.0.constraint(&a(zero()), &b(zero()), &c(zero()));
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The error for a constraint that names a variable the circuit did not allocate.
pub(crate) fn unallocated_variable(num_inputs: usize, num_aux: usize) -> SynthesisError {
    SynthesisError::IncompatibleLengthVector(format!(
        "a constraint names a variable the circuit did not allocate ({num_inputs} inputs, \
         {num_aux} auxiliary variables): a variable of another constraint system?"
    ))
}

/// A circuit of either version, ready to synthesize into one of this crate's constraint systems.
pub(crate) trait AnyCircuit {
    /// Runs the circuit against `cs`.
    fn synthesize_into<CS: BothVersions>(self, cs: &mut CS) -> Result<(), SynthesisError>;
}

/// A circuit of bellpepper-core 0.4, this crate's own version.
pub(crate) struct Current<C>(pub(crate) C);

/// A circuit of bellpepper-core 0.2, the version bellperson 0.27 and its gadgets use.
pub(crate) struct Bellperson<C>(pub(crate) C);

impl<C: bellpepper_core::Circuit<Scalar>> AnyCircuit for Current<C> {
    fn synthesize_into<CS: BothVersions>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        bellpepper_core::Circuit::synthesize(self.0, cs)
    }
}

impl<C: v02::Circuit<Scalar>> AnyCircuit for Bellperson<C> {
    fn synthesize_into<CS: BothVersions>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        v02::Circuit::synthesize(self.0, cs).map_err(error_from_v02)
    }
}

/// The terms of one linear combination, inputs and auxiliary variables apart, as both versions
/// store them.
pub(crate) trait Terms {
    /// `(input index, coefficient)` for each input term.
    fn input_terms(&self) -> impl Iterator<Item = (usize, &Scalar)>;
    /// `(auxiliary index, coefficient)` for each auxiliary term.
    fn aux_terms(&self) -> impl Iterator<Item = (usize, &Scalar)>;
}

impl Terms for bellpepper_core::LinearCombination<Scalar> {
    fn input_terms(&self) -> impl Iterator<Item = (usize, &Scalar)> {
        self.iter_inputs().map(|(i, c)| (*i, c))
    }
    fn aux_terms(&self) -> impl Iterator<Item = (usize, &Scalar)> {
        self.iter_aux().map(|(i, c)| (*i, c))
    }
}

impl Terms for v02::LinearCombination<Scalar> {
    fn input_terms(&self) -> impl Iterator<Item = (usize, &Scalar)> {
        self.iter_inputs().map(|(i, c)| (*i, c))
    }
    fn aux_terms(&self) -> impl Iterator<Item = (usize, &Scalar)> {
        self.iter_aux().map(|(i, c)| (*i, c))
    }
}

/// A 0.2 error as 0.4's (the two enums have the same variants).
pub(crate) fn error_from_v02(e: v02::SynthesisError) -> SynthesisError {
    use v02::SynthesisError as Old;
    match e {
        Old::AssignmentMissing => SynthesisError::AssignmentMissing,
        Old::DivisionByZero => SynthesisError::DivisionByZero,
        Old::Unsatisfiable => SynthesisError::Unsatisfiable,
        Old::PolynomialDegreeTooLarge => SynthesisError::PolynomialDegreeTooLarge,
        Old::UnexpectedIdentity => SynthesisError::UnexpectedIdentity,
        Old::IoError(e) => SynthesisError::IoError(e),
        Old::MalformedVerifyingKey => SynthesisError::MalformedVerifyingKey,
        Old::UnconstrainedVariable => SynthesisError::UnconstrainedVariable,
        Old::MalformedProofs(s) => SynthesisError::MalformedProofs(s),
        Old::MalformedSrs => SynthesisError::MalformedSrs,
        Old::NonPowerOfTwo => SynthesisError::NonPowerOfTwo,
        Old::IncompatibleLengthVector(s) => SynthesisError::IncompatibleLengthVector(s),
        Old::InvalidPairing => SynthesisError::InvalidPairing,
    }
}

/// A 0.4 error as 0.2's.
pub(crate) fn error_to_v02(e: SynthesisError) -> v02::SynthesisError {
    use v02::SynthesisError as Old;
    match e {
        SynthesisError::AssignmentMissing => Old::AssignmentMissing,
        SynthesisError::DivisionByZero => Old::DivisionByZero,
        SynthesisError::Unsatisfiable => Old::Unsatisfiable,
        SynthesisError::PolynomialDegreeTooLarge => Old::PolynomialDegreeTooLarge,
        SynthesisError::UnexpectedIdentity => Old::UnexpectedIdentity,
        SynthesisError::IoError(e) => Old::IoError(e),
        SynthesisError::MalformedVerifyingKey => Old::MalformedVerifyingKey,
        SynthesisError::UnconstrainedVariable => Old::UnconstrainedVariable,
        SynthesisError::MalformedProofs(s) => Old::MalformedProofs(s),
        SynthesisError::MalformedSrs => Old::MalformedSrs,
        SynthesisError::NonPowerOfTwo => Old::NonPowerOfTwo,
        SynthesisError::IncompatibleLengthVector(s) => Old::IncompatibleLengthVector(s),
        SynthesisError::InvalidPairing => Old::InvalidPairing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_variant_both_ways() {
        let cases = [
            SynthesisError::AssignmentMissing,
            SynthesisError::Unsatisfiable,
            SynthesisError::UnconstrainedVariable,
            SynthesisError::IncompatibleLengthVector("l".into()),
            SynthesisError::InvalidPairing,
        ];
        for e in cases {
            let text = e.to_string();
            let back = error_from_v02(error_to_v02(e));
            assert_eq!(back.to_string(), text);
        }
    }
}
