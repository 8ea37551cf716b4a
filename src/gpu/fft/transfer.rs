//! Values between the host and the device: `Fr` elements cross as blst's Montgomery limbs (the
//! device's own form), through the pinned staging memory, checked below `r` on the way back.

use super::{DeviceValues, FftKernel, LIMBS};
use crate::gpu::buffer::{below, write_limbs, TrackedBuffer};
use crate::gpu::error::GpuError;
use crate::gpu::staging::{Staging, Take};
use crate::multicore;
use crate::multiexp::ScalarRepr;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// How a quotient's coefficients come back from the device: as field elements, or as the
/// canonical integers a multiexp reads ([`ScalarRepr`]). The second costs nothing on the device
/// (its last scaling also divides by the Montgomery radix `R`, so that the device's form of each
/// value, `h R^-1 * R`, is `h` itself) and saves the prover a pass over the coefficients on the
/// host: 110 ms at 2^25 values between the quotient and the H multiexp, the device idle (H200),
/// and a second vector of their size.
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

/// Writes the Montgomery limbs of `values` (blst's form with R = 2^256, which is the device's: a
/// copy, no arithmetic) into `out`, flattened, and zeros after them. Serial: the staging memory
/// is filled by threads of its own, a part each, which leaves the thread pool to the prover's
/// other work.
pub(super) fn to_device(values: &[Scalar], out: &mut [u32]) {
    out[values.len() * LIMBS..].fill(0);
    for (limbs, v) in out.chunks_exact_mut(LIMBS).zip(values) {
        write_limbs(&blst::blst_fr::from(*v).l, limbs);
    }
}

/// The value of `LIMBS` Montgomery limbs (checked below `r` by the caller).
pub(super) fn scalar_from_limbs(limbs: &[u32]) -> Scalar {
    let mut raw = blst::blst_fr::default();
    for (limb, pair) in raw.l.iter_mut().zip(limbs.chunks_exact(2)) {
        *limb = pair[0] as u64 | (pair[1] as u64) << 32;
    }
    Scalar::from(raw)
}

/// Values from Montgomery limbs; a limb pattern that is not below `r` is a device fault.
pub(super) fn from_device(limbs: &[u32], values: &mut [Scalar]) -> Result<(), GpuError> {
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

/// Appends the values of device `limbs` to `values`, on all threads: a serial zeroing before
/// [`from_device`] wrote each slot twice.
pub(super) fn append_from_device<V: QuotientValue>(
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

impl FftKernel {
    /// `values` in Montgomery form on the device, zero-padded to `len` values.
    pub(super) fn upload(
        &self,
        values: &[Scalar],
        len: usize,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<DeviceValues<'_>, GpuError> {
        self.upload_through(values, len, interrupt, false)
    }

    /// [`FftKernel::upload`] on the program's queue, or with `transfer` on its transfer queue.
    pub(super) fn upload_through(
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
    pub(super) fn download(
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
    pub(super) fn download_into<V: QuotientValue>(
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
    pub(super) fn download_with(
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
}
