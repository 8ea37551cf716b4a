//! Parameter generation (the trusted setup of one circuit).
//!
//! The circuit is synthesized without witnesses to collect its constraints. For a random `tau`,
//! each variable's QAP polynomials `A_i`, `B_i`, `C_i` are evaluated at `tau` through the Lagrange
//! basis of the domain (an inverse FFT of the powers of `tau`), and the queries are the fixed-base
//! multiples of the two generators that the prover combines. The layout follows bellman so that
//! parameter files are interchangeable: `a`, `b_g1`, `b_g2` hold only the variables that appear in
//! `A` or `B` (points at infinity are dropped), and every auxiliary variable must be constrained.

use super::circuit::{unallocated_variable, AnyCircuit, Current, Record, Recording, Terms};
use super::params::{Parameters, VerifyingKey};
use crate::domain::EvaluationDomain;
use crate::fixed_base::FixedBaseTable;
use crate::multicore;
use bellpepper_core::{Circuit, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// How far a parameter generation has come, told to the callback of
/// [`generate_random_parameters_with_progress`] (a large setup takes minutes: about two at 2^24
/// constraints on a 16-core host). The points are most of the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetupProgress {
    /// The circuit was synthesized without a witness: its size.
    Synthesized {
        /// Constraints, the inputs' own included.
        constraints: usize,
        /// Public inputs, the constant one included.
        inputs: usize,
        /// Auxiliary (private) variables.
        aux: usize,
    },
    /// `done` of the `total` query points (G1 and G2) are computed; told after every 1024
    /// points or so, from the threads computing them, and once at `done == total`.
    Points {
        /// Points computed so far.
        done: u64,
        /// Points to compute in all.
        total: u64,
    },
}

/// A progress callback; [`generate_random_parameters`] passes one that ignores everything.
pub(crate) type Progress<'a> = &'a (dyn Fn(SetupProgress) + Sync);

/// One non-zero entry of a constraint matrix: `coeff` for `var` in constraint `row`.
struct Term {
    var: Index,
    row: usize,
    coeff: Scalar,
}

/// Collects the constraint matrices of a circuit; assigns no values.
#[derive(Default)]
struct KeypairAssembly {
    num_inputs: usize,
    num_aux: usize,
    num_constraints: usize,
    /// The entries of the A, B and C matrices.
    matrices: [Vec<Term>; 3],
}

impl KeypairAssembly {
    fn add_aux(&mut self) -> usize {
        self.num_aux += 1;
        self.num_aux - 1
    }

    fn add_input(&mut self) -> usize {
        self.num_inputs += 1;
        self.num_inputs - 1
    }

    /// Records the non-zero terms of one constraint `a * b = c`.
    fn add_constraint<T: Terms>(&mut self, a: &T, b: &T, c: &T) {
        let row = self.num_constraints;
        for (matrix, lc) in self.matrices.iter_mut().zip([a, b, c]) {
            // Zero coefficients are skipped, as the prover's density tracking skips them.
            let nonzero = |(_, coeff): &(usize, &Scalar)| !bool::from(coeff.is_zero());
            let inputs = lc.input_terms().filter(nonzero).map(|(i, coeff)| Term {
                var: Index::Input(i),
                row,
                coeff: *coeff,
            });
            matrix.extend(inputs);
            let aux = lc.aux_terms().filter(nonzero).map(|(i, coeff)| Term {
                var: Index::Aux(i),
                row,
                coeff: *coeff,
            });
            matrix.extend(aux);
        }
        self.num_constraints += 1;
    }
}

