//! A circuit's constraints recorded once ([`CircuitShape`]), so that later proofs of the same
//! circuit run it only for its witness and evaluate the constraints as sparse products.
//!
//! A proving service proves one circuit shape again and again; only the witness changes. Full
//! synthesis builds and drops three linear combinations per constraint and evaluates them one at
//! a time on one thread. With a shape, the circuit runs against `WitnessAssignment`, a
//! constraint system whose `is_witness_generator()` is true (no linear combination is built, no
//! `enforce` closure called), and the three evaluation vectors come from the shape's matrices and
//! the witness on all cores, each constraint checked in the same pass.
//!
//! The recording: per matrix, a row's terms as `(variable, coefficient)` pairs of `u32`s (the
//! variable's top bit marks an input; the coefficient is an index into a table of the circuit's
//! distinct coefficients, `ONE` first), rows ending at `u32` offsets: 8 bytes a term and 4 a row.

use super::circuit::{unallocated_variable, AnyCircuit, Record, Recording, Terms};
use crate::multiexp::Density;
use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use std::collections::HashMap;

/// Marks an input in a term's variable.
pub(super) const INPUT: u32 = 1 << 31;

/// One of the three matrices: row `i`'s terms are `terms[ends[i - 1]..ends[i]]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Matrix {
    pub(super) ends: Vec<u32>,
    pub(super) terms: Vec<(u32, u32)>,
}

impl Matrix {
    pub(super) fn row(&self, i: usize) -> &[(u32, u32)] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.terms[start..self.ends[i] as usize]
    }

    fn bytes(&self) -> usize {
        self.ends.len() * 4 + self.terms.len() * 8
    }
}

/// The constraints of a circuit, without a witness: recorded once ([`CircuitShape::record`], or
/// by a circuit of a batch: [`crate::groth16::ProveOptions::reuse_shape_in_batch`]),
/// then used by every proof of circuits of the same shape made with
/// [`crate::groth16::PreparedParameters`]. Every proof made from a shape is verified before it
/// is returned, so a circuit whose constraints differ from the shape's gives an error, never a
/// bad proof.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CircuitShape {
    /// Inputs, the constant `one` included.
    pub(super) num_inputs: usize,
    pub(super) num_aux: usize,
    pub(super) a: Matrix,
    pub(super) b: Matrix,
    pub(super) c: Matrix,
    /// The distinct coefficients, `ONE` first.
    pub(super) coefficients: Vec<Scalar>,
    pub(super) a_aux_density: Density,
    pub(super) b_input_density: Density,
    pub(super) b_aux_density: Density,
}

impl CircuitShape {
    /// Records the constraints of `circuit` (of bellpepper-core 0.4) without its witness: no
    /// value closure is called, so a circuit without values (as for parameter generation) will
    /// do.
    pub fn record<C: bellpepper_core::Circuit<Scalar>>(
        circuit: C,
    ) -> Result<CircuitShape, SynthesisError> {
        record_any(super::circuit::Current(circuit))
    }

    /// Constraints of the circuit (the input constraints the prover adds not counted).
    pub fn num_constraints(&self) -> usize {
        self.a.ends.len()
    }

    /// Inputs of the circuit, the constant `one` included.
    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    /// Auxiliary variables of the circuit.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Non-zero terms of the three matrices.
    pub fn num_terms(&self) -> usize {
        self.a.terms.len() + self.b.terms.len() + self.c.terms.len()
    }

    /// Bytes the shape holds in memory (matrices, coefficients and densities).
    pub fn memory_bytes(&self) -> usize {
        self.a.bytes()
            + self.b.bytes()
            + self.c.bytes()
            + self.coefficients.len() * 32
            + self.a_aux_density.len()
            + self.b_input_density.len()
            + self.b_aux_density.len()
    }
}

