//! FFTs over `Fr` on one OpenCL device: the transforms of [`crate::domain`] with the same
//! conventions, so either can do any step of the prover, and the prover's whole quotient
//! `H = (A B - C) / Z` with the data kept on the device between its seven transforms.
//!
//! A transform is a bit reversal, then launches of up to eight radix-2 rounds on 256-value groups
//! in local memory (see `cl/fft.cl`); twiddles and coset powers come from two tables of about
//! `sqrt(n)` values each, computed on the host (once per quotient, not per transform). Values
//! cross to the device in Montgomery form, as blst's limbs: a copy, no arithmetic.

use super::buffer::{
    below, receive_interruptible, wait_interruptible, write_limbs, DeviceMemory, PhaseTimer,
    Staging, Take, TrackedBuffer,
};
use super::device::Device;
use super::error::GpuError;
use super::program::{build, BuiltProgram};
use super::source;
use crate::domain::{QuotientInput, QuotientSteps};
use crate::multicore;
use crate::multiexp::ScalarRepr;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// 32-bit limbs of an `Fr` element.
const LIMBS: usize = 8;
/// Radix-2 rounds per launch at most (`FFT_MAX_DEG` in `cl/fft.cl`).
const MAX_DEG: u32 = 8;
/// Index bits on each side of a bit reversal's tile (`BR_BITS` in `cl/fft.cl`): its work-groups
/// have `2^(2 REVERSAL_TILE_BITS)` items.
const REVERSAL_TILE_BITS: u32 = 4;

/// Writes the Montgomery limbs of `values` (blst's form with R = 2^256, which is the device's: a
/// copy, no arithmetic) into `out`, flattened, and zeros after them. Serial: the staging memory
/// is filled by threads of its own, a part each, which leaves the thread pool to the prover's
/// other work.
fn to_device(values: &[Scalar], out: &mut [u32]) {
    out[values.len() * LIMBS..].fill(0);
    for (limbs, v) in out.chunks_exact_mut(LIMBS).zip(values) {
        write_limbs(&blst::blst_fr::from(*v).l, limbs);
    }
}

/// The value of `LIMBS` Montgomery limbs (checked below `r` by the caller).
fn scalar_from_limbs(limbs: &[u32]) -> Scalar {
    let mut raw = blst::blst_fr::default();
    for (limb, pair) in raw.l.iter_mut().zip(limbs.chunks_exact(2)) {
        *limb = pair[0] as u64 | (pair[1] as u64) << 32;
    }
    Scalar::from(raw)
}

/// Values from Montgomery limbs; a limb pattern that is not below `r` is a device fault.
fn from_device(limbs: &[u32], values: &mut [Scalar]) -> Result<(), GpuError> {
    let r = super::source::fr().p;
    multicore::install(|| {
        values
            .par_iter_mut()
            .zip(limbs.par_chunks(LIMBS))
            .try_for_each(|(v, l)| {
                if !below(l, &r) {
                    return Err(GpuError::WrongResult("a value outside the field".into()));
                }
                *v = scalar_from_limbs(l);
                Ok(())
            })
    })
}

/// How a quotient's coefficients come back from the device: as field elements, or as the
/// canonical integers a multiexp reads ([`ScalarRepr`]). The second costs nothing on the device
/// (its last scaling also divides by the Montgomery radix `R`, so that the device's form of each
/// value, `h R^-1 * R`, is `h` itself) and saves the prover a pass over the coefficients on the
/// host: 110 ms at 2^25 values between the quotient and the H multiexp, the device idle (H200,
/// fifteenth session), and a second vector of their size.
pub trait QuotientValue: Copy + Send + 'static {
    /// The factor folded into the last scaling on the device.
    fn device_scale() -> Scalar;
    /// The value whose device form is `limbs` (eight 32-bit limbs, below `r`).
    fn from_device_limbs(limbs: &[u32]) -> Self;
}

impl QuotientValue for Scalar {
    fn device_scale() -> Scalar {
        Scalar::ONE
    }

    fn from_device_limbs(limbs: &[u32]) -> Self {
        scalar_from_limbs(limbs)
    }
}

