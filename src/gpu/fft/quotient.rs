//! The prover's quotient `H = (A B - C) / Z` on the device: the three inputs moved to the coset,
//! combined there and interpolated back, in one call or in steps whose results are kept.

use super::transfer::QuotientValue;
use super::{domain_constants, log_size, DeviceValues, FftKernel};
use crate::domain::{QuotientInput, QuotientSteps};
use crate::gpu::buffer::{receive_interruptible, PhaseTimer};
use crate::gpu::error::GpuError;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;

impl FftKernel {
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
        keep: Option<&mut dyn FnMut(usize, Vec<Scalar>)>,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<V>, GpuError> {
        if !n.is_power_of_two() || inputs.iter().any(|(v, _)| v.len() > n) {
            return Err(GpuError::InvalidInput(format!(
                "quotient inputs longer than the domain of {n}"
            )));
        }
        let constants = QuotientConstants::new(n)?;
        let log_n = constants.log_n;
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
            let on_coset = inputs.map(|(_, on_coset)| on_coset);
            let result =
                self.quotient_of_arrivals(&constants, on_coset, &arrivals, keep, interrupt);
            let stopped_at = result.is_err().then(std::time::Instant::now);
            if stopped_at.is_some() {
                stop.store(true, Ordering::Relaxed);
            }
            // Uploads still in the channel are dropped (freed) with it, before the device is
            // released.
            drop(arrivals);
            let joined = upload.join();
            if let (Some(at), Err(e)) = (stopped_at, &result) {
                // This quotient at 2^25 values on the H200 can release the device 34-61 ms
                // after the request is seen, while the holder probes every 7-11 ms: this says
                // how much of that is the stop here.
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

    /// [`FftKernel::quotient_on_device`]'s device work, from the inputs as they arrive (`on_coset`:
    /// whether each is on the coset already).
    fn quotient_of_arrivals<V: QuotientValue>(
        &self,
        k: &QuotientConstants,
        on_coset: [bool; 3],
        arrivals: &Receiver<Result<DeviceValues<'_>, GpuError>>,
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
        let (n, log_n) = (1usize << k.log_n, k.log_n);
        let q = &self.program.queue;
        let mut phases = PhaseTimer::start();
        // The tables of the seven transforms and the four shifts, made once (the scaling by 1 / n
        // goes into the shifts' tables), while the first input goes up.
        let forward = self.twiddles(k.omega, log_n, interrupt)?;
        let inverse = self.twiddles(k.omega_inv, log_n, interrupt)?;
        let to_coset = self.power_table(k.g, k.n_inv, log_n, interrupt)?;
        let from_coset =
            self.power_table(k.g_inv, k.n_inv * V::device_scale(), log_n, interrupt)?;
        let mut device = Vec::with_capacity(3);
        for (i, &on_coset) in on_coset.iter().enumerate() {
            check()?;
            let data = receive_interruptible(arrivals, interrupt)?;
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
        let z = self.upload(&[k.z_inv], 1, interrupt)?;
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
    }
}

/// The constants of a quotient on the domain of `2^log_n` values: the domain's generator, its
/// inverse and `1 / n`; the coset's shift `g` (the field's multiplicative generator) and its
/// inverse; and `1 / Z` on the coset.
struct QuotientConstants {
    log_n: u32,
    omega: Scalar,
    omega_inv: Scalar,
    n_inv: Scalar,
    g: Scalar,
    g_inv: Scalar,
    z_inv: Scalar,
}

impl QuotientConstants {
    fn new(n: usize) -> Result<Self, GpuError> {
        let log_n = log_size(n)?;
        let (omega, omega_inv, n_inv) = domain_constants(log_n)?;
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        let g_inv = Option::<Scalar>::from(g.invert())
            .ok_or_else(|| GpuError::InvalidInput("no inverse".into()))?;
        // Z(g x) = g^n - 1 on the whole coset.
        let z_inv = Option::<Scalar>::from((g.pow_vartime([n as u64]) - Scalar::ONE).invert())
            .ok_or_else(|| GpuError::InvalidInput("Z vanishes on the coset".into()))?;
        Ok(QuotientConstants {
            log_n,
            omega,
            omega_inv,
            n_inv,
            g,
            g_inv,
            z_inv,
        })
    }
}