/// Parameter generation needs no values, so the assignment closures are not called.
impl Record for KeypairAssembly {
    fn aux(
        &mut self,
        _: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError> {
        Ok(self.add_aux())
    }

    fn input(
        &mut self,
        _: impl FnOnce() -> Result<Scalar, SynthesisError>,
    ) -> Result<usize, SynthesisError> {
        Ok(self.add_input())
    }

    fn constraint<T: Terms>(&mut self, a: &T, b: &T, c: &T) {
        self.add_constraint(a, b, c);
    }
}

/// `(inputs, aux)` evaluations `sum_row coeff * lagrange[row]` of one matrix's columns.
fn evaluate_columns(
    matrix: &[Term],
    lagrange: &[Scalar],
    num_inputs: usize,
    num_aux: usize,
) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut inputs = vec![Scalar::ZERO; num_inputs];
    let mut aux = vec![Scalar::ZERO; num_aux];
    for t in matrix {
        let v = lagrange[t.row] * t.coeff;
        match t.var {
            Index::Input(i) => inputs[i] += v,
            Index::Aux(i) => aux[i] += v,
        }
    }
    (inputs, aux)
}

/// Generates parameters for `circuit` with random toxic waste from `rng`.
pub fn generate_random_parameters<C, R>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters, SynthesisError>
where
    C: Circuit<Scalar>,
    R: RngCore,
{
    generate_random_parameters_with_progress(circuit, rng, &|_| {})
}

/// [`generate_random_parameters`], telling `progress` how far it has come (for a progress bar;
/// the `prover` example draws one with indicatif). `progress` is called from the threads doing
/// the work, so it must be quick and `Sync`.
///
/// ```
/// # use preemptible_groth16::{Circuit, ConstraintSystem, SynthesisError, Scalar};
/// use preemptible_groth16::groth16::{generate_random_parameters_with_progress, SetupProgress};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// # struct Square;
/// # impl Circuit<Scalar> for Square {
/// #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
/// #         let x = cs.alloc(|| "x", || Ok(Scalar::from(3u64)))?;
/// #         let y = cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
/// #         cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
/// #         Ok(())
/// #     }
/// # }
/// let points = AtomicU64::new(0);
/// let params = generate_random_parameters_with_progress(Square, &mut rand::thread_rng(), &|p| {
///     if let SetupProgress::Points { done, .. } = p {
///         points.fetch_max(done, Ordering::Relaxed);
///     }
/// })?;
/// assert!(points.into_inner() > 0);
/// # Ok::<(), SynthesisError>(())
/// ```
pub fn generate_random_parameters_with_progress<C, R>(
    circuit: C,
    rng: &mut R,
    progress: &(dyn Fn(SetupProgress) + Sync),
) -> Result<Parameters, SynthesisError>
where
    C: Circuit<Scalar>,
    R: RngCore,
{
    let g1 = G1Projective::random(&mut *rng);
    let g2 = G2Projective::random(&mut *rng);
    let alpha = Scalar::random(&mut *rng);
    let beta = Scalar::random(&mut *rng);
    let gamma = Scalar::random(&mut *rng);
    let delta = Scalar::random(&mut *rng);
    let tau = Scalar::random(&mut *rng);
    let toxic = Toxic::new(alpha, beta, gamma, delta, tau)?;
    generate(Current(circuit), g1, g2, &toxic, progress)
}

/// Generates parameters for `circuit` from the given generators and toxic waste.
///
/// Fails with [`SynthesisError::UnconstrainedVariable`] if an auxiliary variable appears in no
/// constraint, and with [`SynthesisError::UnexpectedIdentity`] if `gamma` or `delta` is zero.
#[allow(clippy::too_many_arguments)]
pub fn generate_parameters<C>(
    circuit: C,
    g1: G1Projective,
    g2: G2Projective,
    alpha: Scalar,
    beta: Scalar,
    gamma: Scalar,
    delta: Scalar,
    tau: Scalar,
) -> Result<Parameters, SynthesisError>
where
    C: Circuit<Scalar>,
{
    let toxic = Toxic::new(alpha, beta, gamma, delta, tau)?;
    generate(Current(circuit), g1, g2, &toxic, &|_| {})
}

