//! Bucket accumulation in affine coordinates with batched inversions, the inner loop of the
//! multiexp for large windows and of the fixed-base products of parameter generation.
//!
//! Adding two affine points costs one field inversion; inverting a batch of `k` denominators at
//! once (Montgomery's trick) costs one inversion and `3(k - 1)` multiplications, so an affine
//! addition comes to about 5M + 1S, against 7M + 4S for a Jacobian mixed addition and 8M + 2S for
//! the XYZZ one blst uses. The idea is common to the ZPrize 2022 MSM entries and gnark-crypto's
//! `batchAddG1`; this file is our own implementation of it.
//!
//! Additions are scheduled into a batch in which every bucket changes at most once. An addition
//! into a bucket that already has one pending (a conflict) goes instead to a projective overflow
//! bucket with an ordinary mixed addition. With thousands of buckets and random scalars conflicts
//! are rare; with skewed scalars (a witness of bits puts every term of the first window in one
//! bucket) the overflow keeps the cost at that of the projective method instead of stalling.
//!
//! `blstrs` does not export its field types, so the functions here are generic over the field
//! `F` and take the coordinate accessors as closures; the type is inferred at the call site.

use crate::scalar::ScalarRepr;
use crate::stop::{stopped, STOP_EVERY};
use ff::Field;
use std::sync::atomic::AtomicBool;

/// Additions per batch. Larger batches share an inversion among more additions, smaller ones
/// conflict less; 256 to 1024 measured within a few percent of each other on an EPYC core.
pub(crate) const BATCH: usize = 512;

/// An addition waiting for its batch: `bucket += (x, y)`.
#[derive(Clone, Copy)]
struct Pending<F> {
    bucket: u32,
    x: F,
    y: F,
}

/// Affine buckets and the current batch of additions into them.
struct Buckets<F> {
    x: Vec<F>,
    y: Vec<F>,
    occupied: Vec<bool>,
    in_batch: Vec<bool>,
    batch: Vec<Pending<F>>,
    denominators: Vec<F>,
    kinds: Vec<Kind>,
    scratch: Vec<F>,
}

impl<F: Field> Buckets<F> {
    fn new(count: usize) -> Self {
        Buckets {
            x: vec![F::ZERO; count],
            y: vec![F::ZERO; count],
            occupied: vec![false; count],
            in_batch: vec![false; count],
            batch: Vec::with_capacity(BATCH),
            denominators: Vec::with_capacity(BATCH),
            kinds: Vec::with_capacity(BATCH),
            scratch: Vec::with_capacity(BATCH),
        }
    }

    /// Schedules `op`; gives it back if its bucket already has an addition in this batch.
    fn submit(&mut self, op: Pending<F>) -> Option<Pending<F>> {
        let b = op.bucket as usize;
        if self.in_batch[b] {
            return Some(op);
        }
        if !self.occupied[b] {
            self.x[b] = op.x;
            self.y[b] = op.y;
            self.occupied[b] = true;
        } else {
            self.in_batch[b] = true;
            self.batch.push(op);
            if self.batch.len() == BATCH {
                self.run_batch();
            }
        }
        None
    }

    fn run_batch(&mut self) {
        // Denominators: x2 - x1 for an addition, 2 y1 for a doubling, and 1 as a placeholder
        // where the sum is the identity (P + (-P)), which empties the bucket. Zero tests are
        // cheaper than blstrs' constant-time equality, so the cases are told apart by them.
        self.denominators.clear();
        self.kinds.clear();
        for op in &self.batch {
            let b = op.bucket as usize;
            let dx = op.x - self.x[b];
            let (kind, d) = if !bool::from(dx.is_zero()) {
                (Kind::Add, dx)
            } else if bool::from((op.y - self.y[b]).is_zero()) && !bool::from(op.y.is_zero()) {
                (Kind::Double, op.y.double())
            } else {
                (Kind::Cancel, F::ONE)
            };
            self.kinds.push(kind);
            self.denominators.push(d);
        }
        batch_invert(&mut self.denominators, &mut self.scratch);
        for ((op, inv), kind) in self.batch.iter().zip(&self.denominators).zip(&self.kinds) {
            let b = op.bucket as usize;
            self.in_batch[b] = false;
            let (x1, y1) = (self.x[b], self.y[b]);
            let lambda = match kind {
                Kind::Add => (op.y - y1) * inv,
                Kind::Double => {
                    let xx = x1.square();
                    (xx.double() + xx) * inv
                }
                Kind::Cancel => {
                    self.occupied[b] = false;
                    continue;
                }
            };
            let x3 = lambda.square() - x1 - op.x;
            self.y[b] = lambda * (x1 - x3) - y1;
            self.x[b] = x3;
        }
        self.batch.clear();
    }
}

/// How a pending addition combines with its bucket.
#[derive(Clone, Copy)]
enum Kind {
    Add,
    Double,
    Cancel,
}

