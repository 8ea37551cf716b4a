//! Proving: witness synthesis, the quotient polynomial, and five multiexps.
//!
//! With the witness `w` (inputs first, the constant `one` at index 0) and random `r`, `s`:
//!
//! ```text
//! A = alpha + sum_i w_i A_i(tau) + r delta                      (G1)
//! B = beta  + sum_i w_i B_i(tau) + s delta                      (G2, and G1 for C)
//! C = sum_aux w_i L_i + sum_j h_j H_j + s A + r B - r s delta   (G1)
//! ```
//!
//! where `h` are the coefficients of `(A(x) B(x) - C(x)) / Z(x)` computed by FFTs in
//! [`crate::domain`]. The `A` and `B` queries store bases only for variables that appear in the
//! respective matrix, so the prover tracks which do ([`Density`]) and drops the other scalars.

use super::options::{Priority, ProofReport, ProveOptions};
use super::params::ParameterSource;
use super::proof::Proof;
use crate::curve::CurveAffine;
use crate::domain::QuotientSteps;
use crate::free::free_in_background;
use crate::multicore;
use crate::multiexp::{multiexp, scalar_reprs, Density, LengthMismatch, ScalarRepr};
use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::{G1Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// The witness of one circuit and its constraints' evaluations.
#[derive(Default)]
struct ProvingAssignment {
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
    input_assignment: Vec<Scalar>,
    aux_assignment: Vec<Scalar>,
}

/// The sizes the parameters promise, reserved before synthesis: grown by doubling, the vectors of
/// a 2^20-constraint witness were copied several times, and the quotient then grew the evaluations
/// once more to the domain's size (no difference in synthesis time measurable at 2^18 on the
/// 2-core development machine; it saves the copies and the doubled capacity).
struct AssignmentSize {
    /// The evaluation domain (at least the constraints).
    domain: usize,
    inputs: usize,
    aux: usize,
}

impl AssignmentSize {
    fn of<P: ParameterSource>(params: &P) -> AssignmentSize {
        AssignmentSize {
            domain: params.h().len() + 1,
            inputs: params.vk().ic.len(),
            aux: params.l().len(),
        }
    }
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
    lc: &LinearCombination<Scalar>,
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
    inputs: &[Scalar],
    aux: &[Scalar],
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (var, coeff) in lc.iter() {
        // Plain comparisons: the constant-time `is_zero` cost a tenth of synthesis, and the
        // coefficients are the circuit's, not secrets.
        if *coeff == Scalar::ZERO {
            continue;
        }
        let value = match var.get_unchecked() {
            Index::Input(i) => {
                if let Some(d) = input_density.as_deref_mut() {
                    d.inc(i);
                }
                inputs.get(i)
            }
            Index::Aux(i) => {
                if let Some(d) = aux_density.as_deref_mut() {
                    d.inc(i);
                }
                aux.get(i)
            }
        };
        // A variable index from another constraint system reads as zero; the proof then fails
        // to verify rather than the prover panicking.
        let value = value.copied().unwrap_or(Scalar::ZERO);
        acc += if *coeff == Scalar::ONE {
            value
        } else {
            value * coeff
        };
    }
    acc
}

impl ConstraintSystem<Scalar> for ProvingAssignment {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux_assignment.push(f()?);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable::new_unchecked(Index::Aux(
            self.aux_assignment.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.add_element();
        Ok(Variable::new_unchecked(Index::Input(
            self.input_assignment.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        let (inputs, aux) = (&self.input_assignment, &self.aux_assignment);
        // Inputs need no density in A: the `input * 0 = 0` constraints make that query dense.
        let a = eval(&a, None, Some(&mut self.a_aux_density), inputs, aux);
        let b = eval(
            &b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            inputs,
            aux,
        );
        let c = eval(&c, None, None, inputs, aux);
        self.a.push(a);
        self.b.push(b);
        self.c.push(c);
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

/// Runs the circuit with its witness and adds the input constraints, as the generator does.
fn synthesize<C: Circuit<Scalar>>(
    circuit: C,
    size: &AssignmentSize,
) -> Result<ProvingAssignment, SynthesisError> {
    let mut cs = ProvingAssignment::with_capacity(size);
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.input_assignment.len() {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
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
    Ok(cs)
}

fn mismatch(what: &str, params: usize, circuit: usize) -> SynthesisError {
    SynthesisError::IncompatibleLengthVector(format!(
        "the parameters' {what} has {params} entries but this circuit needs {circuit}: \
         parameters for another circuit?"
    ))
}

fn check_len(what: &str, params: usize, circuit: usize) -> Result<(), SynthesisError> {
    if params == circuit {
        Ok(())
    } else {
        Err(mismatch(what, params, circuit))
    }
}

/// How long a put-off quotient waits for a device, per value: about a third of the CPU's time for
/// it on the 16 cores of the H200 host (23 s at 2^24, 1.4 us per value), so waiting for a device
/// held by short higher-priority proofs beats the CPU, and a device that stays busy costs at most
/// a third more than going to the CPU at once.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
const QUOTIENT_WAIT_PER_VALUE: Duration = Duration::from_nanos(500);
/// Sleep between tries for that device (one try is a few system calls).
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
const QUOTIENT_RETRY_SLEEP: Duration = Duration::from_millis(4);

/// The quotient polynomial's coefficients (as the H multiexp reads them), or the evaluations it
/// is made from when it was put off ([`Work::quotient_or_defer`]).
enum Quotient {
    Done(Vec<ScalarRepr>),
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    Deferred(QuotientSteps),
}

/// Where one proof's FFTs and multiexps run: through its GPU claim (devices and the CPU, under
/// the lock protocol) when the `gpu` feature has devices, else on the CPU.
struct Work {
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    chunk_terms: usize,
    /// Multiexps computed whole on the CPU (no claim).
    cpu_multiexps: u64,
    /// A higher priority interrupted the quotient on a device and it was put off.
    quotient_deferred: bool,
    /// Steps of a put-off quotient done on a device (of 4: three inputs moved to the coset, and
    /// the rest).
    quotient_steps_on_gpu: u64,
    /// Of those, steps of the first try kept when it was interrupted.
    quotient_first_try_steps: u64,
    /// Whether the quotient's first try on a device goes in steps
    /// ([`ProveOptions::stepped_quotient_from`]).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    stepped_first_try: bool,
    /// When the work began (the debug log places each multiexp from here, so that the time
    /// between them shows).
    begun: Instant,
    #[cfg(feature = "gpu")]
    claim: Option<crate::gpu::scheduler::GpuClaim>,
}

impl Work {
    /// The work of a proof whose quotient domain has `domain_size` values.
    fn new(options: &ProveOptions, domain_size: usize) -> Work {
        #[cfg(not(feature = "gpu"))]
        let _ = options.use_gpu;
        Work {
            chunk_terms: options.chunk_terms,
            cpu_multiexps: 0,
            quotient_deferred: false,
            quotient_steps_on_gpu: 0,
            quotient_first_try_steps: 0,
            stepped_first_try: options.priority == Priority::Low
                && domain_size >= options.stepped_quotient_from,
            begun: Instant::now(),
            #[cfg(feature = "gpu")]
            claim: if options.use_gpu {
                crate::gpu::scheduler::GpuClaim::new(options.priority, options.devices.as_deref())
            } else {
                None
            },
        }
    }

    /// The quotient put off by [`Work::quotient_or_defer`]: on a device, waiting for one while
    /// other provers hold them (retried when preempted again) for up to
    /// [`QUOTIENT_WAIT_PER_VALUE`] per value, else on the CPU. It goes in steps whose results are
    /// kept ([`QuotientSteps`]): a device taken away again loses only the step it was in, so the
    /// quotient moves on in the short stretches a busy device leaves, and the CPU goes on from
    /// the last finished step.
    #[cfg_attr(not(feature = "gpu"), allow(unused_mut))]
    fn deferred_quotient(
        &mut self,
        mut steps: QuotientSteps,
    ) -> Result<Vec<ScalarRepr>, SynthesisError> {
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim.as_mut() {
            use crate::gpu::scheduler::QuotientOnGpu;
            let most = Duration::from_nanos(
                QUOTIENT_WAIT_PER_VALUE.as_nanos() as u64 * steps.values().max(1) as u64,
            );
            let started = Instant::now();
            loop {
                let before = steps.steps_done();
                let result = claim.quotient_steps(&mut steps);
                // Inputs a device moved to the coset, and the last step if it finished.
                self.quotient_steps_on_gpu += steps.steps_done().saturating_sub(before) as u64;
                match result {
                    QuotientOnGpu::Done(h) => {
                        self.quotient_steps_on_gpu += 1;
                        free_in_background(steps);
                        return Ok(h);
                    }
                    QuotientOnGpu::Preempted | QuotientOnGpu::Busy if started.elapsed() < most => {
                        std::thread::sleep(QUOTIENT_RETRY_SLEEP);
                    }
                    QuotientOnGpu::Preempted | QuotientOnGpu::Busy => {
                        log::info!(
                            "prove: no device for the quotient within {most:.2?}; finishing it on \
                             the CPU from step {} of 4",
                            steps.steps_done()
                        );
                        break;
                    }
                    QuotientOnGpu::NotThere => break,
                }
            }
        }
        steps.finish_on_cpu().map(canonical)
    }

    /// The quotient on a device, else on the CPU; but a quotient that a higher priority
    /// interrupts on the device comes back [`Quotient::Deferred`] instead of going to the CPU. The CPU's
    /// FFTs are an order of magnitude slower than the device's (23 s against 1.5 s at 2^24
    /// constraints on the H200 host), so the prover does its other multiexps first (on the CPU,
    /// and on the device again once the higher proof is done) and then offers the quotient to
    /// the device again.
    fn quotient_or_defer(
        &mut self,
        a: Vec<Scalar>,
        b: Vec<Scalar>,
        c: Vec<Scalar>,
    ) -> Result<Quotient, SynthesisError> {
        #[cfg(feature = "gpu")]
        if self.stepped_first_try {
            if let Some(claim) = self.claim.as_mut() {
                use crate::gpu::scheduler::QuotientOnGpu;
                let mut steps = QuotientSteps::new(a, b, c);
                match claim.quotient_steps(&mut steps) {
                    QuotientOnGpu::Done(h) => {
                        free_in_background(steps);
                        return Ok(Quotient::Done(h));
                    }
                    QuotientOnGpu::Preempted => {
                        let kept = steps.steps_done() as u64;
                        log::info!(
                            "prove: quotient interrupted by a higher priority after {kept} of its \
                             4 steps (kept); the other multiexps first, then the rest"
                        );
                        self.quotient_deferred = true;
                        self.quotient_first_try_steps = kept;
                        self.quotient_steps_on_gpu += kept;
                        return Ok(Quotient::Deferred(steps));
                    }
                    QuotientOnGpu::Busy | QuotientOnGpu::NotThere => {
                        return steps.finish_on_cpu().map(|h| Quotient::Done(canonical(h)))
                    }
                }
            }
        }
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim.as_mut() {
            use crate::gpu::scheduler::QuotientOnGpu;
            match claim.quotient(&a, &b, &c) {
                QuotientOnGpu::Done(h) => {
                    // The inputs (96 bytes a value) are freed off the path to the H multiexp.
                    free_in_background((a, b, c));
                    return Ok(Quotient::Done(h));
                }
                QuotientOnGpu::Preempted => {
                    log::info!(
                        "prove: quotient interrupted by a higher priority; the other multiexps \
                         first, then the quotient again"
                    );
                    self.quotient_deferred = true;
                    return Ok(Quotient::Deferred(QuotientSteps::new(a, b, c)));
                }
                QuotientOnGpu::Busy | QuotientOnGpu::NotThere => {}
            }
        }
        crate::domain::quotient(a, b, c).map(|h| Quotient::Done(canonical(h)))
    }

    fn msm<G: CurveAffine>(
        &mut self,
        bases: &[G],
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G::Curve, SynthesisError> {
        if bases.len() != scalars.len() {
            return Err(mismatch(what, bases.len(), scalars.len()));
        }
        let started = Instant::now();
        let sum = self.msm_any(bases, scalars, what);
        log::debug!(
            "prove: {what} multiexp of {} terms in {:.2?} (from {:.2?} to {:.2?})",
            bases.len(),
            started.elapsed(),
            started - self.begun,
            self.begun.elapsed()
        );
        sum
    }

    fn msm_any<G: CurveAffine>(
        &mut self,
        bases: &[G],
        scalars: &[ScalarRepr],
        what: &str,
    ) -> Result<G::Curve, SynthesisError> {
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim.as_mut() {
            return Ok(G::scheduled_multiexp(
                claim,
                bases,
                scalars,
                self.chunk_terms,
            ));
        }
        self.cpu_multiexps += 1;
        multiexp(bases, scalars).map_err(|e: LengthMismatch| mismatch(what, e.bases, e.scalars))
    }

    /// Releases the devices and adds the counters to `report`.
    fn finish(self, report: &mut ProofReport) {
        report.cpu_chunks += self.cpu_multiexps;
        report.total_chunks += self.cpu_multiexps;
        report.quotient_deferred |= self.quotient_deferred;
        report.quotient_steps_on_gpu += self.quotient_steps_on_gpu;
        report.quotient_first_try_steps += self.quotient_first_try_steps;
        #[cfg(feature = "gpu")]
        if let Some(claim) = self.claim {
            claim.finish(report);
        }
    }
}

/// The quotient's coefficients from the CPU as the H multiexp reads them (a device hands them
/// over in that form already: `gpu::QuotientValue`).
fn canonical(h: Vec<Scalar>) -> Vec<ScalarRepr> {
    let scalars = scalar_reprs(&h);
    free_in_background(h);
    scalars
}

/// Runs `f`, the making of a multiexp's scalars: with the `gpu` feature on the pool of the CPU's
/// share of this proof's multiexps beside running devices (`scheduler::cpu_pool`: the
/// lower-priority one at the lowest level), which leaves the transfers' fill threads their cores;
/// without, on the crate's pool.
fn making_scalars<R: Send>(priority: Priority, f: impl FnOnce() -> R + Send) -> R {
    #[cfg(feature = "gpu")]
    return multicore::install_on(crate::gpu::scheduler::cpu_pool(priority, true), f);
    #[cfg(not(feature = "gpu"))]
    {
        let _ = priority;
        multicore::install(f)
    }
}

/// Runs `multiexp` here and `next` (the next multiexp's scalars, [`making_scalars`]) on a thread
/// beside it, so that the device does not wait for them; without a thread, `next` runs after.
/// (`Copy`: it borrows what it reads, so a spawn that fails and drops it loses nothing.)
fn with_next_scalars<M, N: Send>(
    priority: Priority,
    multiexp: impl FnOnce() -> M,
    next: impl FnOnce() -> N + Send + Copy,
) -> (M, N) {
    std::thread::scope(|scope| {
        let beside = std::thread::Builder::new()
            .name("groth16-scalars".into())
            .spawn_scoped(scope, move || making_scalars(priority, next))
            .ok();
        let sum = multiexp();
        let scalars = match beside {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => making_scalars(priority, next),
        };
        (sum, scalars)
    })
}

/// Proves one synthesized circuit with blinding factors `r`, `s`.
fn prove<P: ParameterSource + Sync>(
    cs: ProvingAssignment,
    params: &P,
    r: Scalar,
    s: Scalar,
    options: &ProveOptions,
    report: &mut ProofReport,
) -> Result<Proof, SynthesisError> {
    let start = Instant::now();
    let vk = params.vk();
    let num_inputs = cs.input_assignment.len();
    check_len("verifying key (ic)", vk.ic.len(), num_inputs)?;
    check_len("L query", params.l().len(), cs.aux_assignment.len())?;
    let domain_size = cs.a.len().next_power_of_two();
    check_len("H query", params.h().len() + 1, domain_size)?;
    check_len(
        "A query",
        params.a().len(),
        num_inputs + cs.a_aux_density.total(),
    )?;
    let b_len = cs.b_input_density.total() + cs.b_aux_density.total();
    check_len("B query in G1", params.b_g1().len(), b_len)?;
    check_len("B query in G2", params.b_g2().len(), b_len)?;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(SynthesisError::UnexpectedIdentity);
    }

    // The devices are claimed after synthesis and the checks: a failing circuit never holds one.
    let mut work = Work::new(options, domain_size);
    let priority = options.priority;
    let ProvingAssignment {
        a_aux_density,
        b_input_density,
        b_aux_density,
        a: a_values,
        b: b_values,
        c: c_values,
        input_assignment,
        aux_assignment,
    } = cs;
    // Each multiexp's scalars are made beside the multiexp before it (the witness's beside the
    // H query), and each vector is freed once its last reader is done: a 2^20 proof's host memory
    // peaked at 1330 MiB (672 MiB of parameters) while all of them were made beside the quotient
    // (H200, fifteenth session). Made only after the multiexp before, they left the device idle
    // for 20-30 ms of a 2^20 proof (ninth session). Vectors are freed on other threads: 32 MiB
    // took milliseconds to hand back between two multiexps (tenth session), 512 MiB at 2^24 tens
    // of milliseconds.
    let witness = || {
        (
            scalar_reprs(&input_assignment),
            scalar_reprs(&aux_assignment),
        )
    };
    let h_query = |work: &mut Work, scalars: Vec<ScalarRepr>| {
        log::debug!("prove: quotient polynomial at {:.2?}", start.elapsed());
        let sum = work.msm(params.h(), &scalars, "H query");
        free_in_background(scalars);
        sum
    };
    let mut h = G1Projective::identity();
    let mut deferred = None;
    // A quotient whose first try goes in steps (a low priority's large one) is the one likely to
    // be interrupted and put off: its witness is made beside it, so that a put-off quotient's L
    // multiexp need not wait for it (2^24 values to convert at 2^24 constraints). Elsewhere it is made beside
    // the H multiexp, which keeps it out of the quotient's peak of host memory.
    let (quotient, early) = if work.stepped_first_try {
        let (quotient, made) = with_next_scalars(
            priority,
            || work.quotient_or_defer(a_values, b_values, c_values),
            witness,
        );
        (quotient?, Some(made))
    } else {
        (work.quotient_or_defer(a_values, b_values, c_values)?, None)
    };
    let (inputs, aux) = match (quotient, early) {
        (Quotient::Done(coefficients), Some(made)) => {
            h = h_query(&mut work, coefficients)?;
            made
        }
        (Quotient::Done(coefficients), None) => {
            let (sum, made) =
                with_next_scalars(priority, || h_query(&mut work, coefficients), witness);
            h = sum?;
            made
        }
        (Quotient::Deferred(steps), early) => {
            deferred = Some(steps);
            early.unwrap_or_else(|| making_scalars(priority, witness))
        }
    };
    free_in_background((input_assignment, aux_assignment));
    let (l, a_scalars) = with_next_scalars(
        priority,
        || work.msm(params.l(), &aux, "L query"),
        || a_aux_density.select_after(&inputs, &aux),
    );
    let l = l?;
    let (a, b_scalars) = with_next_scalars(
        priority,
        || work.msm(params.a(), &a_scalars, "A query"),
        || b_aux_density.select_after(&b_input_density.select(&inputs), &aux),
    );
    free_in_background((inputs, aux, a_scalars));
    let a = a?;
    let b_g1 = work.msm(params.b_g1(), &b_scalars, "B query in G1")?;
    let b_g2 = work.msm(params.b_g2(), &b_scalars, "B query in G2")?;
    free_in_background(b_scalars);
    if let Some(steps) = deferred {
        let coefficients = work.deferred_quotient(steps)?;
        h = h_query(&mut work, coefficients)?;
    }
    work.finish(report);
    log::debug!("prove: multiexps done at {:.2?}", start.elapsed());

    let g_a = vk.delta_g1 * r + vk.alpha_g1 + a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + b_g2;
    let g_c = vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + a * s + b_g1 * r + h + l;
    Ok(Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    })
}

/// Proves `circuit` with the blinding factors `r` and `s`.
pub fn create_proof<C, P>(
    circuit: C,
    params: P,
    r: Scalar,
    s: Scalar,
) -> Result<Proof, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
{
    let mut proofs = create_proof_batch(vec![circuit], params, vec![r], vec![s])?;
    proofs.pop().ok_or(SynthesisError::AssignmentMissing)
}

/// Proves `circuit` with blinding factors drawn from `rng`.
pub fn create_random_proof<C, P, R>(
    circuit: C,
    params: P,
    rng: &mut R,
) -> Result<Proof, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
    R: RngCore,
{
    let r = Scalar::random(&mut *rng);
    let s = Scalar::random(&mut *rng);
    create_proof(circuit, params, r, s)
}

/// `count` random values of `r`, then `count` of `s`.
fn blinding_factors<R: RngCore>(count: usize, rng: &mut R) -> (Vec<Scalar>, Vec<Scalar>) {
    let mut draw = || -> Vec<Scalar> { (0..count).map(|_| Scalar::random(&mut *rng)).collect() };
    let r = draw();
    (r, draw())
}

/// Proves several circuits that share `params`, each with blinding factors drawn from `rng`.
pub fn create_random_proof_batch<C, P, R>(
    circuits: Vec<C>,
    params: P,
    rng: &mut R,
) -> Result<Vec<Proof>, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
    R: RngCore,
{
    let (r, s) = blinding_factors(circuits.len(), rng);
    create_proof_batch(circuits, params, r, s)
}

/// Proves several circuits that share `params`, circuit `i` with blinding factors `r[i]`, `s[i]`.
///
/// The witnesses are synthesized in parallel; the proofs are then made one after another, each
/// using every thread for its FFTs and multiexps.
pub fn create_proof_batch<C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
) -> Result<Vec<Proof>, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
{
    let options = ProveOptions::default();
    let proofs = create_proof_batch_with_options(circuits, params, r, s, &options)?;
    Ok(proofs.into_iter().map(|(p, _)| p).collect())
}

/// [`create_proof_batch`] with `options` (priority, GPU use), returning beside each proof the
/// report of where its work ran.
pub fn create_proof_batch_with_options<C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
    options: &ProveOptions,
) -> Result<Vec<(Proof, ProofReport)>, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
{
    if r.len() != circuits.len() || s.len() != circuits.len() {
        return Err(SynthesisError::IncompatibleLengthVector(format!(
            "{} circuits but {} values of r and {} of s",
            circuits.len(),
            r.len(),
            s.len()
        )));
    }
    let start = Instant::now();
    #[cfg(feature = "gpu")]
    if options.use_gpu {
        crate::gpu::backend::ready_in_background();
    }
    let count = circuits.len();
    let size = AssignmentSize::of(&params);
    let assignments: Vec<ProvingAssignment> = multicore::install(|| {
        circuits
            .into_par_iter()
            .map(|circuit| synthesize(circuit, &size))
            .collect::<Result<_, _>>()
    })?;
    let synthesis = start.elapsed();
    if let Some(cs) = assignments.first() {
        log::info!(
            "prove: {count} witness(es) of {} constraints synthesized in {synthesis:.2?}",
            cs.a.len(),
        );
    }
    let proofs = assignments
        .into_iter()
        .zip(r.into_iter().zip(s))
        .map(|(cs, (r, s))| {
            let mut report = ProofReport {
                priority: options.priority,
                synthesis,
                ..ProofReport::default()
            };
            // On the caller's thread, not as one job of the pool: a whole proof queued in the pool
            // can be stolen by a worker waiting inside another proof and then block that proof
            // until it ends. The parallel steps inside use the pool.
            let proof = prove(cs, &params, r, s, options, &mut report)?;
            report.total = start.elapsed();
            Ok((proof, report))
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    log::info!("prove: {count} proof(s) in {:.2?}", start.elapsed());
    Ok(proofs)
}

/// Proves `circuit` with the blinding factors `r` and `s` and `options`; returns the proof and
/// the report of where its work ran (chunks per device and on the CPU, preemptions, waits).
pub fn create_proof_with_options<C, P>(
    circuit: C,
    params: P,
    r: Scalar,
    s: Scalar,
    options: &ProveOptions,
) -> Result<(Proof, ProofReport), SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
{
    let mut proofs =
        create_proof_batch_with_options(vec![circuit], params, vec![r], vec![s], options)?;
    proofs.pop().ok_or(SynthesisError::AssignmentMissing)
}

/// [`create_proof_with_options`] with blinding factors drawn from `rng`.
pub fn create_random_proof_with_options<C, P, R>(
    circuit: C,
    params: P,
    rng: &mut R,
    options: &ProveOptions,
) -> Result<(Proof, ProofReport), SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
    R: RngCore,
{
    let r = Scalar::random(&mut *rng);
    let s = Scalar::random(&mut *rng);
    create_proof_with_options(circuit, params, r, s, options)
}

/// bellperson's name: [`create_proof`] at [`Priority::High`] when `priority` is true, else at
/// [`Priority::Normal`].
pub fn create_proof_in_priority<C, P>(
    circuit: C,
    params: P,
    r: Scalar,
    s: Scalar,
    priority: bool,
) -> Result<Proof, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
{
    let options = ProveOptions::with_priority(Priority::from_bool(priority));
    create_proof_with_options(circuit, params, r, s, &options).map(|(p, _)| p)
}

/// bellperson's name: [`create_random_proof`] at the priority `priority` maps to.
pub fn create_random_proof_in_priority<C, P, R>(
    circuit: C,
    params: P,
    rng: &mut R,
    priority: bool,
) -> Result<Proof, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
    R: RngCore,
{
    let options = ProveOptions::with_priority(Priority::from_bool(priority));
    create_random_proof_with_options(circuit, params, rng, &options).map(|(p, _)| p)
}

/// bellperson's name: [`create_proof_batch`] at the priority `priority` maps to.
pub fn create_proof_batch_priority<C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
    priority: bool,
) -> Result<Vec<Proof>, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
{
    let options = ProveOptions::with_priority(Priority::from_bool(priority));
    let proofs = create_proof_batch_with_options(circuits, params, r, s, &options)?;
    Ok(proofs.into_iter().map(|(p, _)| p).collect())
}

/// bellperson's name: [`create_random_proof_batch`] at the priority `priority` maps to.
pub fn create_random_proof_batch_priority<C, P, R>(
    circuits: Vec<C>,
    params: P,
    rng: &mut R,
    priority: bool,
) -> Result<Vec<Proof>, SynthesisError>
where
    C: Circuit<Scalar> + Send,
    P: ParameterSource + Sync,
    R: RngCore,
{
    let (r, s) = blinding_factors(circuits.len(), rng);
    create_proof_batch_priority(circuits, params, r, s, priority)
}

#[cfg(test)]
mod tests {
    use super::{Priority, ProveOptions, Work};
    use crate::groth16::DEFAULT_STEPPED_QUOTIENT_FROM;

    #[test]
    fn only_a_low_proof_with_a_large_quotient_tries_it_in_steps_first() {
        let stepped = |priority, n| {
            let options = ProveOptions {
                use_gpu: false,
                ..ProveOptions::with_priority(priority)
            };
            Work::new(&options, n).stepped_first_try
        };
        let large = DEFAULT_STEPPED_QUOTIENT_FROM;
        assert!(stepped(Priority::Low, large));
        assert!(stepped(Priority::Low, 2 * large));
        assert!(!stepped(Priority::Low, large / 2));
        assert!(!stepped(Priority::Normal, large));
        assert!(!stepped(Priority::High, 2 * large));
    }
}
