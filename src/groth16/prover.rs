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
//! respective matrix, so the prover tracks which do ([`Density`](crate::multiexp::Density)) and drops the other scalars.

use super::assignment::{
    check_len, synthesize, synthesize_recording, AssignmentSize, ProvingAssignment,
};
use super::circuit::{AnyCircuit, Current};
use super::params::{ParameterSource, VerifyingKey};
use super::proof::Proof;
use super::shape::CircuitShape;
use super::verifier::{prepare_verifying_key, verify_proof, PreparedVerifyingKey};
use super::witness::WitnessAssignment;
use crate::backend::{with_next_scalars, CpuBackend, ProofBackend, Quotient};
use crate::bases::Bases;
use crate::curve::CurveAffine;
use crate::domain::QuotientSteps;
use crate::free::free_in_background;
use crate::multiexp::{scalar_reprs, ScalarRepr};
use crate::options::{Priority, ProofReport, ProveOptions};
use bellpepper_core::{Circuit, SynthesisError};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group, UncompressedEncoding};
use rand_core::RngCore;
use std::time::{Duration, Instant};

/// The sums of a proof's five multiexps.
struct Sums {
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b_g1: G1Projective,
    b_g2: G2Projective,
}

/// Checks that `params` fit the synthesized `cs` (parameters for another circuit would give a
/// proof that does not verify, or index out of their queries); returns the quotient's domain size.
fn check_fit<P: ParameterSource>(
    cs: &ProvingAssignment,
    params: &P,
) -> Result<usize, SynthesisError> {
    let vk = params.vk();
    let num_inputs = cs.input_assignment.len();
    check_len("verifying key (ic)", vk.ic.len(), num_inputs)?;
    check_len("L query", params.l().len(), cs.aux_assignment.len())?;
    let domain_size = cs.a.len().next_power_of_two();
    check_len("H query", params.h().len(), domain_size - 1)?;
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
    Ok(domain_size)
}

/// The GPU backend of a batch: claimed at its first proof, after that proof's synthesis and
/// checks (a failing first circuit never holds a device), and kept to its end.
type BatchGpu = Option<crate::gpu::GpuBackend>;

/// Proves one synthesized circuit with blinding factors `r`, `s`, on the batch's GPU backend
/// (`gpu`, claimed here at the batch's first proof; `batch`: the batch has more than one) or,
/// without one, on the CPU.
#[allow(clippy::too_many_arguments)]
fn prove<P: ParameterSource + Sync>(
    cs: ProvingAssignment,
    params: &P,
    r: Scalar,
    s: Scalar,
    options: &ProveOptions,
    report: &mut ProofReport,
    gpu: &mut BatchGpu,
    batch: bool,
) -> Result<Proof, SynthesisError> {
    let start = Instant::now();
    let domain_size = check_fit(&cs, params)?;
    match gpu {
        Some(backend) => backend.next_proof(),
        None => *gpu = crate::gpu::GpuBackend::claim(options, domain_size, batch),
    }
    if let Some(backend) = gpu {
        return prove_on(backend, cs, params, (r, s), report, start);
    }
    prove_on(
        &mut CpuBackend::default(),
        cs,
        params,
        (r, s),
        report,
        start,
    )
}

/// [`prove`] on `backend`, which keeps what it holds for the batch's next proof.
fn prove_on<B: ProofBackend, P: ParameterSource + Sync>(
    backend: &mut B,
    cs: ProvingAssignment,
    params: &P,
    (r, s): (Scalar, Scalar),
    report: &mut ProofReport,
    start: Instant,
) -> Result<Proof, SynthesisError> {
    let sums = multiexps(cs, params, backend, start);
    backend.proof_done(report);
    let sums = sums?;
    log::debug!("prove: multiexps done at {:.2?}", start.elapsed());
    Ok(assemble(params.vk(), &sums, r, s))
}

