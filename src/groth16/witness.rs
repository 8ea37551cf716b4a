//! A circuit's witness alone ([`WitnessAssignment`]) and the constraints' evaluations computed
//! from its recorded shape ([`CircuitShape::evaluate`]): the synthesis of a proof made from a
//! shape (`shape.rs`).

use super::assignment::ProvingAssignment;
use super::circuit::AnyCircuit;
use super::shape::{CircuitShape, Matrix, INPUT};
use crate::multicore;
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use bellpepper_core_02 as v02;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Rows evaluated per parallel task.
const ROWS_PER_TASK: usize = 1 << 12;

impl CircuitShape {
    /// The assignment full synthesis gives for `witness`: each constraint's `A`, `B` and `C`
    /// evaluated on all cores (then the input constraints `input * 0 = 0`), each checked in the
    /// same pass, and the shape's densities. A witness of other counts than the shape's is an
    /// error; an unsatisfied constraint is [`SynthesisError::Unsatisfiable`], its index logged.
    pub(super) fn evaluate(
        &self,
        witness: WitnessAssignment,
        domain: usize,
    ) -> Result<ProvingAssignment, SynthesisError> {
        let WitnessAssignment { inputs, aux } = witness;
        for (what, recorded, got) in [
            ("inputs", self.num_inputs, inputs.len()),
            ("auxiliary variables", self.num_aux, aux.len()),
        ] {
            if recorded != got {
                return Err(SynthesisError::IncompatibleLengthVector(format!(
                    "the circuit allocated {got} {what} but its recorded shape has {recorded}: \
                     a shape of another circuit?"
                )));
            }
        }
        let rows = self.num_constraints() + inputs.len();
        let n = self.num_constraints();
        let value = |(var, coeff): (u32, u32)| -> Scalar {
            let v = if var & INPUT != 0 {
                inputs[(var & !INPUT) as usize]
            } else {
                aux[var as usize]
            };
            if coeff == 0 {
                v
            } else {
                v * self.coefficients[coeff as usize]
            }
        };
        // Row `i` of `m`; past the constraints, the input constraints `input * 0 = 0`.
        let row = |m: &Matrix, i: usize, input_row: fn(Scalar) -> Scalar| -> Scalar {
            if i < n {
                m.row(i)
                    .iter()
                    .fold(Scalar::ZERO, |acc, &term| acc + value(term))
            } else {
                input_row(inputs[i - n])
            }
        };
        // Each vector is written where it lies, by all cores, one matrix at a time: made empty
        // and then filled, 2^24 rows spent most of their time writing 1.5 GiB of zeros on one
        // thread. The capacity leaves room for the FFTs' domain.
        let capacity = rows.max(domain);
        let evaluated = |m: &Matrix, input_row: fn(Scalar) -> Scalar| -> Vec<Scalar> {
            let mut v = Vec::with_capacity(capacity);
            v.par_extend(
                (0..rows)
                    .into_par_iter()
                    .with_min_len(ROWS_PER_TASK)
                    .map(|i| row(m, i, input_row)),
            );
            v
        };
        let (a, b, c) = multicore::install(|| {
            (
                evaluated(&self.a, |input| input),
                evaluated(&self.b, |_| Scalar::ZERO),
                evaluated(&self.c, |_| Scalar::ZERO),
            )
        });
        let bad = multicore::install(|| {
            (0..rows)
                .into_par_iter()
                .with_min_len(ROWS_PER_TASK)
                .find_first(|&i| a[i] * b[i] != c[i])
        });
        if let Some(i) = bad {
            log::warn!("constraint {i} of {rows} is not satisfied by the witness");
            return Err(SynthesisError::Unsatisfiable);
        }
        Ok(ProvingAssignment {
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
            a,
            b,
            c,
            input_assignment: inputs,
            aux_assignment: aux,
            ..ProvingAssignment::default()
        })
    }
}

/// A circuit's witness only: the constraint system of proofs from a [`CircuitShape`]. It tells
/// gadgets it is a witness generator, calls every value closure and none of the `enforce` ones.
#[derive(Debug, Default)]
pub(super) struct WitnessAssignment {
    pub(super) inputs: Vec<Scalar>,
    pub(super) aux: Vec<Scalar>,
}

impl WitnessAssignment {
    /// The witness of `circuit`, sized for `shape`, the constant `one` first.
    pub(super) fn of<C: AnyCircuit>(
        circuit: C,
        shape: &CircuitShape,
    ) -> Result<WitnessAssignment, SynthesisError> {
        let mut cs = WitnessAssignment {
            inputs: Vec::with_capacity(shape.num_inputs.min(1 << 28)),
            aux: Vec::with_capacity(shape.num_aux.min(1 << 28)),
        };
        // The witness is written on one thread; its memory is first touched here on all cores,
        // so that thread does not also take a page fault every 128 values.
        multicore::install(|| {
            cs.aux
                .par_extend(rayon::iter::repeat_n(Scalar::ZERO, cs.aux.capacity()))
        });
        cs.aux.clear();
        cs.inputs.push(Scalar::ONE);
        circuit.synthesize_into(&mut cs)?;
        Ok(cs)
    }

    fn empty(v: &mut Vec<Scalar>, n: usize) -> &mut [Scalar] {
        let start = v.len();
        v.resize(start + n, Scalar::ZERO);
        &mut v[start..]
    }
}

impl ConstraintSystem<Scalar> for WitnessAssignment {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
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

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let aux_start = self.aux.len();
        let inputs_start = self.inputs.len();
        self.aux.resize(aux_start + aux_n, Scalar::ZERO);
        self.inputs.resize(inputs_start + inputs_n, Scalar::ZERO);
        (&mut self.aux[aux_start..], &mut self.inputs[inputs_start..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        Self::empty(&mut self.inputs, n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        Self::empty(&mut self.aux, n)
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}

/// bellpepper-core 0.2's trait (bellperson 0.27's circuits and gadgets): the same witness.
impl v02::ConstraintSystem<Scalar> for WitnessAssignment {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<v02::Variable, v02::SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, v02::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(v02::Variable::new_unchecked(v02::Index::Aux(
            self.aux.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<v02::Variable, v02::SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, v02::SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(v02::Variable::new_unchecked(v02::Index::Input(
            self.inputs.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(v02::LinearCombination<Scalar>) -> v02::LinearCombination<Scalar>,
        LB: FnOnce(v02::LinearCombination<Scalar>) -> v02::LinearCombination<Scalar>,
        LC: FnOnce(v02::LinearCombination<Scalar>) -> v02::LinearCombination<Scalar>,
    {
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

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        <Self as ConstraintSystem<Scalar>>::allocate_empty(self, aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        Self::empty(&mut self.inputs, n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        Self::empty(&mut self.aux, n)
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}
