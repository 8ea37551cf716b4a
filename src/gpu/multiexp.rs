//! G1 and G2 multiexp on one OpenCL device, over any slice of terms, so that a scheduler can hand the
//! device chunks of a larger multiexp (the CPU's [`crate::multiexp::multiexp_chunk`] is the
//! other worker).
//!
//! First version, for correctness: each work-item owns one (window, slice of terms) pair and its
//! buckets in global memory, with 8-bit signed windows; the results come back in affine form
//! (inverted on the device) and the host weighs and adds them. Coordinates cross as canonical
//! integers and are put into Montgomery form on the device.

use super::buffer::TrackedBuffer;
use super::device::Device;
use super::error::GpuError;
use super::program::{build, BuiltProgram};
use super::source;
use crate::multiexp::{CurveAffine, ScalarRepr};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::prime::PrimeCurveAffine;
use group::Group;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Limbs of an `Fq` element.
const FQ_LIMBS: usize = 12;

/// A group the multiexp kernels handle: how its affine points cross to and from the device.
pub trait GpuCurve: CurveAffine {
    /// Prefix of the group's kernels (`G1`, `G2`).
    const NAME: &'static str;
    /// 32-bit limbs of one coordinate (12 in `Fq`, 24 in `Fq2`).
    const COORD_LIMBS: usize;
    /// Appends the canonical limbs of `x` then `y` (zeros for the identity).
    fn push_coords(&self, out: &mut Vec<u32>);
    /// The point from canonical limbs of `x` and `y` (all zero for the identity).
    fn from_coords(limbs: &[u32]) -> Result<Self, GpuError>;
}

/// Writes `FQ_LIMBS` little-endian limbs as 48 big-endian bytes.
fn fq_be(limbs: &[u32], out: &mut [u8]) {
    for (i, limb) in limbs.iter().enumerate() {
        let at = 48 - 4 * (i + 1);
        out[at..at + 4].copy_from_slice(&limb.to_be_bytes());
    }
}

fn not_on_curve() -> GpuError {
    GpuError::Ocl("the device returned a point that is not on the curve".into())
}

impl GpuCurve for G1Affine {
    const NAME: &'static str = "G1";
    const COORD_LIMBS: usize = FQ_LIMBS;

    fn push_coords(&self, out: &mut Vec<u32>) {
        le_limbs(&self.x().to_bytes_le(), out);
        le_limbs(&self.y().to_bytes_le(), out);
    }

    fn from_coords(limbs: &[u32]) -> Result<Self, GpuError> {
        if limbs.iter().all(|l| *l == 0) {
            return Ok(G1Affine::identity());
        }
        // The uncompressed encoding: x then y, 48 bytes big-endian each, no flags set.
        let mut bytes = [0u8; 96];
        fq_be(&limbs[..FQ_LIMBS], &mut bytes[..48]);
        fq_be(&limbs[FQ_LIMBS..], &mut bytes[48..]);
        Option::from(G1Affine::from_uncompressed_unchecked(&bytes)).ok_or_else(not_on_curve)
    }
}

impl GpuCurve for G2Affine {
    const NAME: &'static str = "G2";
    const COORD_LIMBS: usize = 2 * FQ_LIMBS;

    fn push_coords(&self, out: &mut Vec<u32>) {
        let (x, y) = (self.x(), self.y());
        le_limbs(&x.c0().to_bytes_le(), out);
        le_limbs(&x.c1().to_bytes_le(), out);
        le_limbs(&y.c0().to_bytes_le(), out);
        le_limbs(&y.c1().to_bytes_le(), out);
    }

