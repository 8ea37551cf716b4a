//! A circuit's witness and its constraints' evaluations, recorded by running the circuit against
//! [`ProvingAssignment`], and the checks that the parameters fit it.

use super::circuit::{AnyCircuit, Record, Recording, Terms};
use super::shape::{CircuitShape, ShapeRecorder};
use crate::multicore;
use crate::multiexp::Density;
use bellpepper_core::{Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// The witness of one circuit and its constraints' evaluations.
#[derive(Default)]
pub(super) struct ProvingAssignment {
    /// Which auxiliary variables appear in `A` (inputs need none: see `enforce`).
    pub(super) a_aux_density: Density,
    pub(super) b_input_density: Density,
    pub(super) b_aux_density: Density,
    /// Each constraint's `A`, `B` and `C` evaluated at the witness.
    pub(super) a: Vec<Scalar>,
    pub(super) b: Vec<Scalar>,
    pub(super) c: Vec<Scalar>,
    /// The witness: inputs (the constant `one` first), then auxiliary variables.
    pub(super) input_assignment: Vec<Scalar>,
    pub(super) aux_assignment: Vec<Scalar>,
    /// Records the constraints as they are evaluated, when the caller wants the circuit's shape.
    pub(super) recorder: Option<Box<ShapeRecorder>>,
}

/// The sizes the parameters promise, reserved before synthesis: vectors grown by doubling would be
/// copied several times for a 2^20-constraint witness, and the quotient would then grow the
/// evaluations once more to the domain's size. Reserving saves the copies and the doubled
/// capacity (synthesis time itself is the same at 2^18 on a 2-core Xeon).
pub(super) struct AssignmentSize {
    /// The evaluation domain (at least the constraints).
    pub(super) domain: usize,
    pub(super) inputs: usize,
    pub(super) aux: usize,
}

impl ProvingAssignment {
    fn with_capacity(size: &AssignmentSize) -> ProvingAssignment {
        // Parameters for another circuit are caught after synthesis; a capacity that is wrong
        // only costs memory, bounded here in case the parameters are nonsense.
        let cap = |n: usize| n.min(1 << 28);
        ProvingAssignment {
            a: Vec::with_capacity(cap(size.domain)),
            b: Vec::with_capacity(cap(size.domain)),
            c: Vec::with_capacity(cap(size.domain)),
            input_assignment: Vec::with_capacity(cap(size.inputs)),
            aux_assignment: Vec::with_capacity(cap(size.aux)),
            ..ProvingAssignment::default()
        }
    }
}

/// Evaluates `lc`, marking the variables with non-zero coefficients in the density trackers.
fn eval(
    lc: &impl Terms,
    input_density: Option<&mut Density>,
    aux_density: Option<&mut Density>,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = None;
    add_terms(&mut acc, lc.input_terms(), inputs, input_density);
    add_terms(&mut acc, lc.aux_terms(), aux, aux_density);
    acc.unwrap_or(Scalar::ZERO)
}

/// Adds `coeff * values[i]` over `terms` to `acc`, marking each `i` in `density`. One accumulator
/// for both kinds of terms, inlined into `eval`: two sums added afterwards made synthesis a fifth
/// slower (docs/BENCHMARKS.md, "Tried and not kept"). The first term is taken as it is rather
/// than added to zero: most linear combinations have one term, and that addition (blst's, through
/// memory) cost 6-8% of a full synthesis (squares, 2^19 and 2^20, 2-core Xeon).
#[inline(always)]
fn add_terms<'a>(
    acc: &mut Option<Scalar>,
    terms: impl Iterator<Item = (usize, &'a Scalar)>,
    values: &[Scalar],
    mut density: Option<&mut Density>,
) {
    for (i, coeff) in terms {
        // Plain comparisons: the constant-time `is_zero` cost a tenth of synthesis, and the
        // coefficients are the circuit's, not secrets.
        if *coeff == Scalar::ZERO {
            continue;
        }
        if let Some(d) = density.as_deref_mut() {
            d.inc(i);
        }
        // A variable index from another constraint system reads as zero: the proof then fails
        // the prover's check (an error) rather than the prover panicking here.
        let value = values.get(i).copied().unwrap_or(Scalar::ZERO);
        let term = if *coeff == Scalar::ONE {
            value
        } else {
            value * coeff
        };
        *acc = Some(match *acc {
            Some(sum) => sum + term,
            None => term,
        });
    }
}

impl ProvingAssignment {
    #[inline]
    fn push_aux(&mut self, value: Scalar) -> usize {
        self.aux_assignment.push(value);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        self.aux_assignment.len() - 1
    }

    #[inline]
    fn push_input(&mut self, value: Scalar) -> usize {
        self.input_assignment.push(value);
        self.b_input_density.add_element();
        self.input_assignment.len() - 1
    }

    /// Records one constraint `a * b = c` by its three evaluations.
    #[inline]
    fn push_constraint<T: Terms>(&mut self, a_lc: &T, b_lc: &T, c_lc: &T) {
        let (a, b, c) = (a_lc, b_lc, c_lc);
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        // Inputs need no density in A: the `input * 0 = 0` constraints make that query dense.
        let a = eval(a, None, Some(&mut self.a_aux_density), inputs, aux);
        let b = eval(
            b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            inputs,
            aux,
        );
        let c = eval(c, None, None, inputs, aux);
        if let Some(recorder) = self.recorder.as_deref_mut() {
            recorder.push(a_lc, b_lc, c_lc);
        }
        self.a.push(a);
        self.b.push(b);
        self.c.push(c);
    }
}

impl Record for ProvingAssignment {
    #[inline]
    fn aux(
        &mut self,
        value: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError> {
        Ok(self.push_aux(value()?))
    }

    #[inline]
    fn input(
        &mut self,
        value: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError> {
        Ok(self.push_input(value()?))
    }

    #[inline]
    fn constraint<T: Terms>(&mut self, a: &T, b: &T, c: &T) {
        self.push_constraint(a, b, c);
    }
}

/// Runs the circuit with its witness and adds the input constraints, as the generator does.
pub(super) fn synthesize<C: AnyCircuit>(
    circuit: C,
    size: &AssignmentSize,
) -> Result<ProvingAssignment, SynthesisError> {
    synthesize_with(circuit, size, false).map(|(cs, _)| cs)
}

/// [`synthesize`], and the circuit's shape recorded on the way (the first proof of a batch).
pub(super) fn synthesize_recording<C: AnyCircuit>(
    circuit: C,
    size: &AssignmentSize,
) -> Result<(ProvingAssignment, CircuitShape), SynthesisError> {
    let (cs, shape) = synthesize_with(circuit, size, true)?;
    let shape = shape.ok_or(SynthesisError::AssignmentMissing)??;
    Ok((cs, shape))
}

type Recorded = Option<Result<CircuitShape, SynthesisError>>;

fn synthesize_with<C: AnyCircuit>(
    circuit: C,
    size: &AssignmentSize,
    record: bool,
) -> Result<(ProvingAssignment, Recorded), SynthesisError> {
    let mut cs = ProvingAssignment::with_capacity(size);
    if record {
        cs.recorder = Some(Box::new(ShapeRecorder::with_rows(size.domain.min(1 << 28))));
    }
    cs.push_input(Scalar::ONE);
    circuit.synthesize_into(&mut Recording(&mut cs))?;
    // The input constraints are the prover's, not the circuit's: not recorded.
    let shape = cs
        .recorder
        .take()
        .map(|r| r.finish(cs.input_assignment.len(), cs.aux_assignment.len()));
    let zero = LinearCombination::zero;
    for i in 0..cs.input_assignment.len() {
        let input = zero() + Variable::new_unchecked(Index::Input(i));
        cs.push_constraint(&input, &zero(), &zero());
    }
    // A witness that breaks a constraint would give a proof that does not verify; say so now.
    let bad = multicore::install(|| {
        (0..cs.a.len())
            .into_par_iter()
            .find_first(|&i| cs.a[i] * cs.b[i] != cs.c[i])
    });
    if let Some(row) = bad {
        log::warn!(
            "constraint {row} of {} is not satisfied by the witness",
            cs.a.len()
        );
        return Err(SynthesisError::Unsatisfiable);
    }
    Ok((cs, shape))
}

pub(super) fn mismatch(what: &str, params: usize, circuit: usize) -> SynthesisError {
    SynthesisError::IncompatibleLengthVector(format!(
        "the parameters' {what} has {params} entries but this circuit needs {circuit}: \
         parameters for another circuit?"
    ))
}

pub(super) fn check_len(what: &str, params: usize, circuit: usize) -> Result<(), SynthesisError> {
    if params == circuit {
        Ok(())
    } else {
        Err(mismatch(what, params, circuit))
    }
}