/// [`generate_parameters`] for a circuit of either bellpepper-core version.
pub(crate) fn generate<C: AnyCircuit>(
    circuit: C,
    g1: G1Projective,
    g2: G2Projective,
    toxic: &Toxic,
    progress: Progress,
) -> Result<Parameters, SynthesisError> {
    let start = Instant::now();
    let mut cs = KeypairAssembly::default();
    cs.add_input();
    circuit.synthesize_into(&mut Recording(&mut cs))?;
    let allocated = |t: &Term| match t.var {
        Index::Input(i) => i < cs.num_inputs,
        Index::Aux(i) => i < cs.num_aux,
    };
    if !cs.matrices.iter().flatten().all(allocated) {
        return Err(unallocated_variable(cs.num_inputs, cs.num_aux));
    }
    // One constraint `input_i * 0 = 0` per input makes the input columns of A linearly
    // independent, which the soundness proof needs (and the IC query fully dense).
    let zero = LinearCombination::zero;
    for i in 0..cs.num_inputs {
        let input = zero() + Variable::new_unchecked(Index::Input(i));
        cs.add_constraint(&input, &zero(), &zero());
    }
    log::info!(
        "setup: {} constraints, {} inputs, {} aux variables synthesized in {:.2?}",
        cs.num_constraints,
        cs.num_inputs,
        cs.num_aux,
        start.elapsed()
    );
    progress(SetupProgress::Synthesized {
        constraints: cs.num_constraints,
        inputs: cs.num_inputs,
        aux: cs.num_aux,
    });
    let params = multicore::install(|| build(&cs, g1, g2, toxic, start, progress))?;
    log::info!("setup: done in {:.2?}", start.elapsed());
    Ok(params)
}

/// The secret values of a setup; whoever knows them can forge proofs.
#[derive(Clone, Copy)]
pub(crate) struct Toxic {
    alpha: Scalar,
    beta: Scalar,
    gamma: Scalar,
    delta: Scalar,
    gamma_inv: Scalar,
    delta_inv: Scalar,
    tau: Scalar,
}

impl Toxic {
    /// The values, with the inverses of `gamma` and `delta`; either being zero is an error.
    pub(crate) fn new(
        alpha: Scalar,
        beta: Scalar,
        gamma: Scalar,
        delta: Scalar,
        tau: Scalar,
    ) -> Result<Toxic, SynthesisError> {
        let inverse =
            |x: Scalar| Option::from(x.invert()).ok_or(SynthesisError::UnexpectedIdentity);
        Ok(Toxic {
            alpha,
            beta,
            gamma,
            delta,
            gamma_inv: inverse(gamma)?,
            delta_inv: inverse(delta)?,
            tau,
        })
    }
}