impl QuotientValue for ScalarRepr {
    fn device_scale() -> Scalar {
        // R^-1 = (1 / 2)^256, R = 2^256 being blst's Montgomery radix for Fr.
        Scalar::TWO_INV.pow_vartime([256])
    }

    fn from_device_limbs(limbs: &[u32]) -> Self {
        let mut wide = [0u64; 4];
        for (limb, pair) in wide.iter_mut().zip(limbs.chunks_exact(2)) {
            *limb = pair[0] as u64 | (pair[1] as u64) << 32;
        }
        ScalarRepr::from_canonical_limbs(wide)
    }
}

/// Appends the values of device `limbs` to `values`, on all threads: a serial zeroing before
/// [`from_device`] wrote each slot twice.
fn append_from_device<V: QuotientValue>(
    limbs: &[u32],
    values: &mut Vec<V>,
) -> Result<(), GpuError> {
    let r = super::source::fr().p;
    let bad = std::sync::atomic::AtomicBool::new(false);
    multicore::install(|| {
        values.par_extend(limbs.par_chunks(LIMBS).map(|l| {
            if !below(l, &r) {
                bad.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            V::from_device_limbs(l)
        }))
    });
    if bad.into_inner() {
        return Err(GpuError::WrongResult("a value outside the field".into()));
    }
    Ok(())
}

/// The domain of size `2^log_n`: its generator and its inverse, and `1 / n`.
fn domain_constants(log_n: u32) -> Result<(Scalar, Scalar, Scalar), GpuError> {
    if log_n > Scalar::S {
        return Err(GpuError::InvalidInput(format!(
            "no domain of 2^{log_n} values in Fr"
        )));
    }
    let mut omega = Scalar::ROOT_OF_UNITY;
    for _ in log_n..Scalar::S {
        omega = omega.square();
    }
    let inverse = |x: Scalar| {
        Option::<Scalar>::from(x.invert())
            .ok_or_else(|| GpuError::InvalidInput("no inverse".into()))
    };
    Ok((
        omega,
        inverse(omega)?,
        inverse(Scalar::from(1u64 << log_n))?,
    ))
}

/// `c x^e` for `e < 2^bits` as two device tables: `lo[i] = c x^i` for `i < 2^lo_bits` and
/// `hi[i] = x^(i 2^lo_bits)`.
struct PowerTable<'a> {
    lo: DeviceValues<'a>,
    hi: DeviceValues<'a>,
    lo_bits: u32,
    /// Exponents below `2^bits` are in the table.
    bits: u32,
}

/// The pointwise steps around one transform, in order.
#[derive(Clone, Copy, Debug, Default)]
struct Plan {
    /// Multiply `a[i]` by `g^i` before the transform (coset FFT).
    before: Option<Scalar>,
    /// Multiply every value by this after the transform (`1/n` for inverses).
    scale: Option<Scalar>,
    /// Multiply `a[i]` by `g^i` after the scaling (inverse coset FFT).
    after: Option<Scalar>,
}

/// A device vector of `Fr` values in Montgomery form.
type DeviceValues<'a> = TrackedBuffer<'a>;

/// The FFT kernels, built for one device.
#[derive(Debug)]
pub struct FftKernel {
    program: Arc<BuiltProgram>,
    /// Rounds per launch: limited by the device's work-group size (2^(deg - 1) items).
    max_deg: u32,
    /// Whether the device's work-groups are large enough for the bit reversal by tiles.
    tiled_reversal: bool,
    /// This kernel's device buffers.
    memory: DeviceMemory,
}

impl FftKernel {
    /// Builds (or takes from the caches) the FFT program for `device`.
    pub fn new(device: &Device) -> Result<Self, GpuError> {
        let max_wg = device.device.max_wg_size()?.max(1);
        let max_deg = (usize::BITS - 1 - max_wg.leading_zeros() + 1).min(MAX_DEG);
        Ok(FftKernel {
            program: build(device, &source::fft_source(), "")?,
            max_deg,
            tiled_reversal: max_wg >= 1 << (2 * REVERSAL_TILE_BITS),
            memory: DeviceMemory::default(),
        })
    }