/// Replaces each element of `values` (all non-zero) by its inverse, with one field inversion.
fn batch_invert<F: Field>(values: &mut [F], prefix: &mut Vec<F>) {
    prefix.clear();
    let mut acc = F::ONE;
    for v in values.iter() {
        prefix.push(acc);
        acc *= v;
    }
    let mut inv = acc.invert().unwrap_or(F::ZERO);
    for (v, before) in values.iter_mut().zip(prefix.iter()).rev() {
        let next = inv * *v;
        *v = inv * before;
        inv = next;
    }
}

/// `sum_j (j + 1) * bucket_j` of window `w` (width `c`) over `bases`, accumulating the buckets in
/// affine form. `finite[i]` says whether `bases[i]` is other than the identity (told once per
/// multiexp rather than once per window: blst's test is constant-time, over all of a point's
/// bytes), `coords` reads a finite base's affine coordinates and `from_xy` makes an affine point
/// from a bucket's; `C` is the projective type of the final sums. `None` when `stop` was set
/// before the end (looked at every [`STOP_EVERY`] terms).
#[allow(clippy::too_many_arguments)]
pub(crate) fn window_sum<B, C, F>(
    bases: &[B],
    finite: &[bool],
    scalars: &[ScalarRepr],
    w: usize,
    c: usize,
    stop: Option<&AtomicBool>,
    coords: impl Fn(&B) -> (F, F),
    from_xy: impl Fn(F, F) -> B,
) -> Option<C>
where
    B: Copy + std::ops::Neg<Output = B>,
    F: Field,
    C: group::Group + for<'a> std::ops::AddAssign<&'a B>,
{
    let count = 1 << (c - 1);
    let mut buckets = Buckets::<F>::new(count);
    let mut overflow: Vec<C> = Vec::new();
    for (i, ((base, scalar), finite)) in bases.iter().zip(scalars).zip(finite).enumerate() {
        if i % STOP_EVERY == 0 && stopped(stop) {
            return None;
        }
        let digit = scalar.signed_digit(w, c);
        if digit == 0 || !finite {
            continue;
        }
        let (x, y) = coords(base);
        let (bucket, y) = if digit > 0 {
            (digit - 1, y)
        } else {
            (-digit - 1, -y)
        };
        let op = Pending {
            bucket: bucket as u32,
            x,
            y,
        };
        if buckets.submit(op).is_some() {
            if overflow.is_empty() {
                overflow = vec![C::identity(); count];
            }
            let b = bucket as usize;
            if digit > 0 {
                overflow[b] += base;
            } else {
                overflow[b] += &-*base;
            }
        }
    }
    buckets.run_batch();

    // Running sums from the top bucket down; the running sum stays projective, the buckets are
    // added to it with the cheaper mixed addition.
    let mut running = C::identity();
    let mut sum = C::identity();
    for b in (0..count).rev() {
        if buckets.occupied[b] {
            running += &from_xy(buckets.x[b], buckets.y[b]);
        }
        if let Some(extra) = overflow.get(b) {
            running += extra;
        }
        sum += running;
    }
    Some(sum)
}

/// `out[i] = scalars[i] * P` in affine form, from a fixed-base `table` of `P`'s multiples
/// (`table[w * 2^(c-1) + j] = (j + 1) * 2^(c w) * P` for each window `w` of width `c`, see
/// `src/fixed_base.rs`): each product is a bucket of its own, which takes one table point per
/// window, and a window's additions are one run of batches (every bucket changes at most once
/// in a window, so no addition conflicts and none overflows). Affine additions with shared
/// inversions cost about half a mixed addition's products, and the products need no conversion to
/// affine form afterwards. `coords` reads a table point's affine coordinates (the table of a base
/// other than the identity holds no identity, so the caller looks at the base once rather than at
/// every point: that test, constant-time in blst, made a 2^17 setup 9% slower) and `from_xy` makes
/// a point from a product's; `out` must hold the identity (a product that is the identity is not
/// written).
pub(crate) fn fixed_base_products<B, F>(
    table: &[B],
    c: usize,
    scalars: &[ScalarRepr],
    out: &mut [B],
    coords: impl Fn(&B) -> (F, F),
    from_xy: impl Fn(F, F) -> B,
) where
    B: Copy,
    F: Field,
{
    let row = 1usize << (c - 1);
    let windows = table.len() / row;
    let mut buckets = Buckets::<F>::new(scalars.len());
    for w in 0..windows {
        for (i, scalar) in scalars.iter().enumerate() {
            let digit = scalar.signed_digit(w, c);
            if digit == 0 {
                continue;
            }
            let (x, y) = coords(&table[w * row + digit.unsigned_abs() as usize - 1]);
            let y = if digit > 0 { y } else { -y };
            let left = buckets.submit(Pending {
                bucket: i as u32,
                x,
                y,
            });
            debug_assert!(left.is_none(), "one addition per bucket and window");
        }
        buckets.run_batch();
    }
    for (i, out) in out.iter_mut().enumerate().take(scalars.len()) {
        if buckets.occupied[i] {
            *out = from_xy(buckets.x[i], buckets.y[i]);
        }
    }
}
