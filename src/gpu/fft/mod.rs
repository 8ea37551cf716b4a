//! FFTs over `Fr` on one OpenCL device: the transforms of [`crate::domain`] with the same
//! conventions, so either can do any step of the prover, and the prover's whole quotient
//! `H = (A B - C) / Z` with the data kept on the device between its seven transforms.
//!
//! A transform is a bit reversal, then launches of up to eight radix-2 rounds on 256-value groups
//! in local memory (see `cl/fft.cl`); twiddles and coset powers come from two tables of about
//! `sqrt(n)` values each, computed on the host (once per quotient, not per transform). Values
//! cross to the device in Montgomery form, as blst's limbs: a copy, no arithmetic.

use super::buffer::{wait_interruptible, DeviceMemory, PhaseTimer, TrackedBuffer};
use super::device::Device;
use super::error::GpuError;
use super::program::{build, BuiltProgram};
use super::source;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod quotient;
mod transfer;
mod transform;

pub use transfer::QuotientValue;

/// 32-bit limbs of an `Fr` element.
const LIMBS: usize = 8;
/// Radix-2 rounds per launch at most (`FFT_MAX_DEG` in `cl/fft.cl`).
const MAX_DEG: u32 = 8;
/// Index bits on each side of a bit reversal's tile (`BR_BITS` in `cl/fft.cl`): its work-groups
/// have `2^(2 REVERSAL_TILE_BITS)` items.
const REVERSAL_TILE_BITS: u32 = 4;
/// Values one launch of the bit reversal or of a pass of radix rounds covers at most: a pass
/// over 2^27 values in one launch took up to about 26 ms on the H100, all of it waited out by a
/// higher priority asking for the device; a slice of 2^24 values takes about an eighth of that
/// (each slice is waited for, probing, before the next is enqueued).
const LAUNCH_VALUES: usize = 1 << 24;

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
    /// Values a launch of the bit reversal or of a pass of rounds covers at most
    /// ([`LAUNCH_VALUES`]; tests make it small to cross many launches).
    launch_values: AtomicUsize,
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
            launch_values: AtomicUsize::new(LAUNCH_VALUES),
            memory: DeviceMemory::default(),
        })
    }

    /// Covers at most `values` values per launch of the bit reversal and of each pass of rounds
    /// (0: the default, 2^24), so that a test on small transforms crosses many launches.
    #[doc(hidden)]
    pub fn limit_launch_values(&self, values: usize) {
        let values = if values == 0 { LAUNCH_VALUES } else { values };
        self.launch_values.store(values, Ordering::Relaxed);
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
    // it is given, or is launched over exactly the values it indexes: radix_rounds in groups of
    // 2^(deg - 1) items whose group index plus `group_offset` stays below n / 2^deg over a buffer
    // of n values, bit_reverse_tiles in groups of 256 whose index plus `group_offset` stays below
    // n / 256 for n = 2^log_n, log_n >= 8 (each group's two tiles lie inside the n values);
    // the callers size each buffer for that many elements (n values, the power tables' 2^lo_bits
    // and 2^(bits - lo_bits) entries with `bits` checked against the transform's, one constant)
    // with the argument types of the kernel's signature.
    let mut done = ocl::Event::empty();
    unsafe { kernel.cmd().enew(&mut done).enq()? };
    Ok(done)
}