/// The queries from the collected matrices.
fn build(
    cs: &KeypairAssembly,
    g1: G1Projective,
    g2: G2Projective,
    toxic: &Toxic,
    start: Instant,
    progress: Progress,
) -> Result<Parameters, SynthesisError> {
    let Toxic {
        alpha,
        beta,
        gamma,
        delta,
        gamma_inv,
        delta_inv,
        tau,
    } = *toxic;
    let (ni, na) = (cs.num_inputs, cs.num_aux);

    // Powers of tau, then the Lagrange basis at tau by an inverse FFT.
    let mut domain = EvaluationDomain::from_coeffs(vec![Scalar::ZERO; cs.num_constraints])?;
    let n = domain.size();
    let mut power = Scalar::ONE;
    for p in domain.as_mut() {
        *p = power;
        power *= tau;
    }
    // h_i = tau^i * Z(tau) / delta for i < n - 1: the basis of the quotient H, of degree n - 2.
    let z_over_delta = domain.z(&tau) * delta_inv;
    let h_scalars: Vec<Scalar> = domain.as_ref()[..n - 1]
        .par_iter()
        .map(|p| *p * z_over_delta)
        .collect();
    domain.ifft();
    let lagrange = domain.into_coeffs();

    let mut columns: Vec<(Vec<Scalar>, Vec<Scalar>)> = cs
        .matrices
        .par_iter()
        .map(|m| evaluate_columns(m, &lagrange, ni, na))
        .collect();
    let (ct_in, ct_aux) = columns.pop().unwrap_or_default();
    let (bt_in, bt_aux) = columns.pop().unwrap_or_default();
    let (at_in, at_aux) = columns.pop().unwrap_or_default();

    // ext_i = (beta * A_i + alpha * B_i + C_i) / gamma for inputs, / delta for aux.
    let ext = |at: &[Scalar], bt: &[Scalar], ct: &[Scalar], inv: Scalar| -> Vec<Scalar> {
        (at, bt, ct)
            .into_par_iter()
            .map(|(a, b, c)| (beta * a + alpha * b + c) * inv)
            .collect()
    };
    let ic_scalars = ext(&at_in, &bt_in, &ct_in, gamma_inv);
    let l_scalars = ext(&at_aux, &bt_aux, &ct_aux, delta_inv);
    let a_scalars: Vec<Scalar> = at_in.into_iter().chain(at_aux).collect();
    let b_scalars: Vec<Scalar> = bt_in.into_iter().chain(bt_aux).collect();
    log::info!("setup: QAP evaluated at tau in {:.2?}", start.elapsed());

    let g1_count = h_scalars.len() + l_scalars.len() + ic_scalars.len() + 2 * a_scalars.len();
    let total = (g1_count + b_scalars.len()) as u64;
    let done = AtomicU64::new(0);
    let finished = |count: usize| {
        let done = done.fetch_add(count as u64, Ordering::Relaxed) + count as u64;
        progress(SetupProgress::Points { done, total });
    };
    let g1_table = FixedBaseTable::<G1Affine>::new(g1, g1_count);
    let g2_table = FixedBaseTable::<G2Affine>::new(g2, b_scalars.len());
    // The points are most of a large setup's time (about 125 s of 2^24 constraints on the H200
    // host): each query's end is logged, so that a long setup shows its progress.
    let made = |what: &str, count: usize| {
        log::info!(
            "setup: {what} query, {count} points, done at {:.2?}",
            start.elapsed()
        );
    };
    let h = g1_table.mul_all(&h_scalars, &finished);
    made("H", h.len());
    let ic = g1_table.mul_all(&ic_scalars, &finished);
    let l = g1_table.mul_all(&l_scalars, &finished);
    made("L", l.len());
    if l.iter().any(|p| bool::from(p.is_identity())) {
        return Err(SynthesisError::UnconstrainedVariable);
    }
    let not_identity = |p: &G1Affine| !bool::from(p.is_identity());
    let a: Vec<G1Affine> = g1_table
        .mul_all(&a_scalars, &finished)
        .into_iter()
        .filter(not_identity)
        .collect();
    made("A", a.len());
    let b_g1: Vec<G1Affine> = g1_table
        .mul_all(&b_scalars, &finished)
        .into_iter()
        .filter(not_identity)
        .collect();
    made("B in G1", b_g1.len());
    let b_g2: Vec<G2Affine> = g2_table
        .mul_all(&b_scalars, &finished)
        .into_iter()
        .filter(|p| !bool::from(p.is_identity()))
        .collect();
    log::info!(
        "setup: {} G1 and {} G2 points computed in {:.2?}",
        h.len() + ic.len() + l.len() + a.len() + b_g1.len(),
        b_g2.len(),
        start.elapsed()
    );

    let vk = VerifyingKey {
        alpha_g1: (g1 * alpha).to_affine(),
        beta_g1: (g1 * beta).to_affine(),
        beta_g2: (g2 * beta).to_affine(),
        gamma_g2: (g2 * gamma).to_affine(),
        delta_g1: (g1 * delta).to_affine(),
        delta_g2: (g2 * delta).to_affine(),
        ic,
    };
    Ok(Parameters {
        vk,
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}
