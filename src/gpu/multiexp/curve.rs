//! How the points of G1 and G2 cross to and from the device ([`GpuCurve`]): bases go up as blst's
//! Montgomery limbs, and the few result points come back as Jacobian limbs, each checked to be on
//! the curve.

use super::pieces::PieceSums;
use crate::bases::Bases;
use crate::gpu::buffer::write_limbs;
use crate::gpu::error::GpuError;
use crate::multiexp::CurveAffine;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
use group::{Group, UncompressedEncoding};

/// Limbs of an `Fq` element.
pub(super) const FQ_LIMBS: usize = 12;

/// A multiexp's bases of either group, for what cannot take a generic call (a device's engine,
/// a trait object).
#[derive(Clone, Copy, Debug)]
pub enum AnyBases<'a> {
    /// Points of G1.
    G1(Bases<'a, G1Affine>),
    /// Points of G2.
    G2(Bases<'a, G2Affine>),
}

/// The sums of a multiexp call of either group ([`AnyBases`]).
#[derive(Debug)]
pub enum AnySums {
    /// Sums in G1.
    G1(PieceSums<G1Projective>),
    /// Sums in G2.
    G2(PieceSums<G2Projective>),
}

/// A group the multiexp kernels handle: how its affine points cross to and from the device.
pub trait GpuCurve: CurveAffine + UncompressedEncoding {
    /// Prefix of the group's kernels (`G1`, `G2`).
    const NAME: &'static str;
    /// 32-bit limbs of one coordinate (12 in `Fq`, 24 in `Fq2`).
    const COORD_LIMBS: usize;
    /// Bucket entries one launch of `msm_segments` sums: about 8 ms on the H200 (2^23 G1 entries
    /// take 4.3 ms and 2^21 G2 entries 3.7 ms there, at segments of 64 and 32 entries;
    /// docs/BENCHMARKS.md). The launches of a call are waited for one by one, probing, so a
    /// higher priority waits for at most one of them (or, near the end of a piece, for what is
    /// left of it by an estimate, up to a grace of 10 ms by default, which would be thrown away
    /// otherwise). Longer launches allow longer segments (`LAUNCH_SEGMENTS` work-items a
    /// launch), and a segment of 64 G1 entries sums about 8% slower than one of 512, with more
    /// parts to fold.
    const LAUNCH_ENTRIES: usize;
    /// Work-items one launch of `msm_segments` aims at (segments of 16 to 512 entries): enough
    /// to fill the device, while each added segment costs two more parts to fold. A G2 work-item
    /// holds twice the registers of a G1 one, so fewer fill the device.
    const LAUNCH_SEGMENTS: usize;
    /// Terms of one piece of a call
    /// ([`MultiexpKernel::multiexp_in_pieces`](super::MultiexpKernel::multiexp_in_pieces)): about
    /// 40-50 ms of device work on the H200, so that a preempted call loses about half that on
    /// average, and large enough that the window stays at 16 bits and a piece's fixed steps (the
    /// count's round trip, the folds and the weighing) are a small part of it.
    const PIECE_TERMS: usize;
    /// Writes the `2 * COORD_LIMBS` 32-bit limbs of `x` then `y` in Montgomery form (R = 2^384,
    /// blst's form and the device's), zeros for the identity, straight into `out` (the staging
    /// memory: no intermediate vector, as this runs for every base of every call).
    fn write_coords(&self, out: &mut [u32]);
    /// `bases` as [`AnyBases`].
    fn any_bases(bases: Bases<'_, Self>) -> AnyBases<'_>;
    /// The sums of this group in `sums` (an engine that answers in the other group is faulty:
    /// its call counts as failed).
    fn from_any(sums: AnySums) -> PieceSums<Self::Curve>;
    /// The projective point from the device's Jacobian `x`, `y` and `z` in Montgomery form (R =
    /// 2^384, blst's own), each below P (the caller checks); `z = 0` is the identity. A point
    /// off the curve (a faulty device) is an error.
    fn from_jacobian(limbs: &[u32]) -> Result<Self::Curve, GpuError>;
}

/// Reads `FQ_LIMBS` little-endian 32-bit limbs into blst's six 64-bit ones.
fn read_fq(limbs: &[u32], out: &mut blst::blst_fp) {
    for (l, pair) in out.l.iter_mut().zip(limbs.chunks_exact(2)) {
        *l = pair[0] as u64 | (pair[1] as u64) << 32;
    }
}

fn checked<P: Group>(point: P, on_curve: bool) -> Result<P, GpuError> {
    if on_curve {
        Ok(point)
    } else {
        Err(not_on_curve())
    }
}

fn wrong_group() -> GpuError {
    GpuError::WrongResult("sums of the other group".into())
}

fn not_on_curve() -> GpuError {
    GpuError::WrongResult("a point that is not on the curve".into())
}

impl GpuCurve for G1Affine {
    const NAME: &'static str = "G1";

    fn any_bases(bases: Bases<'_, Self>) -> AnyBases<'_> {
        AnyBases::G1(bases)
    }

    fn from_any(sums: AnySums) -> PieceSums<G1Projective> {
        match sums {
            AnySums::G1(sums) => sums,
            AnySums::G2(_) => PieceSums::refused(wrong_group()),
        }
    }

    const COORD_LIMBS: usize = FQ_LIMBS;
    const LAUNCH_ENTRIES: usize = 1 << 24;
    const LAUNCH_SEGMENTS: usize = 1 << 17;
    const PIECE_TERMS: usize = 1 << 22;

    fn write_coords(&self, out: &mut [u32]) {
        let raw: &blst::blst_p1_affine = self.as_ref();
        let (x, y) = out.split_at_mut(FQ_LIMBS);
        write_limbs(&raw.x.l, x);
        write_limbs(&raw.y.l, y);
    }

    fn from_jacobian(limbs: &[u32]) -> Result<G1Projective, GpuError> {
        let mut point = G1Projective::identity();
        let raw: &mut blst::blst_p1 = point.as_mut();
        for (i, fp) in [&mut raw.x, &mut raw.y, &mut raw.z].into_iter().enumerate() {
            read_fq(&limbs[i * FQ_LIMBS..(i + 1) * FQ_LIMBS], fp);
        }
        let on_curve = bool::from(point.is_on_curve());
        checked(point, on_curve)
    }
}

impl GpuCurve for G2Affine {
    const NAME: &'static str = "G2";

    fn any_bases(bases: Bases<'_, Self>) -> AnyBases<'_> {
        AnyBases::G2(bases)
    }

    fn from_any(sums: AnySums) -> PieceSums<G2Projective> {
        match sums {
            AnySums::G2(sums) => sums,
            AnySums::G1(_) => PieceSums::refused(wrong_group()),
        }
    }

    const COORD_LIMBS: usize = 2 * FQ_LIMBS;
    const LAUNCH_ENTRIES: usize = 1 << 22;
    const LAUNCH_SEGMENTS: usize = 1 << 16;
    const PIECE_TERMS: usize = 1 << 21;

    fn write_coords(&self, out: &mut [u32]) {
        let raw: &blst::blst_p2_affine = self.as_ref();
        for (fp, part) in raw
            .x
            .fp
            .iter()
            .chain(&raw.y.fp)
            .zip(out.chunks_exact_mut(FQ_LIMBS))
        {
            write_limbs(&fp.l, part);
        }
    }

    fn from_jacobian(limbs: &[u32]) -> Result<G2Projective, GpuError> {
        let mut point = G2Projective::identity();
        let raw: &mut blst::blst_p2 = point.as_mut();
        // Each Fq2 coordinate is c0 then c1, on the device as in blst.
        let fps = [&mut raw.x, &mut raw.y, &mut raw.z]
            .into_iter()
            .flat_map(|c| c.fp.iter_mut());
        for (fp, part) in fps.zip(limbs.chunks_exact(FQ_LIMBS)) {
            read_fq(part, fp);
        }
        let on_curve = bool::from(point.is_on_curve());
        checked(point, on_curve)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_points_come_back_in_jacobian_form_and_are_checked() {
        use super::{GpuCurve, FQ_LIMBS};
        use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
        use group::Group;
        // A point as the device keeps it: blst's Jacobian limbs, split into 32-bit ones.
        fn limbs_of(fps: &[&blst::blst_fp]) -> Vec<u32> {
            let mut out = vec![0u32; fps.len() * FQ_LIMBS];
            for (fp, part) in fps.iter().zip(out.chunks_exact_mut(FQ_LIMBS)) {
                crate::gpu::buffer::write_limbs(&fp.l, part);
            }
            out
        }
        let p = G1Projective::generator() * Scalar::from(12345u64) + G1Projective::generator();
        let raw: &blst::blst_p1 = p.as_ref();
        let mut limbs = limbs_of(&[&raw.x, &raw.y, &raw.z]);
        assert_eq!(G1Affine::from_jacobian(&limbs).unwrap(), p);
        let q = G2Projective::generator() * Scalar::from(777u64);
        let raw: &blst::blst_p2 = q.as_ref();
        let fps: Vec<&blst::blst_fp> = [&raw.x, &raw.y, &raw.z]
            .into_iter()
            .flat_map(|c| c.fp.iter())
            .collect();
        assert_eq!(G2Affine::from_jacobian(&limbs_of(&fps)).unwrap(), q);
        // The identity (z = 0) is accepted; a changed limb is a wrong result.
        let zero = G1Projective::identity();
        let raw: &blst::blst_p1 = zero.as_ref();
        assert!(bool::from(
            G1Affine::from_jacobian(&limbs_of(&[&raw.x, &raw.y, &raw.z]))
                .unwrap()
                .is_identity()
        ));
        limbs[3] ^= 1;
        assert!(matches!(
            G1Affine::from_jacobian(&limbs),
            Err(crate::gpu::GpuError::WrongResult(_))
        ));
        // Coordinates at or above P are caught before (blst would take them on trust).
        let p = crate::gpu::source::fq().p;
        let mut less = p.clone();
        less[0] -= 1;
        let mut more = p.clone();
        more[FQ_LIMBS - 1] += 1;
        use crate::gpu::buffer::below;
        assert!(below(&less, &p) && !below(&p, &p) && !below(&more, &p));
    }
}