    /// One small quotient, checked against the CPU's, so that the kernels are loaded and the
    /// staging memory mapped before the first proof needs them (see
    /// [`super::MultiexpKernel::warm_up`]).
    pub fn warm_up(&self) -> Result<(), GpuError> {
        let n = 1u64 << 10;
        let values =
            |seed: u64| -> Vec<Scalar> { (0..n).map(|i| Scalar::from(seed + i * i)).collect() };
        let (a, b, c) = (values(1), values(2), values(3));
        let got = self.quotient(&a, &b, &c)?;
        let want = crate::domain::quotient(a, b, c)
            .map_err(|e| GpuError::InvalidInput(format!("the CPU's warm-up quotient: {e}")))?;
        if got == want {
            Ok(())
        } else {
            Err(GpuError::WrongResult(
                "the warm-up quotient differs from the CPU's".into(),
            ))
        }
    }

    /// Bytes of device memory held by transforms running on this kernel now (0 between calls).
    pub fn live_device_bytes(&self) -> u64 {
        self.memory.live()
    }

    /// The most device memory this kernel held at once since the last call.
    pub fn take_peak_device_bytes(&self) -> u64 {
        self.memory.take_peak()
    }

    /// Evaluations on the domain of size `values.len()` (a power of two) generated by `omega`.
    pub fn fft(&self, values: &mut [Scalar], omega: Scalar) -> Result<(), GpuError> {
        self.run(values, omega, Plan::default())
    }

    /// Coefficients from evaluations; `omega_inv` generates the domain, `n_inv = 1 / n`.
    pub fn ifft(
        &self,
        values: &mut [Scalar],
        omega_inv: Scalar,
        n_inv: Scalar,
    ) -> Result<(), GpuError> {
        let plan = Plan {
            scale: Some(n_inv),
            ..Plan::default()
        };
        self.run(values, omega_inv, plan)
    }

    /// Evaluations on the coset `g * domain`.
    pub fn coset_fft(
        &self,
        values: &mut [Scalar],
        omega: Scalar,
        g: Scalar,
    ) -> Result<(), GpuError> {
        let plan = Plan {
            before: Some(g),
            ..Plan::default()
        };
        self.run(values, omega, plan)
    }

    /// Coefficients from evaluations on the coset `g * domain`; `g_inv = 1 / g`.
    pub fn icoset_fft(
        &self,
        values: &mut [Scalar],
        omega_inv: Scalar,
        n_inv: Scalar,
        g_inv: Scalar,
    ) -> Result<(), GpuError> {
        let plan = Plan {
            before: None,
            scale: Some(n_inv),
            after: Some(g_inv),
        };
        self.run(values, omega_inv, plan)
    }

    /// Uploads `values`, runs `plan` around the transform for `omega`, and downloads them.
    fn run(&self, values: &mut [Scalar], omega: Scalar, plan: Plan) -> Result<(), GpuError> {
        if values.is_empty() {
            return Ok(());
        }
        let log_n = log_size(values.len())?;
        let data = self.upload(values, values.len(), &|| false)?;
        self.apply(&data, log_n, omega, plan, &|| false)?;
        self.download(&data, values, &|| false)
    }

    /// `plan` around the transform for `omega`, on values already on the device.
    fn apply(
        &self,
        data: &DeviceValues<'_>,
        log_n: u32,
        omega: Scalar,
        plan: Plan,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        if let Some(g) = plan.before {
            let powers = self.power_table(g, Scalar::ONE, log_n, interrupt)?;
            self.distribute_powers(data, log_n, &powers, interrupt)?;
        }
        let twiddles = self.twiddles(omega, log_n, interrupt)?;
        self.transform(data, log_n, &twiddles, interrupt)?;
        match (plan.scale, plan.after) {
            // The scaling goes into the powers' table: one pass over the values, not two.
            (c, Some(g)) => {
                let powers = self.power_table(g, c.unwrap_or(Scalar::ONE), log_n, interrupt)?;
                self.distribute_powers(data, log_n, &powers, interrupt)
            }
            (Some(c), None) => self.scale(data, 1 << log_n, c, interrupt),
            (None, None) => Ok(()),
        }
    }