    fn from_coords(limbs: &[u32]) -> Result<Self, GpuError> {
        if limbs.iter().all(|l| *l == 0) {
            return Ok(G2Affine::identity());
        }
        // The uncompressed encoding: x.c1, x.c0, y.c1, y.c0, 48 bytes big-endian each.
        let mut bytes = [0u8; 192];
        let part = |i: usize| &limbs[i * FQ_LIMBS..(i + 1) * FQ_LIMBS];
        fq_be(part(1), &mut bytes[..48]);
        fq_be(part(0), &mut bytes[48..96]);
        fq_be(part(3), &mut bytes[96..144]);
        fq_be(part(2), &mut bytes[144..]);
        Option::from(G2Affine::from_uncompressed_unchecked(&bytes)).ok_or_else(not_on_curve)
    }
}
/// Window width of this first kernel: 128 buckets of 144 bytes per work-item.
const WINDOW: usize = 8;
/// Work-items to aim for; enough to fill a large GPU, few enough for the bucket memory.
const TARGET_ITEMS: usize = 1 << 13;

/// The multiexp kernels for one device; each group's program is built at its first use (and then
/// comes from the caches).
#[derive(Debug)]
pub struct MultiexpKernel {
    device: Device,
    /// Test hook: fail every multiexp as a lost device would.
    fail: AtomicBool,
    /// Bytes of this kernel's live device buffers.
    live: AtomicU64,
}

fn le_limbs(bytes: &[u8], out: &mut Vec<u32>) {
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
    );
}

impl MultiexpKernel {
    /// The multiexp kernels for `device`: builds (or takes from the caches) the G1 and G2
    /// programs, side by side, so that a device that cannot build them fails here and the first
    /// multiexp does not wait for a compiler.
    pub fn new(device: &Device) -> Result<Self, GpuError> {
        let kernel = MultiexpKernel {
            device: device.clone(),
            fail: AtomicBool::new(false),
            live: AtomicU64::new(0),
        };
        std::thread::scope(|scope| {
            let g2 = scope.spawn(|| kernel.program("G2"));
            kernel.program("G1")?;
            g2.join()
                .map_err(|_| GpuError::Ocl("the G2 build thread panicked".into()))?
        })?;
        Ok(kernel)
    }

    /// Bytes of device memory held by multiexps running on this kernel now (0 between calls:
    /// every call frees its buffers before it returns).
    pub fn live_device_bytes(&self) -> u64 {
        self.live.load(Ordering::Relaxed)
    }

    /// The device these kernels run on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Makes every later multiexp on this kernel fail with a device error (or stop failing), to
    /// test the callers' CPU fallback.
    #[doc(hidden)]
    pub fn inject_failures(&self, on: bool) {
        self.fail.store(on, Ordering::Relaxed);
    }

    fn program(&self, group: &str) -> Result<Arc<BuiltProgram>, GpuError> {
        build(&self.device, &source::multiexp_source(group), "")
    }

