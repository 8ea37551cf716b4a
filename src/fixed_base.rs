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

/// Widest window used: the table then holds `16 * 2^15` points (48 MiB for G1, 96 MiB for G2).
const MAX_WINDOW: usize = 16;

/// Precomputed multiples of one base.
pub(crate) struct FixedBaseTable<G: CurveAffine> {
    window: usize,
    windows: usize,
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
            windows,
            table: batch_normalize::<G>(&projective),
        }
    }

    /// `s * base`.
    pub(crate) fn mul(&self, s: &ScalarRepr) -> G::Curve {
        let row = 1usize << (self.window - 1);
        let mut acc = G::Curve::identity();
        for w in 0..self.windows {
            let digit = s.signed_digit(w, self.window);
            if digit > 0 {
                self.table[w * row + digit as usize - 1].add_to(&mut acc);
            } else if digit < 0 {
                self.table[w * row + (-digit) as usize - 1].sub_from(&mut acc);
            }
        }
        acc
    }

    /// `[s * base for s in scalars]` in affine form, in parallel.
    pub(crate) fn mul_all(&self, scalars: &[Scalar]) -> Vec<G> {
        let projective: Vec<G::Curve> = scalars
            .par_iter()
            .map(|s| self.mul(&ScalarRepr::from(s)))
            .collect();
        batch_normalize::<G>(&projective)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use ff::Field;
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
            let got = table.mul_all(&scalars);
            for (s, g) in scalars.iter().zip(got) {
                assert_eq!(g, (p * s).to_affine());
            }
        }
        let q = G2Projective::random(&mut rng);
        let table = FixedBaseTable::<G2Affine>::new(q, 100);
        for (s, g) in scalars.iter().zip(table.mul_all(&scalars)) {
            assert_eq!(g, (q * s).to_affine());
        }
    }
}