/// Records `circuit`'s constraints ([`CircuitShape::record`] for either trait version).
pub(crate) fn record_any<C: AnyCircuit>(circuit: C) -> Result<CircuitShape, SynthesisError> {
    let mut recorder = ShapeRecorder {
        num_inputs: 1,
        ..ShapeRecorder::default()
    };
    circuit.synthesize_into(&mut Recording(&mut recorder))?;
    let (inputs, aux) = (recorder.num_inputs, recorder.num_aux);
    recorder.finish(inputs, aux)
}

/// Builds a [`CircuitShape`] one constraint at a time: the constraint system of
/// [`CircuitShape::record`], and the recorder a first proof of a batch carries.
#[derive(Default)]
pub(super) struct ShapeRecorder {
    num_inputs: usize,
    num_aux: usize,
    a: Matrix,
    b: Matrix,
    c: Matrix,
    coefficients: Vec<Scalar>,
    index_of: HashMap<[u8; 32], u32>,
    /// Set when a count outgrew `u32`: the shape cannot be recorded.
    too_large: bool,
    /// One past the highest input and auxiliary index the constraints name: a variable of
    /// another constraint system can name one the circuit never allocated.
    inputs_named: u64,
    aux_named: u64,
}

impl ShapeRecorder {
    /// A recorder whose matrices have room for `rows` constraints of one term each, reserved
    /// (not touched) so that a circuit of known size grows them less often.
    pub(super) fn with_rows(rows: usize) -> ShapeRecorder {
        let matrix = || Matrix {
            ends: Vec::with_capacity(rows),
            terms: Vec::with_capacity(rows),
        };
        ShapeRecorder {
            a: matrix(),
            b: matrix(),
            c: matrix(),
            ..ShapeRecorder::default()
        }
    }

    /// Records the constraint `a * b = c`; variables of the circuit's allocations so far.
    pub(super) fn push<T: Terms>(&mut self, a: &T, b: &T, c: &T) {
        for (lc, which) in [(a, 0), (b, 1), (c, 2)] {
            for (i, coeff) in lc.input_terms() {
                self.term(which, i as u64 | INPUT as u64, coeff);
            }
            for (i, coeff) in lc.aux_terms() {
                self.term(which, i as u64, coeff);
            }
            let m = self.matrix(which);
            let end = u32::try_from(m.terms.len());
            match end {
                Ok(end) => m.ends.push(end),
                Err(_) => self.too_large = true,
            }
        }
    }

    fn matrix(&mut self, which: usize) -> &mut Matrix {
        match which {
            0 => &mut self.a,
            1 => &mut self.b,
            _ => &mut self.c,
        }
    }

    fn term(&mut self, which: usize, var: u64, coeff: &Scalar) {
        // Zero coefficients are skipped, as full synthesis skips them (and its densities).
        if *coeff == Scalar::ZERO {
            return;
        }
        let index = if *coeff == Scalar::ONE {
            0
        } else {
            let next = self.coefficients.len() as u32 + 1;
            let index = *self.index_of.entry(coeff.to_repr()).or_insert(next);
            if index == next {
                self.coefficients.push(*coeff);
            }
            index
        };
        // An input index past the marker bit, or an aux index reaching it, does not fit.
        let fits = if var & INPUT as u64 != 0 {
            var <= u32::MAX as u64
        } else {
            var < INPUT as u64
        };
        if !fits {
            self.too_large = true;
            return;
        }
        if var & INPUT as u64 != 0 {
            self.inputs_named = self.inputs_named.max((var & !(INPUT as u64)) + 1);
        } else {
            self.aux_named = self.aux_named.max(var + 1);
        }
        self.matrix(which).terms.push((var as u32, index));
    }