    /// `sum_i scalars[i] * bases[i]` in G1.
    pub fn multiexp_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[ScalarRepr],
    ) -> Result<G1Projective, GpuError> {
        self.multiexp(bases, scalars)
    }

    /// `sum_i scalars[i] * bases[i]` in G2.
    pub fn multiexp_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[ScalarRepr],
    ) -> Result<G2Projective, GpuError> {
        self.multiexp(bases, scalars)
    }

    /// `sum_i scalars[i] * bases[i]` in the group of `G`.
    pub fn multiexp<G: GpuCurve>(
        &self,
        bases: &[G],
        scalars: &[ScalarRepr],
    ) -> Result<G::Curve, GpuError> {
        self.multiexp_interruptible(bases, scalars, &|| false)
    }

    /// [`MultiexpKernel::multiexp`] that asks `interrupt` before each kernel launch and, when it
    /// says yes, frees its buffers and returns [`GpuError::Interrupted`].
    pub fn multiexp_interruptible<G: GpuCurve>(
        &self,
        bases: &[G],
        scalars: &[ScalarRepr],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<G::Curve, GpuError> {
        let n = bases.len();
        if n != scalars.len() {
            return Err(GpuError::InvalidInput(format!(
                "{n} bases but {} scalars",
                scalars.len()
            )));
        }
        if self.fail.load(Ordering::Relaxed) {
            return Err(GpuError::Ocl(format!(
                "injected failure on {}",
                self.device.name
            )));
        }
        if n == 0 {
            return Ok(G::Curve::identity());
        }
        if n > u32::MAX as usize / 8 {
            return Err(GpuError::InvalidInput(format!(
                "{n} terms do not fit one launch"
            )));
        }
        let affine_limbs = 2 * G::COORD_LIMBS;
        let point_limbs = 3 * G::COORD_LIMBS;
        let mut base_limbs = Vec::with_capacity(n * affine_limbs);
        for b in bases {
            b.push_coords(&mut base_limbs);
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

        let built = self.program(G::NAME)?;
        let q = built.queue.clone();
        let p = &built.program;
        let live = &self.live;
        let bases_buf = TrackedBuffer::new(&q, base_limbs.len(), Some(&base_limbs), live)?;
        drop(base_limbs);
        let scalars_buf = TrackedBuffer::new(&q, scalar_limbs.len(), Some(&scalar_limbs), live)?;
        drop(scalar_limbs);
        let buckets =
            TrackedBuffer::new(&q, items * (1 << (WINDOW - 1)) * point_limbs, None, live)?;
        let results = TrackedBuffer::new(&q, items * point_limbs, None, live)?;
        let affine = TrackedBuffer::new(&q, items * affine_limbs, None, live)?;
        let check = || {
            if interrupt() {
                Err(GpuError::Interrupted)
            } else {
                Ok(())
            }
        };

        let to_mont = ocl::Kernel::builder()
            .program(p)
            .name(format!("{}_bases_to_mont", G::NAME))
            .queue(q.clone())
            .global_work_size(n)
            .arg(&*bases_buf)
            .arg(n as u32)
            .build()?;
        check()?;
        launch(&to_mont)?;
        let msm = ocl::Kernel::builder()
            .program(p)
            .name(format!("{}_multiexp", G::NAME))
            .queue(q.clone())
            .global_work_size(items)
            .arg(&*bases_buf)
            .arg(&*scalars_buf)
            .arg(&*buckets)
            .arg(&*results)
            .arg(n as u32)
            .arg(WINDOW as u32)
            .arg(windows as u32)
            .arg(slices as u32)
            .build()?;
        check()?;
        launch(&msm)?;
        let to_affine = ocl::Kernel::builder()
            .program(p)
            .name(format!("{}_results_to_affine", G::NAME))
            .queue(q.clone())
            .global_work_size(items)
            .arg(&*results)
            .arg(&*affine)
            .arg(items as u32)
            .build()?;
        check()?;
        launch(&to_affine)?;
        let mut out = vec![0u32; items * affine_limbs];
        affine.read(&mut out).queue(&q).enq()?;
        q.finish()?;
        // Every device buffer is freed here, before the host's share of the work.
        drop((bases_buf, scalars_buf, buckets, results, affine));

        let points = out
            .chunks_exact(affine_limbs)
            .map(G::from_coords)
            .collect::<Result<Vec<_>, _>>()?;
        let mut acc = G::Curve::identity();
        for w in (0..windows).rev() {
            for _ in 0..WINDOW {
                acc = acc.double();
            }
            for point in &points[w * slices..(w + 1) * slices] {
                point.add_to(&mut acc);
            }
        }
        Ok(acc)
    }
}

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

/// Enqueues a kernel built by this module.
#[allow(unsafe_code)]
fn launch(kernel: &ocl::Kernel) -> Result<(), GpuError> {
    // SAFETY: the kernels of ec.cl and multiexp.cl bounds-check their work-item index against
    // their count argument, and `multiexp` sizes every buffer for those counts (two coordinates of
    // 12 limbs per base in G1, 24 in G2; 8 limbs per scalar; 2^(c-1) Jacobian points per work-item
    // of buckets; one point per work-item of results) with the argument types of the kernels' signatures.
    unsafe { kernel.enq()? };
    Ok(())
}
