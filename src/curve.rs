//! What the multiexp and the fixed-base tables need from a group: mixed addition and a batch
//! conversion to affine form, for G1 and G2 of BLS12-381.
//!
//! `blstrs` stores projective points in Jacobian coordinates, `(X, Y, Z)` for the affine point
//! `(X / Z^2, Y / Z^3)`, and converts them to affine one inversion at a time; the batch conversion
//! here shares one field inversion among a whole slice (Montgomery's trick), which is what makes
//! parameter generation fast.

use crate::batch_affine;
use crate::scalar::ScalarRepr;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;
use std::sync::atomic::AtomicBool;

/// Points are converted to affine form in slices of this many, one inversion per slice.
const NORMALIZE_CHUNK: usize = 1024;

mod sealed {
    /// Only G1 and G2 of BLS12-381 implement [`super::CurveAffine`].
    pub trait Sealed {}
    impl Sealed for blstrs::G1Affine {}
    impl Sealed for blstrs::G2Affine {}
}

/// An affine point of G1 or G2 that can be a multiexp base (implemented for those two only).
pub trait CurveAffine: PrimeCurveAffine<Scalar = Scalar> + sealed::Sealed {
    /// `acc += self`, the cheaper mixed (projective plus affine) addition.
    fn add_to(&self, acc: &mut Self::Curve);

    /// `acc -= self`.
    fn sub_from(&self, acc: &mut Self::Curve);

    /// Converts `points` to affine form on this thread, one inversion for all of them.
    fn normalize_serial(points: &[Self::Curve], out: &mut [Self]);

    /// One window's bucket sum of a multiexp, buckets accumulated in affine form
    /// (batched inversions, see `src/batch_affine.rs`); `finite[i]` says whether `bases[i]` is
    /// other than the identity (`multiexp::finite_flags`); `None` when `stop` was set
    /// before the end.
    fn window_sum_affine(
        bases: &[Self],
        finite: &[bool],
        scalars: &[ScalarRepr],
        w: usize,
        c: usize,
        stop: Option<&AtomicBool>,
    ) -> Option<Self::Curve>;

    /// `out[i] = scalars[i] * P` in affine form from a fixed-base table of `P` (windows of width
    /// `c`, see `src/fixed_base.rs`; `P` not the identity, so no table point is), accumulated in
    /// affine form with batched inversions; `out` holds the identity on entry.
    fn fixed_base_affine(table: &[Self], c: usize, scalars: &[ScalarRepr], out: &mut [Self]);
}

impl CurveAffine for G1Affine {
    fn add_to(&self, acc: &mut G1Projective) {
        *acc += self;
    }

    fn sub_from(&self, acc: &mut G1Projective) {
        *acc -= self;
    }

    fn normalize_serial(points: &[G1Projective], out: &mut [Self]) {
        // blstrs does not export its field types, so they are inferred from the closures.
        normalize_with(
            points,
            out,
            |p| [p.x(), p.y(), p.z()],
            |x, y| G1Affine::from_raw_unchecked(x, y, false),
        );
    }

    fn fixed_base_affine(table: &[Self], c: usize, scalars: &[ScalarRepr], out: &mut [Self]) {
        batch_affine::fixed_base_products(
            table,
            c,
            scalars,
            out,
            |p: &G1Affine| (p.x(), p.y()),
            |x, y| G1Affine::from_raw_unchecked(x, y, false),
        )
    }

    fn window_sum_affine(
        bases: &[Self],
        finite: &[bool],
        scalars: &[ScalarRepr],
        w: usize,
        c: usize,
        stop: Option<&AtomicBool>,
    ) -> Option<G1Projective> {
        batch_affine::window_sum(
            bases,
            finite,
            scalars,
            w,
            c,
            stop,
            |p: &G1Affine| (p.x(), p.y()),
            |x, y| G1Affine::from_raw_unchecked(x, y, false),
        )
    }
}

impl CurveAffine for G2Affine {
    fn add_to(&self, acc: &mut G2Projective) {
        *acc += self;
    }

    fn sub_from(&self, acc: &mut G2Projective) {
        *acc -= self;
    }

    fn normalize_serial(points: &[G2Projective], out: &mut [Self]) {
        normalize_with(
            points,
            out,
            |p| [p.x(), p.y(), p.z()],
            |x, y| G2Affine::from_raw_unchecked(x, y, false),
        );
    }

    fn fixed_base_affine(table: &[Self], c: usize, scalars: &[ScalarRepr], out: &mut [Self]) {
        batch_affine::fixed_base_products(
            table,
            c,
            scalars,
            out,
            |p: &G2Affine| (p.x(), p.y()),
            |x, y| G2Affine::from_raw_unchecked(x, y, false),
        )
    }

    fn window_sum_affine(
        bases: &[Self],
        finite: &[bool],
        scalars: &[ScalarRepr],
        w: usize,
        c: usize,
        stop: Option<&AtomicBool>,
    ) -> Option<G2Projective> {
        batch_affine::window_sum(
            bases,
            finite,
            scalars,
            w,
            c,
            stop,
            |p: &G2Affine| (p.x(), p.y()),
            |x, y| G2Affine::from_raw_unchecked(x, y, false),
        )
    }
}

/// Converts `points` to affine form, in parallel, sharing one inversion per chunk.
pub fn batch_normalize<G: CurveAffine>(points: &[G::Curve]) -> Vec<G> {
    let mut out = vec![G::identity(); points.len()];
    out.par_chunks_mut(NORMALIZE_CHUNK)
        .zip(points.par_chunks(NORMALIZE_CHUNK))
        .for_each(|(out, points)| G::normalize_serial(points, out));
    out
}

/// Montgomery's trick over Jacobian coordinates `(X, Y, Z) -> (X / Z^2, Y / Z^3)`.
fn normalize_with<P, A, F>(
    points: &[P],
    out: &mut [A],
    jacobian: impl Fn(&P) -> [F; 3],
    from_xy: impl Fn(F, F) -> A,
) where
    P: Group,
    A: PrimeCurveAffine,
    F: Field,
{
    // prefix[i] = product of the non-zero Z of points[..i]
    let mut prefix = Vec::with_capacity(points.len());
    let mut acc = F::ONE;
    for p in points {
        prefix.push(acc);
        let [_, _, z] = jacobian(p);
        if !bool::from(z.is_zero()) {
            acc *= z;
        }
    }
    // acc is a product of non-zero elements, so it is invertible.
    let mut inv = acc.invert().unwrap_or(F::ZERO);
    for ((p, before), out) in points.iter().zip(prefix).zip(out.iter_mut()).rev() {
        if bool::from(p.is_identity()) {
            *out = A::identity();
            continue;
        }
        let [x, y, z] = jacobian(p);
        let z_inv = inv * before;
        inv *= z;
        let z_inv2 = z_inv.square();
        *out = from_xy(x * z_inv2, y * z_inv2 * z_inv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Curve;
    use rand_chacha::rand_core::SeedableRng;

    fn check<G: CurveAffine>()
    where
        G::Curve: Curve<AffineRepr = G>,
    {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut points: Vec<G::Curve> = (0..3000).map(|_| G::Curve::random(&mut rng)).collect();
        points[0] = G::Curve::identity();
        points[1500] = G::Curve::identity();
        points[2999] = G::Curve::identity();
        let fast = batch_normalize::<G>(&points);
        for (p, a) in points.iter().zip(&fast) {
            assert_eq!(p.to_affine(), *a);
        }
    }

    #[test]
    fn batch_normalize_equals_one_at_a_time() {
        check::<G1Affine>();
        check::<G2Affine>();
    }
}
