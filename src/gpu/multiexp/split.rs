//! One multiexp split across several devices ([`multiexp_split`]), in parts proportional to their
//! compute units, with the CPU computing any part whose device fails.

use super::{GpuCurve, MultiexpKernel};
use crate::gpu::error::GpuError;
use crate::multiexp::ScalarRepr;
use group::Group;

/// Where one part of a split multiexp ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitPart {
    /// The stable id of the device the part was given to.
    pub device: String,
    /// Its terms: `start..end` of the whole.
    pub terms: std::ops::Range<usize>,
    /// Whether the device computed it; `false` means it failed (logged) and the CPU did.
    pub on_gpu: bool,
}

/// `sum_i scalars[i] * bases[i]` split across `kernels` (one device each), in contiguous parts
/// proportional to the devices' compute units, run side by side. A part whose device fails is
/// computed on the CPU ([`crate::multiexp::multiexp_chunk`]) and reported as such.
pub fn multiexp_split<G: GpuCurve>(
    kernels: &[&MultiexpKernel],
    bases: &[G],
    scalars: &[ScalarRepr],
) -> Result<(G::Curve, Vec<SplitPart>), GpuError> {
    let n = bases.len();
    if n != scalars.len() {
        return Err(GpuError::InvalidInput(format!(
            "{n} bases but {} scalars",
            scalars.len()
        )));
    }
    if kernels.is_empty() {
        return Err(GpuError::NoDevice(": no kernels to split over".into()));
    }
    let weights: Vec<u64> = kernels
        .iter()
        .map(|k| k.device.compute_units.max(1) as u64)
        .collect();
    let total: u64 = weights.iter().sum();
    let mut bounds = vec![0usize];
    let mut acc = 0u64;
    for w in &weights {
        acc += w;
        bounds.push((n as u128 * acc as u128 / total as u128) as usize);
    }
    let results: Vec<(G::Curve, SplitPart)> = std::thread::scope(|scope| {
        let handles: Vec<_> = kernels
            .iter()
            .zip(bounds.windows(2))
            .map(|(kernel, w)| {
                let range = w[0]..w[1];
                scope.spawn(move || {
                    let on_device = kernel.multiexp(&bases[range.clone()], &scalars[range.clone()]);
                    let (sum, on_gpu) = match on_device {
                        Ok(sum) => (sum, true),
                        Err(e) => {
                            log::warn!(
                                "gpu: {} multiexp part {range:?} failed on {} ({e}); computing it \
                                 on the CPU",
                                G::NAME,
                                kernel.device.name
                            );
                            let sum =
                                crate::multiexp::multiexp_chunk(bases, scalars, range.clone())
                                    .map_err(|e| {
                                        GpuError::InvalidInput(format!(
                                            "{} bases but {} scalars",
                                            e.bases, e.scalars
                                        ))
                                    })?;
                            (sum, false)
                        }
                    };
                    Ok((
                        sum,
                        SplitPart {
                            device: kernel.device.id.clone(),
                            terms: range,
                            on_gpu,
                        },
                    ))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| GpuError::Ocl("a multiexp thread panicked".into()))?
            })
            .collect::<Result<_, GpuError>>()
    })?;
    let mut sum = G::Curve::identity();
    let mut parts = Vec::with_capacity(results.len());
    for (s, part) in results {
        sum += s;
        parts.push(part);
    }
    Ok((sum, parts))
}
