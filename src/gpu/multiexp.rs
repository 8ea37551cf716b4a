//! G1 multiexp on one OpenCL device, over any slice of terms, so that a scheduler can hand the
//! device chunks of a larger multiexp (the CPU's [`crate::multiexp::multiexp_chunk`] is the
//! other worker).
//!
//! First version, for correctness: each work-item owns one (window, slice of terms) pair and its
//! buckets in global memory, with 8-bit signed windows; the results come back in affine form
//! (inverted on the device) and the host weighs and adds them. Coordinates cross as canonical
//! integers and are put into Montgomery form on the device.

use super::device::Device;
use super::error::GpuError;
use super::program::{build, BuiltProgram};
use super::source;
use crate::multiexp::ScalarRepr;
use blstrs::{G1Affine, G1Projective};
use group::Group;
use std::sync::Arc;

/// Limbs of an `Fq` coordinate.
const FQ_LIMBS: usize = 12;
/// Window width of this first kernel: 128 buckets of 144 bytes per work-item.
const WINDOW: usize = 8;
/// Work-items to aim for; enough to fill a large GPU, few enough for the bucket memory.
const TARGET_ITEMS: usize = 1 << 13;

/// The multiexp kernels, built for one device.
#[derive(Debug)]
pub struct MultiexpKernel {
    program: Arc<BuiltProgram>,
}

fn le_limbs(bytes: &[u8], out: &mut Vec<u32>) {
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
}

impl MultiexpKernel {
    /// Builds (or takes from the caches) the multiexp program for `device`.
    pub fn new(device: &Device) -> Result<Self, GpuError> {
        Ok(MultiexpKernel {
            program: build(device, &source::multiexp_source(), "")?,
        })
    }

    fn buffer(&self, data: &[u32]) -> Result<ocl::Buffer<u32>, GpuError> {
        Ok(ocl::Buffer::<u32>::builder()
            .queue(self.program.queue.clone())
            .len(data.len().max(1))
            .copy_host_slice(data)
            .build()?)
    }

    fn empty(&self, len: usize) -> Result<ocl::Buffer<u32>, GpuError> {
        Ok(ocl::Buffer::<u32>::builder()
            .queue(self.program.queue.clone())
            .len(len.max(1))
            .build()?)
    }

    /// `sum_i scalars[i] * bases[i]` in G1.
    pub fn multiexp_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[ScalarRepr],
    ) -> Result<G1Projective, GpuError> {
        let n = bases.len();
        if n != scalars.len() {
            return Err(GpuError::InvalidInput(format!(
                "{n} bases but {} scalars",
                scalars.len()
            )));
        }
        if n == 0 {
            return Ok(G1Projective::identity());
        }
        if n > u32::MAX as usize / 8 {
            return Err(GpuError::InvalidInput(format!(
                "{n} terms do not fit one launch"
            )));
        }
        let mut base_limbs = Vec::with_capacity(n * 2 * FQ_LIMBS);
        for b in bases {
            le_limbs(&b.x().to_bytes_le(), &mut base_limbs);
            le_limbs(&b.y().to_bytes_le(), &mut base_limbs);
        }
        let mut scalar_limbs = Vec::with_capacity(n * 8);
        for s in scalars {
            for limb in s.limbs() {
                scalar_limbs.push(*limb as u32);
                scalar_limbs.push((*limb >> 32) as u32);
            }
        }
        let windows = 256usize.div_ceil(WINDOW);
        let slices = TARGET_ITEMS.div_ceil(windows).min(n.div_ceil(64)).max(1);
        let items = windows * slices;
        let point_limbs = 3 * FQ_LIMBS;

        let bases_buf = self.buffer(&base_limbs)?;
        drop(base_limbs);
        let scalars_buf = self.buffer(&scalar_limbs)?;
        drop(scalar_limbs);
        let buckets = self.empty(items * (1 << (WINDOW - 1)) * point_limbs)?;
        let results = self.empty(items * point_limbs)?;
        let affine = self.empty(items * 2 * FQ_LIMBS)?;

        let q = self.program.queue.clone();
        let p = &self.program.program;
        let to_mont = ocl::Kernel::builder()
            .program(p)
            .name("G1_bases_to_mont")
            .queue(q.clone())
            .global_work_size(n)
            .arg(&bases_buf)
            .arg(n as u32)
            .build()?;
        launch(&to_mont)?;
        let msm = ocl::Kernel::builder()
            .program(p)
            .name("G1_multiexp")
            .queue(q.clone())
            .global_work_size(items)
            .arg(&bases_buf)
            .arg(&scalars_buf)
            .arg(&buckets)
            .arg(&results)
            .arg(n as u32)
            .arg(WINDOW as u32)
            .arg(windows as u32)
            .arg(slices as u32)
            .build()?;
        launch(&msm)?;
        let to_affine = ocl::Kernel::builder()
            .program(p)
            .name("G1_results_to_affine")
            .queue(q.clone())
            .global_work_size(items)
            .arg(&results)
            .arg(&affine)
            .arg(items as u32)
            .build()?;
        launch(&to_affine)?;
        let mut out = vec![0u32; items * 2 * FQ_LIMBS];
        affine.read(&mut out).queue(&q).enq()?;
        drop((bases_buf, scalars_buf, buckets, results, affine));

        let points = out
            .chunks_exact(2 * FQ_LIMBS)
            .map(affine_from_limbs)
            .collect::<Result<Vec<_>, _>>()?;
        let mut acc = G1Projective::identity();
        for w in (0..windows).rev() {
            for _ in 0..WINDOW {
                acc = acc.double();
            }
            for point in &points[w * slices..(w + 1) * slices] {
                acc += point;
            }
        }
        Ok(acc)
    }
}

/// A canonical affine point from the device (x = y = 0 for the identity).
fn affine_from_limbs(limbs: &[u32]) -> Result<G1Affine, GpuError> {
    if limbs.iter().all(|l| *l == 0) {
        return Ok(G1Affine::default());
    }
    // The uncompressed encoding: x then y, each 48 bytes big-endian, no flags set.
    let mut bytes = [0u8; 96];
    for (coord, out) in limbs.chunks_exact(FQ_LIMBS).zip(bytes.chunks_exact_mut(48)) {
        for (i, limb) in coord.iter().enumerate() {
            let be = limb.to_be_bytes();
            let at = 48 - 4 * (i + 1);
            out[at..at + 4].copy_from_slice(&be);
        }
    }
    Option::from(G1Affine::from_uncompressed_unchecked(&bytes))
        .ok_or_else(|| GpuError::Ocl("the device returned a point that is not on the curve".into()))
}

/// Enqueues a kernel built by this module.
#[allow(unsafe_code)]
fn launch(kernel: &ocl::Kernel) -> Result<(), GpuError> {
    // SAFETY: the kernels of ec.cl and multiexp.cl bounds-check their work-item index against
    // their count argument, and `multiexp_g1` sizes every buffer for those counts (2 * 12 limbs
    // per base, 8 per scalar, 2^(c-1) Jacobian points of 36 limbs per work-item of buckets, one
    // point per work-item of results) with the argument types of the kernels' signatures.
    unsafe { kernel.enq()? };
    Ok(())
}
