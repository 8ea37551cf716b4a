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
        // Row `i < n` of `m`.
        let row = |m: &Matrix, i: usize| -> Scalar {
            let mut terms = m.row(i).iter();
            terms.next().map_or(Scalar::ZERO, |&first| {
                terms.fold(value(first), |acc, &term| acc + value(term))
            })
        };
        // The three vectors are made by all cores: zeros first (the page faults spread over the
        // cores), then one pass that evaluates each row in A, B and C and checks it, so that the
        // witness is read once and no vector is read back. The capacity leaves room for the
        // FFTs' domain.
        let capacity = rows.max(domain);
        let zeros = || {
            let mut v = Vec::with_capacity(capacity);
            v.par_extend(rayon::iter::repeat_n(Scalar::ZERO, rows));
            v
        };
        let (mut a, mut b, mut c) = multicore::install(|| (zeros(), zeros(), zeros()));
        let bad = multicore::install(|| {
            a.par_chunks_mut(ROWS_PER_TASK)
                .zip(b.par_chunks_mut(ROWS_PER_TASK))
                .zip(c.par_chunks_mut(ROWS_PER_TASK))
                .enumerate()
                .filter_map(|(task, ((a, b), c))| {
                    let mut first_bad = None;
                    for (j, ((a, b), c)) in a.iter_mut().zip(b).zip(c).enumerate() {
                        let i = task * ROWS_PER_TASK + j;
                        if i < n {
                            *a = row(&self.a, i);
                            *b = row(&self.b, i);
                            *c = row(&self.c, i);
                        } else {
                            // The input constraints `input * 0 = 0` past the circuit's own.
                            *a = inputs[i - n];
                        }
                        if first_bad.is_none() && *a * *b != *c {
                            first_bad = Some(i);
                        }
                    }
                    first_bad
                })
                .min()
        });
        if let Some(i) = bad {
            log::warn!("constraint {i} of {rows} is not satisfied by the witness");
            return Err(SynthesisError::Unsatisfiable);
        }
        Ok(ProvingAssignment {
            a_aux_density: self.a_aux_density.padded(self.num_aux),
            b_input_density: self.b_input_density.padded(self.num_inputs),
            b_aux_density: self.b_aux_density.padded(self.num_aux),
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