    /// The shape of a circuit of `num_inputs` inputs (`one` included) and `num_aux` auxiliary
    /// variables, its densities computed from the matrices.
    pub(super) fn finish(
        self,
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<CircuitShape, SynthesisError> {
        if self.too_large {
            return Err(SynthesisError::IncompatibleLengthVector(
                "a circuit with more than 2^31 variables or 2^32 terms in a matrix cannot be \
                 recorded as a shape"
                    .into(),
            ));
        }
        if self.inputs_named > num_inputs as u64 || self.aux_named > num_aux as u64 {
            return Err(unallocated_variable(num_inputs, num_aux));
        }
        let mut coefficients = Vec::with_capacity(self.coefficients.len() + 1);
        coefficients.push(Scalar::ONE);
        coefficients.extend(self.coefficients);
        Ok(CircuitShape::from_parts(
            num_inputs,
            num_aux,
            [self.a, self.b, self.c],
            coefficients,
        ))
    }
}

impl CircuitShape {
    /// A shape from its matrices (checked by the caller) and coefficient table (`ONE` first),
    /// its densities computed from the matrices.
    pub(super) fn from_parts(
        num_inputs: usize,
        num_aux: usize,
        [a, b, c]: [Matrix; 3],
        coefficients: Vec<Scalar>,
    ) -> CircuitShape {
        let mut shape = CircuitShape {
            num_inputs,
            num_aux,
            a,
            b,
            c,
            coefficients,
            ..CircuitShape::default()
        };
        shape.compute_densities();
        shape
    }

    /// The densities full synthesis tracks: auxiliary variables in `A`, inputs and auxiliary
    /// variables in `B` (inputs need none in `A`: the input constraints make that query dense).
    /// Each covers the variables up to the highest its matrix names, and is padded to the
    /// shape's counts for a proof ([`Density::padded`]): a shape file's counts, which nothing has
    /// checked yet, never size memory here.
    fn compute_densities(&mut self) {
        let named = |m: &Matrix, inputs: bool| {
            m.terms
                .iter()
                .filter(|&&(var, _)| (var & INPUT != 0) == inputs)
                .map(|&(var, _)| (var & !INPUT) as usize + 1)
                .max()
                .unwrap_or(0)
        };
        let (mut a_aux, mut b_in, mut b_aux) = (
            Density::with_len(named(&self.a, false)),
            Density::with_len(named(&self.b, true)),
            Density::with_len(named(&self.b, false)),
        );
        for &(var, _) in &self.a.terms {
            if var & INPUT == 0 {
                a_aux.inc(var as usize);
            }
        }
        for &(var, _) in &self.b.terms {
            if var & INPUT == 0 {
                b_aux.inc(var as usize);
            } else {
                b_in.inc((var & !INPUT) as usize);
            }
        }
        (self.a_aux_density, self.b_input_density, self.b_aux_density) = (a_aux, b_in, b_aux);
    }
}

/// A shape needs no values, so the assignment closures are not called.
impl Record for ShapeRecorder {
    fn aux(
        &mut self,
        _: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError> {
        self.num_aux += 1;
        Ok(self.num_aux - 1)
    }

    fn input(
        &mut self,
        _: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError> {
        self.num_inputs += 1;
        Ok(self.num_inputs - 1)
    }

    fn constraint<T: Terms>(&mut self, a: &T, b: &T, c: &T) {
        self.push(a, b, c);
    }
}

#[cfg(test)]
mod tests {
    use super::{record_any, CircuitShape};
    use crate::groth16::assignment::{synthesize, synthesize_recording, AssignmentSize};
    use crate::groth16::circuit::{Bellperson, Current};
    use crate::groth16::witness::WitnessAssignment;
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use bellpepper_core_02 as v02;
    use blstrs::Scalar;
    use ff::Field;

    /// Inputs in `B`, several coefficients (zero and repeated ones too), a variable twice in one
    /// combination, and a variable in no constraint.
    #[derive(Clone, Copy)]
    struct Mixed(u64);

    impl Circuit<Scalar> for Mixed {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let v = Scalar::from(self.0);
            let x = cs.alloc(|| "x", || Ok(v))?;
            let unused = cs.alloc(|| "unused", || Ok(v + v))?;
            let p = cs.alloc_input(|| "p", || Ok(v * Scalar::from(7u64)))?;
            let (two, three) = (Scalar::from(2u64), Scalar::from(3u64));
            let y = cs.alloc(|| "y", || Ok(v * (two * v + v * Scalar::from(7u64))))?;
            cs.enforce(
                || "x * (2x + p) = y",
                |lc| lc + x + (Scalar::ZERO, unused),
                |lc| lc + (two, x) + p,
                |lc| lc + y,
            );
            cs.enforce(
                || "3x * 1 = x + 2x",
                |lc| lc + (three, x),
                |lc| lc + CS::one(),
                |lc| lc + x + x + x,
            );
            let _ = unused;
            Ok(())
        }
    }

    impl v02::Circuit<Scalar> for Mixed {
        fn synthesize<CS: v02::ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), v02::SynthesisError> {
            let v = Scalar::from(self.0);
            let x = cs.alloc(|| "x", || Ok(v))?;
            let unused = cs.alloc(|| "unused", || Ok(v + v))?;
            let p = cs.alloc_input(|| "p", || Ok(v * Scalar::from(7u64)))?;
            let (two, three) = (Scalar::from(2u64), Scalar::from(3u64));
            let y = cs.alloc(|| "y", || Ok(v * (two * v + v * Scalar::from(7u64))))?;
            cs.enforce(
                || "x * (2x + p) = y",
                |lc| lc + x + (Scalar::ZERO, unused),
                |lc| lc + (two, x) + p,
                |lc| lc + y,
            );
            cs.enforce(
                || "3x * 1 = x + 2x",
                |lc| lc + (three, x),
                |lc| lc + CS::one(),
                |lc| lc + x + x + x,
            );
            Ok(())
        }
    }

