//! Many scalar multiplications of one fixed base, as parameter generation needs (millions of
//! multiples of the two generators).
//!
//! A table holds `(j + 1) * 2^(w * i) * P` for every window `i` of width `w` and every
//! `j < 2^(w-1)`, in affine form. With the signed-window digits of [`crate::multiexp`], a product
//! `s * P` is then one mixed addition per window and no doublings: 16 additions for `w = 16`,
//! against about 255 doublings and 50 additions for a windowed double-and-add (bellman's wNAF).

use crate::curve::{batch_normalize, CurveAffine};
use crate::multiexp::ScalarRepr;
use blstrs::Scalar;
use group::Group;
use rayon::prelude::*;

/// Products accumulated together by [`FixedBaseTable::mul_all`]: two batches of
/// `batch_affine::BATCH` additions per window.
const AFFINE_SLICE: usize = 1024;

/// Widest window used: the table then holds `16 * 2^15` points (48 MiB for G1, 96 MiB for G2).
const MAX_WINDOW: usize = 16;

/// Precomputed multiples of one base.
pub(crate) struct FixedBaseTable<G: CurveAffine> {
    window: usize,
    /// `windows * 2^(window - 1)` points, window by window.
    table: Vec<G>,
}

impl<G: CurveAffine> FixedBaseTable<G> {
    /// A table for about `count` multiplications of `base`: the window minimises the table's cost
    /// plus the multiplications' cost, `W * 2^(w-1) + count * W` additions.
    pub(crate) fn new(base: G::Curve, count: usize) -> Self {
        let window = (2..=MAX_WINDOW)
            .min_by_key(|w| 256usize.div_ceil(*w) * ((1usize << (w - 1)) + count))
            .unwrap_or(MAX_WINDOW);
        let windows = 256usize.div_ceil(window);
        let row = 1usize << (window - 1);
        // rows[i] = 2^(w * i) * base
        let mut starts = Vec::with_capacity(windows);
        let mut p = base;
        for _ in 0..windows {
            starts.push(p);
            for _ in 0..window {
                p = p.double();
            }
        }
        let mut projective = vec![G::Curve::identity(); windows * row];
        projective
            .par_chunks_mut(row)
            .zip(&starts)
            .for_each(|(row, start)| {
                let mut acc = G::Curve::identity();
                for entry in row {
                    acc += start;
                    *entry = acc;
                }
            });
        FixedBaseTable {
            window,
            table: batch_normalize::<G>(&projective),
        }
    }

    /// `[s * base for s in scalars]` in affine form, in parallel: slices of [`AFFINE_SLICE`]
    /// products accumulated in affine form, each window's additions sharing inversions
    /// (`src/batch_affine.rs`). Mixed additions into projective sums, converted to affine form
    /// afterwards, make the whole setup take 1.56x as long (2^17 and 2^18 constraints on the
    /// 2-core development machine; docs/BENCHMARKS.md). `finished` is told the size of each
    /// slice as it is done, from the thread that did it.
    pub(crate) fn mul_all(&self, scalars: &[Scalar], finished: &(dyn Fn(usize) + Sync)) -> Vec<G> {
        let mut out = vec![G::identity(); scalars.len()];
        // The identity's table holds only the identity, as do its products (`out` already).
        if self
            .table
            .first()
            .is_none_or(|p| bool::from(p.is_identity()))
        {
            finished(scalars.len());
            return out;
        }
        out.par_chunks_mut(AFFINE_SLICE)
            .zip(scalars.par_chunks(AFFINE_SLICE))
            .for_each(|(out, scalars)| {
                let reprs: Vec<ScalarRepr> = scalars.iter().map(ScalarRepr::from).collect();
                G::fixed_base_affine(&self.table, self.window, &reprs, out);
                finished(out.len());
            });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use ff::Field;
    use group::prime::PrimeCurveAffine;
    use group::Curve;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn table_products_equal_scalar_multiplication() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut scalars: Vec<Scalar> = (0..40).map(|_| Scalar::random(&mut rng)).collect();
        scalars.extend([Scalar::ZERO, Scalar::ONE, -Scalar::ONE]);
        let p = G1Projective::random(&mut rng);
        for count in [1, 1000, 1 << 20] {
            let table = FixedBaseTable::<G1Affine>::new(p, count);
            let got = table.mul_all(&scalars, &|_| {});
            for (s, g) in scalars.iter().zip(got) {
                assert_eq!(g, (p * s).to_affine());
            }
        }
        // The identity's table holds only the identity, and so do its products.
        let zero = FixedBaseTable::<G1Affine>::new(G1Projective::identity(), 100);
        assert!(zero
            .mul_all(&scalars, &|_| {})
            .iter()
            .all(|g| *g == G1Affine::identity()));
        let q = G2Projective::random(&mut rng);
        let table = FixedBaseTable::<G2Affine>::new(q, 100);
        for (s, g) in scalars.iter().zip(table.mul_all(&scalars, &|_| {})) {
            assert_eq!(g, (q * s).to_affine());
        }
    }
}