/// One multiexp through `backend`, its lengths checked, its time logged.
fn msm<'a, G: CurveAffine + UncompressedEncoding, B: ProofBackend>(
    backend: &mut B,
    bases: Bases<'a, G>,
    scalars: &[ScalarRepr],
    what: &str,
    start: Instant,
    run: impl Fn(&mut B, Bases<'a, G>, &[ScalarRepr], &str) -> Result<G::Curve, SynthesisError>,
) -> Result<G::Curve, SynthesisError> {
    check_len(what, bases.len(), scalars.len())?;
    let started = Instant::now();
    let sum = run(backend, bases, scalars, what)?;
    log::debug!(
        "prove: {what} multiexp of {} terms in {:.2?} (from {:.2?} to {:.2?})",
        bases.len(),
        started.elapsed(),
        started - start,
        start.elapsed()
    );
    Ok(sum)
}

fn g1<B: ProofBackend>(
    backend: &mut B,
    bases: Bases<'_, blstrs::G1Affine>,
    scalars: &[ScalarRepr],
    what: &str,
    start: Instant,
) -> Result<G1Projective, SynthesisError> {
    msm(backend, bases, scalars, what, start, B::multiexp_g1)
}

/// The five multiexps of `cs` (its quotient first) through `work`.
///
/// Each multiexp's scalars are made beside the multiexp before it (the witness's beside the
/// H query), and each vector is freed once its last reader is done. Making all of them beside
/// the quotient instead raises a 2^20 proof's peak host memory to 1330 MiB (672 MiB of it
/// parameters); making each only after the multiexp before leaves the device idle for 20-30 ms
/// of a 2^20 proof. Vectors are freed on other threads: handing 32 MiB back takes milliseconds
/// between two multiexps, 512 MiB at 2^24 tens of milliseconds. (H200 host, 16 cores;
/// docs/BENCHMARKS.md.)
fn multiexps<B: ProofBackend, P: ParameterSource + Sync>(
    cs: ProvingAssignment,
    params: &P,
    backend: &mut B,
    start: Instant,
) -> Result<Sums, SynthesisError> {
    let ProvingAssignment {
        a_aux_density,
        b_input_density,
        b_aux_density,
        a: a_values,
        b: b_values,
        c: c_values,
        input_assignment,
        aux_assignment,
        ..
    } = cs;
    let witness = || {
        (
            scalar_reprs(&input_assignment),
            scalar_reprs(&aux_assignment),
        )
    };
    let quotient = QuotientFirst {
        values: (a_values, b_values, c_values),
        start,
    };
    let (h, deferred, (inputs, aux)) = quotient.run(params, backend, witness)?;
    free_in_background((input_assignment, aux_assignment));
    let pool = backend.scalar_pool();
    let (l, a_scalars) = with_next_scalars(
        pool,
        || g1(backend, params.l(), &aux, "L query", start),
        || a_aux_density.select_after(&inputs, &aux),
    );
    let l = l?;
    let (a, b_scalars) = with_next_scalars(
        pool,
        || g1(backend, params.a(), &a_scalars, "A query", start),
        || b_aux_density.select_after(&b_input_density.select(&inputs), &aux),
    );
    free_in_background((inputs, aux, a_scalars));
    let a = a?;
    let b_g1 = g1(backend, params.b_g1(), &b_scalars, "B query in G1", start)?;
    let b_g2 = msm(
        backend,
        params.b_g2(),
        &b_scalars,
        "B query in G2",
        start,
        B::multiexp_g2,
    )?;
    free_in_background(b_scalars);
    let h = match deferred {
        Some(steps) => {
            let coefficients = backend.deferred_quotient(steps)?;
            h_query(params, backend, coefficients, start)?
        }
        None => h,
    };
    Ok(Sums {
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

/// The witness's scalars, as the L and A multiexps read them (inputs, auxiliary variables).
type WitnessScalars = (Vec<ScalarRepr>, Vec<ScalarRepr>);

/// A proof's first step: the quotient from the constraints' evaluations `values` (A, B, C),
/// then the H multiexp, with the witness's scalars made beside one of them.
struct QuotientFirst {
    values: (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>),
    /// When the proof began (for the debug log).
    start: Instant,
}

impl QuotientFirst {
    /// The H multiexp's sum (the identity when the quotient was put off, which the second value
    /// then holds) and the witness's scalars.
    fn run<B: ProofBackend, P: ParameterSource + Sync>(
        self,
        params: &P,
        backend: &mut B,
        witness: impl FnOnce() -> WitnessScalars + Send + Copy,
    ) -> Result<(G1Projective, Option<QuotientSteps>, WitnessScalars), SynthesisError> {
        let QuotientFirst {
            values: (a, b, c),
            start,
        } = self;
        let pool = backend.scalar_pool();
        // A quotient whose first try goes in steps (a low priority's large one) is the one likely
        // to be interrupted and put off: its witness is made beside it, so that a put-off
        // quotient's L multiexp need not wait for it (2^24 values to convert at 2^24
        // constraints). Elsewhere it is made beside the H multiexp, which keeps it out of the
        // quotient's peak of host memory.
        let (quotient, early) = if backend.witness_beside_quotient() {
            let (quotient, made) = with_next_scalars(pool, || backend.quotient(a, b, c), witness);
            (quotient?, Some(made))
        } else {
            (backend.quotient(a, b, c)?, None)
        };
        Ok(match (quotient, early) {
            (Quotient::Done(coefficients), Some(made)) => {
                let h = h_query(params, backend, coefficients, start)?;
                (h, None, made)
            }
            (Quotient::Done(coefficients), None) => {
                let (h, made) = with_next_scalars(
                    pool,
                    || h_query(params, backend, coefficients, start),
                    witness,
                );
                (h?, None, made)
            }
            (Quotient::Deferred(steps), early) => {
                let made = early.unwrap_or_else(|| crate::multicore::install_on(pool, witness));
                (G1Projective::identity(), Some(steps), made)
            }
        })
    }
}

/// The H multiexp, from the quotient's coefficients (freed after it).
fn h_query<B: ProofBackend, P: ParameterSource>(
    params: &P,
    backend: &mut B,
    scalars: Vec<ScalarRepr>,
    start: Instant,
) -> Result<G1Projective, SynthesisError> {
    log::debug!("prove: quotient polynomial at {:.2?}", start.elapsed());
    let sum = g1(backend, params.h(), &scalars, "H query", start);
    free_in_background(scalars);
    sum
}

/// The proof from the multiexps' sums, the key, and the blinding factors.
fn assemble(vk: &VerifyingKey, sums: &Sums, r: Scalar, s: Scalar) -> Proof {
    let Sums {
        h,
        l,
        a,
        b_g1,
        b_g2,
    } = sums;
    let g_a = vk.delta_g1 * r + vk.alpha_g1 + a;
    let g_b = vk.delta_g2 * s + vk.beta_g2 + b_g2;
    let g_c = vk.delta_g1 * (r * s) + vk.alpha_g1 * s + vk.beta_g1 * r + a * s + b_g1 * r + h + l;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
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
/// The proofs are made one after another, each using every thread for its FFTs and multiexps;
/// the witnesses are synthesized on a thread of their own beside them (the first two at once
/// where one may be made ahead), at most
/// [`ProveOptions::witnesses_ahead`](crate::groth16::ProveOptions::witnesses_ahead) made or
/// being made beside the one being proven.
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
    let circuits = circuits.into_iter().map(Current).collect();
    prove_batch(circuits, params, r, s, options)
}

/// A circuit synthesized for a proof, and how.
struct Synthesized {
    cs: ProvingAssignment,
    /// Whether the witness alone was computed and the constraints evaluated from a shape.
    shape_used: bool,
    /// The whole synthesis of this circuit.
    synthesis: Duration,
    witness: Duration,
    evaluation: Duration,
}

/// The batch's circuits synthesized in order, circuit `i` once `may_start(i)` says so,
/// each handed to `send` as soon as it is done (synthesis stops when either returns false: the
/// prover has stopped): each for its witness only when `given` (the parameters' shape) is there;
/// else one circuit fully, its shape recorded on the way and used for the others
/// ([`ProveOptions::reuse_shape_in_batch`]); else each fully. The evaluations from a shape run on
/// the pool (`CircuitShape::evaluate`).
///
/// When the second circuit may be made beside the first (`pair_first`: a witness ahead, and no
/// shape given), the first is synthesized plainly while a thread of its own makes the second,
/// recording the shape there when a third circuit will use it: the first proof, which nothing
/// overlaps, waits only for a plain synthesis, and recording one costs more (about 1.2x,
/// `docs/BENCHMARKS.md`).
fn synthesize_each<C: AnyCircuit + Send>(
    circuits: Vec<C>,
    given: Option<&CircuitShape>,
    size: &AssignmentSize,
    options: &ProveOptions,
    pair_first: bool,
    mut may_start: impl FnMut(usize) -> bool,
    mut send: impl FnMut(Result<Synthesized, SynthesisError>) -> bool,
) {
    let from_shape = |circuit: C, shape: &CircuitShape| {
        let started = Instant::now();
        let witness = WitnessAssignment::of(circuit, shape)?;
        let witness_time = started.elapsed();
        let cs = shape.evaluate(witness, size.domain)?;
        Ok(Synthesized {
            cs,
            shape_used: true,
            synthesis: started.elapsed(),
            witness: witness_time,
            evaluation: started.elapsed() - witness_time,
        })
    };
    let full = |cs, started: Instant| Synthesized {
        cs,
        shape_used: false,
        synthesis: started.elapsed(),
        witness: Duration::ZERO,
        evaluation: Duration::ZERO,
    };
    let recording = |circuit: C| {
        let started = Instant::now();
        synthesize_recording(circuit, size).map(|(cs, shape)| {
            log::info!(
                "prove: a circuit of the batch recorded as a shape ({} terms, {} bytes); the \
                 others run for their witness only",
                shape.num_terms(),
                shape.memory_bytes()
            );
            (full(cs, started), shape)
        })
    };
    let mut send_logged = |i: usize, next: Result<Synthesized, SynthesisError>| {
        if let Ok(s) = &next {
            log::debug!(
                "prove: witness {i} of {} constraints synthesized in {:.2?}",
                s.cs.a.len(),
                s.synthesis
            );
        }
        let failed = next.is_err();
        send(next) && !failed
    };
    let count = circuits.len();
    let record = options.reuse_shape_in_batch && count > 1 && given.is_none();
    let mut recorded = None;
    let mut circuits = circuits.into_iter().enumerate();
    if given.is_none() && count > 1 && pair_first {
        let (Some((_, first)), Some((_, second))) = (circuits.next(), circuits.next()) else {
            return;
        };
        if !(may_start(0) && may_start(1)) {
            return;
        }
        // The second circuit waits here for its thread, so that it is not lost with the thread's
        // closure when no thread can be started: it is then made after the first, here.
        let waiting = std::sync::Mutex::new(Some(second));
        let make_second = || {
            let taken = waiting.lock().unwrap_or_else(|p| p.into_inner()).take();
            let Some(second) = taken else {
                let taken_twice = std::io::Error::other("the batch's second circuit taken twice");
                return Err(SynthesisError::IoError(taken_twice));
            };
            if record && count > 2 {
                recording(second).map(|(synthesized, shape)| (synthesized, Some(shape)))
            } else {
                let started = Instant::now();
                synthesize(second, size).map(|cs| (full(cs, started), None))
            }
        };
        // A failing first circuit's error reaches the prover at once, but the batch returns only
        // once the second is made: a circuit's synthesis cannot be stopped from outside.
        let second = std::thread::scope(|scope| {
            let beside = std::thread::Builder::new()
                .name("groth16-synthesis-2".into())
                .spawn_scoped(scope, make_second);
            let started = Instant::now();
            let first = synthesize(first, size).map(|cs| full(cs, started));
            if !send_logged(0, first) {
                return None;
            }
            Some(match beside.map(|handle| handle.join()) {
                Ok(Ok(second)) => second,
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                Err(e) => {
                    log::debug!("prove: no thread for the batch's second circuit ({e}); made here");
                    make_second()
                }
            })
        });
        let Some(second) = second else { return };
        let second = second.map(|(synthesized, shape)| {
            recorded = shape;
            synthesized
        });
        if !send_logged(1, second) {
            return;
        }
    }
    for (i, circuit) in circuits {
        if !may_start(i) {
            return;
        }
        let started = Instant::now();
        let next = match (given.or(recorded.as_ref()), record && i == 0) {
            (Some(shape), _) => from_shape(circuit, shape),
            (None, true) => recording(circuit).map(|(synthesized, shape)| {
                recorded = Some(shape);
                synthesized
            }),
            (None, false) => synthesize(circuit, size).map(|cs| full(cs, started)),
        };
        if !send_logged(i, next) {
            return;
        }
    }
}

/// How many witnesses a batch makes ahead of the one being proven
/// ([`ProveOptions::witnesses_ahead`]); unset, one, or none where one more witness would take
/// more than half the memory available now (Linux).
fn witnesses_ahead(options: &ProveOptions, size: &AssignmentSize, count: usize) -> usize {
    if let Some(n) = options.witnesses_ahead {
        return n.min(count);
    }
    // The three evaluation vectors (grown to the domain) and the witness, 32 bytes a value.
    let bytes = ((3 * size.domain + size.inputs + size.aux) * 32) as u64;
    let fits = available_memory().is_none_or(|free| bytes <= free / 2);
    usize::from(fits && count > 1)
}

/// The memory the kernel says is available for new allocations (`MemAvailable`), on Linux.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Every proof is verified before it is returned (a pairing check, 1.1-1.2 ms on one core of the
/// 2-core Xeon, against 54-62 ms for a whole 2^16 proof on an H100):
/// parameters of the right sizes for a circuit with other constraints, a circuit whose
/// constraints differ from its recorded shape's (constraints that depend on the witness) or that
/// names a variable it did not allocate give an error instead of a proof that does not verify.
fn check_proof(
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    inputs: &[Scalar],
    shape_used: bool,
) -> Result<(), SynthesisError> {
    match verify_proof(pvk, proof, inputs) {
        Ok(true) => Ok(()),
        Ok(false) | Err(_) if shape_used => Err(SynthesisError::MalformedProofs(
            "a proof made from the circuit's recorded shape does not verify: the circuit's \
             constraints differ from the shape's (another circuit, or constraints that depend \
             on the witness)"
                .into(),
        )),
        Ok(false) | Err(_) => Err(SynthesisError::MalformedProofs(
            "the proof does not verify: the parameters were made for a circuit with other \
             constraints, or a constraint names a variable of another constraint system"
                .into(),
        )),
    }
}

/// [`create_proof_batch_with_options`] for circuits of either bellpepper-core version.
pub(crate) fn prove_batch<C, P>(
    circuits: Vec<C>,
    params: P,
    r: Vec<Scalar>,
    s: Vec<Scalar>,
    options: &ProveOptions,
) -> Result<Vec<(Proof, ProofReport)>, SynthesisError>
where
    C: AnyCircuit + Send,
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
    let count = circuits.len();
    let size = AssignmentSize {
        domain: params.h().len() + 1,
        inputs: params.vk().ic.len(),
        aux: params.l().len(),
    };
    let given = params.shape();
    // Before a witness and its evaluations are sized by the shape's counts (which a shape file
    // sets) and the parameters' domain.
    let domain_of = |g: &CircuitShape| (g.num_constraints() + g.num_inputs).next_power_of_two();
    if let Some(shape) = given
        .filter(|g| (g.num_inputs, g.num_aux, domain_of(g)) != (size.inputs, size.aux, size.domain))
    {
        return Err(SynthesisError::IncompatibleLengthVector(format!(
            "the circuit's shape has {} inputs, {} auxiliary variables and a domain of {}, the \
             parameters {}, {} and {}: a shape of another circuit?",
            shape.num_inputs,
            shape.num_aux,
            domain_of(shape),
            size.inputs,
            size.aux,
            size.domain
        )));
    }
    // The devices are readied only for a batch that got this far.
    crate::gpu::GpuBackend::ready_in_background(options);
    let ahead = witnesses_ahead(options, &size, count);
    // Witnesses are synthesized on a thread of their own while this one proves the ones before:
    // a batch takes about the larger of its synthesis and its device work instead of their sum.
    // At most `ahead` witnesses are made or being made beside the one being proven: circuit `i`
    // (from `ahead + 1` on) starts once proof `i - ahead - 1` is done, which `proven` tells.
    let (sender, synthesized) = std::sync::mpsc::sync_channel(ahead);
    let (proven, proofs_done) = std::sync::mpsc::channel::<()>();
    let mut pvk = None;
    let mut gpu: BatchGpu = None;
    let mut proofs = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("groth16-synthesis".into())
            .spawn_scoped(scope, {
                let size = &size;
                // The sender moves to the thread, so the prover's receiving ends with it; the
                // wait for a proof ends when the prover drops `proven`.
                move || {
                    synthesize_each(
                        circuits,
                        given,
                        size,
                        options,
                        ahead >= 1,
                        |i| i <= ahead || proofs_done.recv().is_ok(),
                        |next| sender.send(next).is_ok(),
                    )
                }
            })
            .map_err(SynthesisError::IoError)?;
        let proofs = synthesized
            .into_iter()
            .zip(r.into_iter().zip(s))
            .map(|(synthesized, (r, s))| {
                let Synthesized {
                    cs,
                    shape_used,
                    synthesis,
                    witness,
                    evaluation,
                } = synthesized?;
                let mut report = ProofReport {
                    priority: options.priority,
                    synthesis,
                    shape_used,
                    witness,
                    evaluation,
                    ..ProofReport::default()
                };
                let inputs = cs.input_assignment[1..].to_vec();
                // On the caller's thread, not as one job of the pool: a whole proof queued in the
                // pool can be stolen by a worker waiting inside another proof and then block that
                // proof until it ends. The parallel steps inside use the pool.
                let proof = prove(cs, &params, r, s, options, &mut report, &mut gpu, count > 1)?;
                let pvk = pvk.get_or_insert_with(|| prepare_verifying_key(params.vk()));
                check_proof(pvk, &proof, &inputs, shape_used)?;
                report.total = start.elapsed();
                // Its witness is gone: the next circuit may start. The synthesis thread may have
                // ended already; then nothing waits for this.
                let _ = proven.send(());
                Ok((proof, report))
            })
            .collect::<Result<Vec<_>, SynthesisError>>();
        // Before the scope joins the synthesis thread, which may wait for a proof.
        drop(proven);
        proofs
    })?;
    // The devices go back at the batch's end; what their release counts (the device memory
    // left, each device's peak) belongs to the last proof.
    if let Some(backend) = gpu {
        if let Some((_, last)) = proofs.last_mut() {
            backend.finish(last);
        }
    }
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
pub fn create_proof_batch_in_priority<C, P>(
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
pub fn create_random_proof_batch_in_priority<C, P, R>(
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
    create_proof_batch_in_priority(circuits, params, r, s, priority)
}

/// An alias of [`create_proof_batch_in_priority`], bellperson 0.27's name.
#[deprecated(
    since = "0.1.0",
    note = "use `create_proof_batch_in_priority`, bellperson's name"
)]
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
    create_proof_batch_in_priority(circuits, params, r, s, priority)
}

/// An alias of [`create_random_proof_batch_in_priority`], bellperson 0.27's name.
#[deprecated(
    since = "0.1.0",
    note = "use `create_random_proof_batch_in_priority`, bellperson's name"
)]
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
    create_random_proof_batch_in_priority(circuits, params, rng, priority)
}