    const SIZE: AssignmentSize = AssignmentSize {
        domain: 8,
        inputs: 2,
        aux: 3,
    };

    fn assert_same(shape: &CircuitShape, value: u64) {
        let full = synthesize(Current(Mixed(value)), &SIZE).unwrap();
        let witness = WitnessAssignment::of(Current(Mixed(value)), shape).unwrap();
        let shaped = shape.evaluate(witness, SIZE.domain).unwrap();
        assert_eq!(shaped.a, full.a);
        assert_eq!(shaped.b, full.b);
        assert_eq!(shaped.c, full.c);
        assert_eq!(shaped.a_aux_density, full.a_aux_density);
        assert_eq!(shaped.b_input_density, full.b_input_density);
        assert_eq!(shaped.b_aux_density, full.b_aux_density);
        assert_eq!(shaped.input_assignment, full.input_assignment);
        assert_eq!(shaped.aux_assignment, full.aux_assignment);
        // The 0.2 trait gives the same witness.
        let old = WitnessAssignment::of(Bellperson(Mixed(value)), shape).unwrap();
        assert_eq!(old.aux, full.aux_assignment);
    }

    #[test]
    fn a_shape_evaluates_to_what_full_synthesis_gives() {
        let recorded = CircuitShape::record(Mixed(0)).unwrap();
        assert_eq!(recorded, record_any(Bellperson(Mixed(0))).unwrap());
        let (_, by_proof) = synthesize_recording(Current(Mixed(5)), &SIZE).unwrap();
        assert_eq!(recorded, by_proof);
        assert_eq!(recorded.num_constraints(), 2);
        assert_eq!((recorded.num_inputs(), recorded.num_aux()), (2, 3));
        // The zero coefficient is not a term; the table holds ONE, 2 and 3.
        assert_eq!(recorded.coefficients.len(), 3);
        for value in [1, 5, 12345] {
            assert_same(&recorded, value);
        }
        // `unused` is in no density; `one` and `p` are in B's.
        assert_eq!(recorded.b_input_density.total(), 2);
        assert_eq!(recorded.a_aux_density.total(), 1);
    }
}