    /// The coefficients of `H = (A B - C) / Z`, where `a`, `b`, `c` are the evaluations of `A`,
    /// `B`, `C` on the domain of the next power of two `n` at or above their length (zero-padded):
    /// each is interpolated and evaluated on the coset `g * domain` (`g` the field's
    /// multiplicative generator), combined there, and interpolated back. Returns the `n - 1`
    /// coefficients of `H`; the data stays on the device between the steps.
    pub fn quotient(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
    ) -> Result<Vec<Scalar>, GpuError> {
        self.quotient_interruptible(a, b, c, &|| false)
    }

    /// [`FftKernel::quotient`] that asks `interrupt` around every kernel (waiting for each before
    /// the next is enqueued) and every download slot, and about every millisecond while it waits
    /// for a kernel or for an input's upload (which runs on a thread of its own and stops when
    /// this call does);
    /// when it says yes, lets the running kernel finish, frees its buffers and returns
    /// [`GpuError::Interrupted`].
    pub fn quotient_interruptible(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<Scalar>, GpuError> {
        self.quotient_as(a, b, c, interrupt)
    }

    /// [`FftKernel::quotient_interruptible`] with the coefficients as a multiexp reads them
    /// (canonical integers, [`QuotientValue`]): what the prover's H multiexp takes.
    pub fn quotient_as<V: QuotientValue>(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<V>, GpuError> {
        let n = a.len().max(b.len()).max(c.len()).max(1).next_power_of_two();
        let inputs = [(a, false), (b, false), (c, false)];
        self.quotient_on_device(n, inputs, None, interrupt)
    }

    /// [`FftKernel::quotient_interruptible`] from the steps already done in `steps`, keeping
    /// each finished step on the host (the input's coset evaluations come back as soon as they
    /// are made): when interrupted, the steps finished so far stay in `steps` for the next try
    /// (on any device, or on the CPU), and only the one in progress is lost. The three downloads
    /// cost about a third of the quotient's time (5.3 ms each against a 48 ms quotient of 2^21
    /// values on the H200), so only a put-off quotient goes in steps. The inputs and the kept
    /// coset values (the domain's size each) are both in host memory until the call returns.
    /// After a device error other than an interruption or a lack of memory, nothing this call
    /// made is kept: a faulty device's step must not reach a proof.
    pub fn quotient_steps(
        &self,
        steps: &mut QuotientSteps,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<Scalar>, GpuError> {
        self.quotient_steps_as(steps, interrupt)
    }

    /// [`FftKernel::quotient_steps`] with the coefficients as `V` ([`FftKernel::quotient_as`]).
    pub fn quotient_steps_as<V: QuotientValue>(
        &self,
        steps: &mut QuotientSteps,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<V>, GpuError> {
        let mut done: [Option<Vec<Scalar>>; 3] = Default::default();
        let mut kept_at = None;
        let result = {
            let input = |i: usize| match &steps.inputs[i] {
                QuotientInput::OnDomain(v) => (v.as_slice(), false),
                QuotientInput::OnCoset(v) => (v.as_slice(), true),
            };
            let inputs = [input(0), input(1), input(2)];
            let mut keep = |i: usize, values: Vec<Scalar>| {
                done[i] = Some(values);
                kept_at = Some(std::time::Instant::now());
            };
            self.quotient_on_device(steps.n, inputs, Some(&mut keep), interrupt)
        };
        // The finished steps are kept whether or not the whole quotient was, unless the device
        // failed.
        if let Err(e) = &result {
            if !matches!(e, GpuError::Interrupted | GpuError::OutOfMemory(_)) {
                return result;
            }
        }
        steps.last_step_at = kept_at.or(steps.last_step_at);
        for (input, values) in steps.inputs.iter_mut().zip(done) {
            if let Some(values) = values {
                let replaced = std::mem::replace(input, QuotientInput::OnCoset(values));
                crate::free::free_in_background(replaced);
            }
        }
        result
    }

    /// The quotient on a domain of `n` values from `inputs` (values, and whether they are on the
    /// coset already); with `keep`, each input moved to the coset here is also handed to it.
    fn quotient_on_device<V: QuotientValue>(
        &self,
        n: usize,
        inputs: [(&[Scalar], bool); 3],
        mut keep: Option<&mut dyn FnMut(usize, Vec<Scalar>)>,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<V>, GpuError> {
        let check = || {
            if interrupt() {
                Err(GpuError::Interrupted)
            } else {
                Ok(())
            }
        };
        if !n.is_power_of_two() || inputs.iter().any(|(v, _)| v.len() > n) {
            return Err(GpuError::InvalidInput(format!(
                "quotient inputs longer than the domain of {n}"
            )));
        }
        let log_n = log_size(n)?;
        let (omega, omega_inv, n_inv) = domain_constants(log_n)?;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = Option::<Scalar>::from(g.invert())
            .ok_or_else(|| GpuError::InvalidInput("no inverse".into()))?;
        // Z(g x) = g^n - 1 on the whole coset.
        let z_inv = Option::<Scalar>::from((g.pow_vartime([n as u64]) - Scalar::ONE).invert())
            .ok_or_else(|| GpuError::InvalidInput("Z vanishes on the coset".into()))?;

        let q = &self.program.queue;
        let mut phases = PhaseTimer::start();
        // The inputs go up one after another on the transfer queue, from a thread of their own,
        // while the device moves the earlier ones to the coset: the bus and the device work at
        // once. Each is waited for before the first kernel that reads it. (Uploaded all at once
        // they shared the host's fill threads and arrived no sooner.)
        let stop = AtomicBool::new(false);
        let (sender, arrivals) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            let (inputs, stop) = (&inputs, &stop);
            let upload = std::thread::Builder::new()
                .name("gpu-upload".into())
                .spawn_scoped(scope, move || {
                    for (values, _) in inputs {
                        let data =
                            self.upload_through(values, n, &|| stop.load(Ordering::Relaxed), true);
                        let failed = data.is_err();
                        if sender.send(data).is_err() || failed {
                            break;
                        }
                    }
                })
                .map_err(|e| GpuError::Ocl(format!("cannot start the upload thread: {e}")))?;
            let result = (|| {
                // The tables of the seven transforms and the four shifts, made once (the scaling
                // by 1 / n goes into the shifts' tables), while the first input goes up.
                let forward = self.twiddles(omega, log_n, interrupt)?;
                let inverse = self.twiddles(omega_inv, log_n, interrupt)?;
                let to_coset = self.power_table(g, n_inv, log_n, interrupt)?;
                let from_coset =
                    self.power_table(g_inv, n_inv * V::device_scale(), log_n, interrupt)?;
                let mut device = Vec::with_capacity(3);
                for (i, &(_, on_coset)) in inputs.iter().enumerate() {
                    check()?;
                    let data = receive_interruptible(&arrivals, interrupt)?;
                    phases.mark(q, "upload")?;
                    if !on_coset {
                        // Interpolate, then shift to the coset: the next transform evaluates there.
                        self.transform(&data, log_n, &inverse, interrupt)?;
                        self.distribute_powers(&data, log_n, &to_coset, interrupt)?;
                        self.transform(&data, log_n, &forward, interrupt)?;
                        phases.mark(q, "to the coset")?;
                        if let Some(keep) = keep.as_mut() {
                            let mut out = Vec::with_capacity(n);
                            self.download_into(&data, n, &mut out, interrupt)?;
                            keep(i, out);
                            phases.mark(q, "kept")?;
                        }
                    }
                    device.push(data);
                }
                let z = self.upload(&[z_inv], 1, interrupt)?;
                check()?;
                let kernel = self
                    .kernel("Fr_mul_sub_scale", n, None)?
                    .arg(&*device[0])
                    .arg(&*device[1])
                    .arg(&*device[2])
                    .arg(&*z)
                    .arg(n as u32)
                    .build()?;
                self.launch(&kernel, interrupt)?;
                let h = device.swap_remove(0);
                drop(device);
                check()?;
                self.transform(&h, log_n, &inverse, interrupt)?;
                self.distribute_powers(&h, log_n, &from_coset, interrupt)?;
                phases.mark(q, "combined and back")?;
                // Filled a slot at a time by the download, between its probes: at 2^24 the 512 MiB
                // zeroed in one go was a long stretch without one.
                let mut out = Vec::with_capacity(n);
                self.download_into(&h, n, &mut out, interrupt)?;
                out.truncate(n - 1);
                phases.mark(q, "download")?;
                if let Some(steps) = phases.summary() {
                    log::debug!("gpu: quotient of 2^{log_n} values: {steps}");
                }
                Ok(out)
            })();
            let stopped_at = result.is_err().then(std::time::Instant::now);
            if stopped_at.is_some() {
                stop.store(true, Ordering::Relaxed);
            }
            // Uploads still in the channel are dropped (freed) with it, before the device is
            // released.
            drop(arrivals);
            let joined = upload.join();
            if let (Some(at), Err(e)) = (stopped_at, &result) {
                // A release 34-61 ms after the request was seen, in this quotient at 2^25
                // values on the H200 (fourteenth session), while the holder probed every 7-11
                // ms: this says how much of it is the stop here.
                log::debug!(
                    "gpu: quotient of 2^{log_n} values stopped ({e}); upload thread ended and \
                     its uploads freed {:.2?} after",
                    at.elapsed()
                );
            }
            match joined {
                Ok(()) => result,
                Err(_) => Err(GpuError::Ocl(
                    "the thread uploading the inputs panicked".into(),
                )),
            }
        })
    }

    /// Best time in seconds of `reps` forward transforms of `2^log_n` values already on the device
    /// (the kernels, and the twiddle tables made and uploaded in each repetition; not the values'
    /// transfers): the benchmark of the kernels alone.
    #[doc(hidden)]
    pub fn time_on_device(&self, log_n: u32, reps: usize) -> Result<f64, GpuError> {
        let n = 1usize << log_n;
        let (omega, _, _) = domain_constants(log_n)?;
        let values: Vec<Scalar> = (0..n as u64).map(Scalar::from).collect();
        let data = self.upload(&values, n, &|| false)?;
        drop(values);
        let mut best = f64::MAX;
        for _ in 0..reps.max(1) {
            self.program.queue.finish()?;
            let t = std::time::Instant::now();
            let twiddles = self.twiddles(omega, log_n, &|| false)?;
            self.transform(&data, log_n, &twiddles, &|| false)?;
            self.program.queue.finish()?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        // With debug logging, once more with each launch timed.
        if log::log_enabled!(log::Level::Debug) {
            let mut phases = PhaseTimer::start();
            let twiddles = self.twiddles(omega, log_n, &|| false)?;
            phases.mark(&self.program.queue, "tables")?;
            self.transform_timed(&data, log_n, &twiddles, &|| false, &mut phases)?;
            if let Some(steps) = phases.summary() {
                log::debug!("gpu: transform of 2^{log_n} values: {steps}");
            }
        }
        Ok(best)
    }

    /// `values` in Montgomery form on the device, zero-padded to `len` values.
    fn upload(
        &self,
        values: &[Scalar],
        len: usize,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<DeviceValues<'_>, GpuError> {
        self.upload_through(values, len, interrupt, false)
    }

    /// [`FftKernel::upload`] on the program's queue, or with `transfer` on its transfer queue.
    fn upload_through(
        &self,
        values: &[Scalar],
        len: usize,
        interrupt: &dyn Fn() -> bool,
        transfer: bool,
    ) -> Result<DeviceValues<'_>, GpuError> {
        let len = len.max(values.len()) * LIMBS;
        let program = &self.program;
        let q = if transfer {
            &program.transfer_queue
        } else {
            &program.queue
        };
        let data = TrackedBuffer::new(q, len, None, &self.memory)?;
        let fill = |staging: &mut Staging| {
            staging.upload(
                q,
                &data,
                len,
                LIMBS,
                &|start, out| {
                    let first = (start / LIMBS).min(values.len());
                    let last = (first + out.len() / LIMBS).min(values.len());
                    to_device(&values[first..last], out)
                },
                interrupt,
            )
        };
        if transfer {
            program.with_transfer_staging(fill)?;
        } else {
            program.with_staging(fill)?;
        }
        Ok(data)
    }

    /// Reads `values.len()` values of `data` into `values`.
    fn download(
        &self,
        data: &DeviceValues,
        values: &mut [Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        self.download_with(data, values.len(), interrupt, &mut |first, limbs| {
            from_device(limbs, &mut values[first..first + limbs.len() / LIMBS])
        })
    }

    /// The first `len` values of `data`, appended to `values` a slot at a time. After an error
    /// `values` is left empty: what it held is freed on another thread
    /// ([`crate::free::free_in_background`]), as the caller is about to give the device up.
    fn download_into<V: QuotientValue>(
        &self,
        data: &DeviceValues,
        len: usize,
        values: &mut Vec<V>,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        let result = self.download_with(data, len, interrupt, &mut |_, limbs| {
            append_from_device(limbs, values)
        });
        if result.is_err() {
            crate::free::free_in_background(std::mem::take(values));
        }
        result
    }

    /// Reads the first `len` values of `data` through the staging memory, handing each slot's
    /// limbs to `take(first value, limbs)`.
    fn download_with(
        &self,
        data: &DeviceValues,
        len: usize,
        interrupt: &dyn Fn() -> bool,
        take: &mut Take<'_>,
    ) -> Result<(), GpuError> {
        let q = &self.program.queue;
        self.program.with_staging(|staging| {
            staging.download(
                q,
                data,
                len * LIMBS,
                LIMBS,
                &mut |start, limbs| take(start / LIMBS, limbs),
                interrupt,
            )
        })
    }

    /// `c x^e` for `e < 2^bits` as split tables on the device (the factor `c` in the low table).
    fn power_table(
        &self,
        x: Scalar,
        c: Scalar,
        bits: u32,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<PowerTable<'_>, GpuError> {
        let lo_bits = bits.div_ceil(2);
        let powers = |first: Scalar, base: Scalar, count: usize| {
            let mut v = Vec::with_capacity(count);
            let mut p = first;
            for _ in 0..count {
                v.push(p);
                p *= base;
            }
            v
        };
        let lo = powers(c, x, 1 << lo_bits);
        let hi = powers(
            Scalar::ONE,
            x.pow_vartime([1u64 << lo_bits]),
            1 << (bits - lo_bits),
        );
        Ok(PowerTable {
            lo: self.upload(&lo, lo.len(), interrupt)?,
            hi: self.upload(&hi, hi.len(), interrupt)?,
            lo_bits,
            bits,
        })
    }

    /// The twiddles `omega^e`, `e < n / 2`, of a transform of `n = 2^log_n` values.
    fn twiddles(
        &self,
        omega: Scalar,
        log_n: u32,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<PowerTable<'_>, GpuError> {
        self.power_table(omega, Scalar::ONE, log_n.saturating_sub(1), interrupt)
    }

    /// The transform in place with the `twiddles` of its domain, without scaling.
    fn transform(
        &self,
        data: &DeviceValues,
        log_n: u32,
        twiddles: &PowerTable,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        let mut untimed = PhaseTimer::off();
        self.transform_timed(data, log_n, twiddles, interrupt, &mut untimed)
    }

    /// [`FftKernel::transform`] marking each launch in `phases`.
    fn transform_timed(
        &self,
        data: &DeviceValues,
        log_n: u32,
        twiddles: &PowerTable,
        interrupt: &dyn Fn() -> bool,
        phases: &mut PhaseTimer,
    ) -> Result<(), GpuError> {
        if log_n == 0 {
            return Ok(());
        }
        if twiddles.bits + 1 < log_n {
            return Err(GpuError::InvalidInput(format!(
                "twiddles of 2^{} values for a transform of 2^{log_n}",
                twiddles.bits + 1
            )));
        }
        let n = 1usize << log_n;
        let mut kernel = if self.tiled_reversal && log_n >= 2 * REVERSAL_TILE_BITS {
            let tile = 1 << (2 * REVERSAL_TILE_BITS);
            self.kernel("Fr_bit_reverse_tiles", n, Some(tile))?
        } else {
            self.kernel("Fr_bit_reverse", n, None)?
        };
        let kernel = kernel.arg(&**data).arg(log_n).build()?;
        self.launch(&kernel, interrupt)?;
        phases.mark(&self.program.queue, "bit reversal")?;
        // The rounds spread evenly over the fewest launches: each launch's work-groups hold
        // 2^(deg - 1) work-items, and filled greedily (8, 8, 8, 1 at 2^25) the last launch ran
        // in groups of one work-item.
        let launches = log_n.div_ceil(self.max_deg);
        let mut first = 0;
        for launch in 0..launches {
            let deg = (log_n - first).div_ceil(launches - launch);
            let kernel = self
                .kernel("Fr_radix_rounds", n / 2, Some(1 << (deg - 1)))?
                .arg(&**data)
                .arg(&*twiddles.lo)
                .arg(&*twiddles.hi)
                .arg(twiddles.lo_bits)
                .arg(log_n)
                .arg(first)
                .arg(deg)
                .build()?;
            self.launch(&kernel, interrupt)?;
            phases.mark(&self.program.queue, "rounds")?;
            first += deg;
        }
        Ok(())
    }

    fn scale(
        &self,
        data: &DeviceValues,
        n: usize,
        c: Scalar,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        let constant = self.upload(&[c], 1, interrupt)?;
        let kernel = self
            .kernel("Fr_scale", n, None)?
            .arg(&**data)
            .arg(&*constant)
            .arg(n as u32)
            .build()?;
        self.launch(&kernel, interrupt)
    }

    /// `a[i] *= table[i]`, for a table of `c g^i`: a shift to (or from) the coset `g * domain`
    /// with a scaling folded in.
    fn distribute_powers(
        &self,
        data: &DeviceValues,
        log_n: u32,
        table: &PowerTable,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        if table.bits < log_n {
            return Err(GpuError::InvalidInput(format!(
                "powers of 2^{} values for 2^{log_n}",
                table.bits
            )));
        }
        let n = 1usize << log_n;
        let kernel = self
            .kernel("Fr_distribute_powers", n, None)?
            .arg(&**data)
            .arg(&*table.lo)
            .arg(&*table.hi)
            .arg(table.lo_bits)
            .arg(n as u32)
            .build()?;
        self.launch(&kernel, interrupt)
    }

    /// Enqueues `kernel` and waits for it, asking `interrupt` meanwhile and once more after it:
    /// at most one kernel (a pass of up to eight rounds, tens of milliseconds at 2^24) stands
    /// between a request and the release. When asked, it lets the kernel finish (it uses our
    /// buffers) and returns [`GpuError::Interrupted`].
    fn launch(&self, kernel: &ocl::Kernel, interrupt: &dyn Fn() -> bool) -> Result<(), GpuError> {
        let q = &self.program.queue;
        let done = enqueue(kernel)?;
        if let Err(e) = wait_interruptible(q, &done, interrupt) {
            let _ = q.finish();
            return Err(e);
        }
        if interrupt() {
            return Err(GpuError::Interrupted);
        }
        Ok(())
    }

    fn kernel(
        &self,
        name: &str,
        items: usize,
        local: Option<usize>,
    ) -> Result<ocl::builders::KernelBuilder<'_>, GpuError> {
        let mut builder = ocl::Kernel::builder();
        builder
            .program(&self.program.program)
            .name(name)
            .queue(self.program.queue.clone())
            .global_work_size(items);
        if let Some(local) = local {
            builder.local_work_size(local);
        }
        Ok(builder)
    }
}

impl std::fmt::Debug for PowerTable<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PowerTable(lo_bits {})", self.lo_bits)
    }
}

/// `log2(n)` for a power of two up to `2^31` (the kernels index with 32-bit integers).
fn log_size(n: usize) -> Result<u32, GpuError> {
    if !n.is_power_of_two() || n > 1 << 31 {
        return Err(GpuError::InvalidInput(format!(
            "FFT of {n} values: needs a power of two up to 2^31"
        )));
    }
    Ok(n.trailing_zeros())
}

/// Enqueues a kernel built by this module; the event says when it is done.
#[allow(unsafe_code)]
fn enqueue(kernel: &ocl::Kernel) -> Result<ocl::Event, GpuError> {
    // SAFETY: every kernel of fft.cl bounds-checks its work-item index against the size argument
    // it is given, or is launched over exactly the values it indexes: radix_rounds with n / 2
    // items in groups of 2^(deg - 1) over a buffer of n values, bit_reverse_tiles with n items in
    // groups of 256 for n = 2^log_n, log_n >= 8 (each group's two tiles lie inside the n values);
    // the callers size each buffer for that many elements (n values, the power tables' 2^lo_bits
    // and 2^(bits - lo_bits) entries with `bits` checked against the transform's, one constant)
    // with the argument types of the kernel's signature.
    let mut done = ocl::Event::empty();
    unsafe { kernel.cmd().enew(&mut done).enq()? };
    Ok(done)
}
