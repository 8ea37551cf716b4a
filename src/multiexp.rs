//! Multi-scalar multiplication `sum_i s_i * P_i` on the CPU: Pippenger's bucket method with signed
//! windows.
//!
//! Each scalar is cut into `W = ceil(256 / c)` windows of `c` bits, recoded so that every digit
//! lies in `[-2^(c-1), 2^(c-1)]` (the top bit of one window is borrowed from the next, as in Booth
//! recoding), so a window needs `2^(c-1)` buckets instead of `2^c`. A digit `d` adds the base to
//! bucket `|d| - 1` (or subtracts it when `d < 0`); a window's sum `sum_j (j + 1) * bucket_j` is
//! then formed with two running sums, and the windows are combined with `c` doublings each.
//! Zero digits, and so zero scalars, cost nothing, and identity bases are skipped.
//!
//! Work is split into (window, slice of terms) tasks so that every thread has work even when there
//! are fewer windows than threads. The window size minimises the estimated number of additions.
//!
//! [`multiexp_chunk`] computes the partial sum of a sub-range of the terms: the unit that the GPU
//! scheduler hands out, so that the sum of the chunks is the whole multiexp.

pub use crate::curve::CurveAffine;
use crate::multicore;
pub use crate::scalar::ScalarRepr;
use crate::stop::{stopped, STOP_EVERY};
use blstrs::Scalar;
use group::Group;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::AtomicBool;

/// Converts scalars to the canonical form the multiexp reads, in parallel.
pub fn scalar_reprs(scalars: &[Scalar]) -> Vec<ScalarRepr> {
    multicore::install(|| scalars.par_iter().map(ScalarRepr::from).collect())
}

/// [`scalar_reprs`] of `scalars`, which are then freed on another thread (a 2^24-value vector
/// takes tens of milliseconds to hand back).
pub(crate) fn into_scalar_reprs(scalars: Vec<Scalar>) -> Vec<ScalarRepr> {
    let reprs = scalar_reprs(&scalars);
    crate::free::free_in_background(scalars);
    reprs
}

/// Bases and scalars of different lengths were given to a multiexp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("multiexp over {bases} bases but {scalars} scalars")]
pub struct LengthMismatch {
    /// Number of bases given.
    pub bases: usize,
    /// Number of scalars given.
    pub scalars: usize,
}

fn check_lengths<G>(bases: &[G], scalars: &[ScalarRepr]) -> Result<(), LengthMismatch> {
    if bases.len() == scalars.len() {
        Ok(())
    } else {
        Err(LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        })
    }
}

/// `sum_i scalars[i] * bases[i]`, using all threads of the crate's pool.
pub fn multiexp<G: CurveAffine>(
    bases: &[G],
    scalars: &[ScalarRepr],
) -> Result<G::Curve, LengthMismatch> {
    check_lengths(bases, scalars)?;
    Ok(multicore::install(|| pippenger(bases, scalars, None)).unwrap_or_else(G::Curve::identity))
}

/// [`multiexp`] on one of the crate's pools (the CPU share of a multiexp split with devices),
/// which a caller can give up: once `stop` is set, the (window, slice) tasks not yet begun are
/// skipped, those running stop within [`STOP_EVERY`] terms, and the result is `Ok(None)`. The
/// scheduler gives up a CPU chunk this way when a device that came back would finish it sooner.
#[cfg(feature = "gpu")]
pub(crate) fn multiexp_on_until<G: CurveAffine>(
    pool: multicore::Pool,
    bases: &[G],
    scalars: &[ScalarRepr],
    stop: &AtomicBool,
) -> Result<Option<G::Curve>, LengthMismatch> {
    check_lengths(bases, scalars)?;
    Ok(multicore::install_on(pool, || {
        pippenger(bases, scalars, Some(stop))
    }))
}

/// `sum_i scalars[i] * bases[i]` on the calling thread only, without the pool: for callers that
/// must not queue behind the pool's other work (the test devices of `gpu::fake`).
pub fn multiexp_serial<G: CurveAffine>(
    bases: &[G],
    scalars: &[ScalarRepr],
) -> Result<G::Curve, LengthMismatch> {
    check_lengths(bases, scalars)?;
    if bases.is_empty() {
        return Ok(G::Curve::identity());
    }
    let (c, _) = window_bits(bases.len(), 1);
    let finite: Vec<bool> = if c >= AFFINE_MIN_WINDOW {
        bases.iter().map(|b| !bool::from(b.is_identity())).collect()
    } else {
        Vec::new()
    };
    let mut acc = G::Curve::identity();
    for w in (0..256usize.div_ceil(c)).rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        let sum = if c >= AFFINE_MIN_WINDOW {
            G::window_sum_affine(bases, &finite, scalars, w, c, None)
        } else {
            window_sum(bases, scalars, w, c, None)
        };
        // Never stopped: there is no flag.
        acc += sum.unwrap_or_else(G::Curve::identity);
    }
    Ok(acc)
}

/// The partial sum of the terms in `range`: `sum_(i in range) scalars[i] * bases[i]`.
///
/// Summing the chunks of any partition of `0..n` gives the whole multiexp.
pub fn multiexp_chunk<G: CurveAffine>(
    bases: &[G],
    scalars: &[ScalarRepr],
    range: Range<usize>,
) -> Result<G::Curve, LengthMismatch> {
    let n = bases.len().min(scalars.len());
    if bases.len() != scalars.len() || range.start > range.end || range.end > n {
        return Err(LengthMismatch {
            bases: bases.len().min(range.end),
            scalars: scalars.len().min(range.end),
        });
    }
    multiexp(&bases[range.clone()], &scalars[range])
}

/// Windows at least this wide accumulate their buckets in affine form; narrower ones have too
/// few buckets for batches of [`crate::batch_affine::BATCH`] additions to be conflict-free.
const AFFINE_MIN_WINDOW: usize = 12;

/// Cost of a window's bucket reduction per `2^c`, in bucket additions: each of the `2^(c-1)`
/// buckets takes a mixed and a projective addition (7M + 4S and 11M + 5S in blst) against about
/// 6M + 1S for a batched affine addition into a bucket.
const REDUCTION_COST: f64 = 1.7;

/// Cost of a Jacobian mixed addition into a bucket (windows narrower than [`AFFINE_MIN_WINDOW`])
/// against a batched affine one: 7M + 4S against about 6M + 1S plus the batch's bookkeeping.
const JACOBIAN_ADD_COST: f64 = 1.3;

/// Widest window. Measured on a 2-core EPYC (`cargo bench --bench compare -- msm 20 2`): c = 13
/// took 5.2 s at 2^20 terms, c = 15 and 16 took 6.0 s: the bucket arrays outgrow the L2 cache
/// before the model's savings show.
const MAX_WINDOW: usize = 14;

/// Window width `c` and number of term slices `parts` minimising the estimated wall time: the
/// `W * parts` tasks of `n / parts` bucket additions (dearer below [`AFFINE_MIN_WINDOW`]) and
/// `REDUCTION_COST * 2^c` for the reduction each run `threads` at a time,
/// so the count of rounds matters, not just the sum (a last round half full idles half the
/// threads).
fn window_bits(n: usize, threads: usize) -> (usize, usize) {
    let mut best = (2, 1, f64::MAX);
    for c in 2..=MAX_WINDOW {
        let windows = 256usize.div_ceil(c);
        let max_parts = (8 * threads).div_ceil(windows).clamp(1, n.max(1));
        for parts in 1..=max_parts {
            let add = if c >= AFFINE_MIN_WINDOW {
                1.0
            } else {
                JACOBIAN_ADD_COST
            };
            let per_task = add * n.div_ceil(parts) as f64 + REDUCTION_COST * (1u64 << c) as f64;
            let rounds = (windows * parts).div_ceil(threads) as f64;
            let cost = rounds * per_task;
            if cost < best.2 {
                best = (c, parts, cost);
            }
        }
    }
    (best.0, best.1)
}

/// The multiexp, or `None` when `stop` was set before every task began.
fn pippenger<G: CurveAffine>(
    bases: &[G],
    scalars: &[ScalarRepr],
    stop: Option<&AtomicBool>,
) -> Option<G::Curve> {
    let n = bases.len();
    if n == 0 {
        return Some(G::Curve::identity());
    }
    let (c, parts) = window_bits(n, rayon::current_num_threads());
    let windows = 256usize.div_ceil(c);
    let part_len = n.div_ceil(parts);
    let finite = if c >= AFFINE_MIN_WINDOW {
        finite_flags(bases)
    } else {
        Vec::new()
    };
    let sums: Vec<G::Curve> = (0..windows * parts)
        .into_par_iter()
        .map(|task| {
            if stopped(stop) {
                return None;
            }
            let (w, p) = (task / parts, task % parts);
            let start = (p * part_len).min(n);
            let end = (start + part_len).min(n);
            if c >= AFFINE_MIN_WINDOW {
                G::window_sum_affine(
                    &bases[start..end],
                    &finite[start..end],
                    &scalars[start..end],
                    w,
                    c,
                    stop,
                )
            } else {
                window_sum(&bases[start..end], &scalars[start..end], w, c, stop)
            }
        })
        .collect::<Option<_>>()?;
    let mut acc = G::Curve::identity();
    for w in (0..windows).rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        for s in &sums[w * parts..(w + 1) * parts] {
            acc += s;
        }
    }
    Some(acc)
}

/// Whether each base is other than the identity, in parallel: told once per multiexp for the
/// affine window sums, which otherwise asked blst's constant-time test once per base and window.
pub(crate) fn finite_flags<G: CurveAffine>(bases: &[G]) -> Vec<bool> {
    bases
        .par_iter()
        .map(|b| !bool::from(b.is_identity()))
        .collect()
}

/// `sum_i digit_w(scalars[i]) * bases[i]` for one window `w` of width `c`; `None` when `stop`
/// was set before the end.
fn window_sum<G: CurveAffine>(
    bases: &[G],
    scalars: &[ScalarRepr],
    w: usize,
    c: usize,
    stop: Option<&AtomicBool>,
) -> Option<G::Curve> {
    let mut buckets = vec![G::Curve::identity(); 1 << (c - 1)];
    for (i, (base, scalar)) in bases.iter().zip(scalars).enumerate() {
        if i % STOP_EVERY == 0 && stopped(stop) {
            return None;
        }
        let digit = scalar.signed_digit(w, c);
        if digit == 0 || bool::from(base.is_identity()) {
            continue;
        }
        if digit > 0 {
            base.add_to(&mut buckets[(digit - 1) as usize]);
        } else {
            base.sub_from(&mut buckets[(-digit - 1) as usize]);
        }
    }
    // sum_j (j + 1) * bucket_j: `running` holds the sum of the buckets from the top down to j.
    let mut running = G::Curve::identity();
    let mut sum = G::Curve::identity();
    for bucket in buckets.iter().rev() {
        running += bucket;
        sum += &running;
    }
    Some(sum)
}

/// Which variables of a query appear in the circuit: the parameters store bases only for those,
/// so the scalars of the others are skipped (bellman's `DensityTracker`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    bits: Vec<bool>,
    total: usize,
}

impl Density {
    /// `len` variables, none used yet.
    pub(crate) fn with_len(len: usize) -> Density {
        Density {
            bits: vec![false; len],
            total: 0,
        }
    }

    /// This density over `len` variables: the ones past its own length added, not used.
    pub(crate) fn padded(&self, len: usize) -> Density {
        let mut d = self.clone();
        if len > d.bits.len() {
            d.bits.resize(len, false);
        }
        d
    }

    /// Adds a variable, not yet used.
    pub fn add_element(&mut self) {
        self.bits.push(false);
    }

    /// Marks variable `i` as used.
    pub fn inc(&mut self, i: usize) {
        if let Some(bit) = self.bits.get_mut(i) {
            if !*bit {
                *bit = true;
                self.total += 1;
            }
        }
    }

    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.bits.len()
    }

    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.bits.is_empty()
    }

    /// Number of used variables.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The scalars of the used variables, in order.
    pub fn select(&self, scalars: &[ScalarRepr]) -> Vec<ScalarRepr> {
        self.select_after(&[], scalars)
    }

    /// `head`, then the scalars of the used variables, in order: the scalars of a query whose
    /// bases are stored for every input and for the used auxiliary variables only.
    ///
    /// On all threads, into a vector of the final size: each piece of the variables is counted,
    /// then copied to its place. Done serially, with the vector growing as it goes and the
    /// head copied in front afterwards, the A and B selections take 0.8 s each at 2^24
    /// constraints, a quarter of the proof after synthesis, and 37 ms each at 2^20 (H200 host,
    /// 16 cores; docs/BENCHMARKS.md); and a device taken from the prover meanwhile sits idle, as
    /// nothing asks for it until the next multiexp.
    pub fn select_after(&self, head: &[ScalarRepr], scalars: &[ScalarRepr]) -> Vec<ScalarRepr> {
        const PIECE: usize = 1 << 14;
        let n = scalars.len().min(self.bits.len());
        let (scalars, bits) = (&scalars[..n], &self.bits[..n]);
        multicore::install(|| {
            let counts: Vec<usize> = bits
                .par_chunks(PIECE)
                .map(|b| b.iter().filter(|used| **used).count())
                .collect();
            let total = head.len() + counts.iter().sum::<usize>();
            let mut out = Vec::with_capacity(total);
            out.par_extend(rayon::iter::repeat_n(ScalarRepr::default(), total));
            let (first, mut rest) = out.split_at_mut(head.len());
            first.copy_from_slice(head);
            let mut places = Vec::with_capacity(counts.len());
            for count in counts {
                let (place, tail) = std::mem::take(&mut rest).split_at_mut(count);
                places.push(place);
                rest = tail;
            }
            places
                .into_par_iter()
                .zip(scalars.par_chunks(PIECE).zip(bits.par_chunks(PIECE)))
                .for_each(|(place, (scalars, bits))| {
                    let used = scalars.iter().zip(bits).filter(|(_, used)| **used);
                    for (slot, (s, _)) in place.iter_mut().zip(used) {
                        *slot = *s;
                    }
                });
            out
        })
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
    use std::sync::atomic::Ordering;

    /// A window sum whose `stop` is set while it runs gives up within a few thousand terms, not
    /// at the end of its window: timed against the same window run to its end (a G2 window over
    /// 2^14 terms, tens of milliseconds), stopped after a quarter of that. Tried up to three
    /// times, as another test's threads can hold the cores; without the checks inside the loop
    /// it returns the whole sum each time.
    #[test]
    fn a_window_sum_stops_soon_after_it_is_asked_to() {
        use std::time::{Duration, Instant};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
        let distinct: Vec<G2Affine> = (0..64)
            .map(|_| (G2Projective::generator() * Scalar::random(&mut rng)).to_affine())
            .collect();
        let n = 1 << 14;
        let bases: Vec<G2Affine> = (0..n).map(|i| distinct[i % 64]).collect();
        let scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let reprs = scalar_reprs(&scalars);
        type Sum = fn(&[G2Affine], &[ScalarRepr], Option<&AtomicBool>) -> Option<G2Projective>;
        let projective: Sum = |b, s, stop| window_sum(b, s, 3, 10, stop);
        let affine: Sum =
            |b, s, stop| G2Affine::window_sum_affine(b, &finite_flags(b), s, 3, 13, stop);
        for (name, sum) in [("projective", projective), ("affine", affine)] {
            // Set before the start, nothing is summed.
            assert!(sum(&bases, &reprs, Some(&AtomicBool::new(true))).is_none());
            let mut tries = Vec::new();
            for _ in 0..3 {
                let began = Instant::now();
                assert!(sum(&bases, &reprs, Some(&AtomicBool::new(false))).is_some());
                let whole = began.elapsed();
                let stop = AtomicBool::new(false);
                let (result, took) = std::thread::scope(|scope| {
                    let running = scope.spawn(|| {
                        let began = Instant::now();
                        (sum(&bases, &reprs, Some(&stop)), began.elapsed())
                    });
                    std::thread::sleep(whole / 4);
                    stop.store(true, Ordering::Relaxed);
                    running.join().unwrap()
                });
                if result.is_none() && took < whole * 3 / 4 {
                    break;
                }
                tries.push((whole, took, result.is_some()));
                assert!(
                    tries.len() < 3,
                    "{name}: (whole, stopped, finished): {tries:?}"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    #[test]
    fn signed_digits_sum_back_to_the_scalar() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut samples = vec![Scalar::ZERO, Scalar::ONE, -Scalar::ONE];
        samples.extend((0..50).map(|_| Scalar::random(&mut rng)));
        for s in samples {
            let repr = ScalarRepr::from(&s);
            for c in 2..=18 {
                let mut acc = Scalar::ZERO;
                let radix = Scalar::from(1u64 << c);
                for w in (0..256usize.div_ceil(c)).rev() {
                    let d = repr.signed_digit(w, c);
                    assert!(d.abs() <= 1 << (c - 1));
                    let d_s = if d < 0 {
                        -Scalar::from((-d) as u64)
                    } else {
                        Scalar::from(d as u64)
                    };
                    acc = acc * radix + d_s;
                }
                assert_eq!(acc, s, "c = {c}");
            }
        }
    }

    fn naive<G: CurveAffine>(bases: &[G], scalars: &[Scalar]) -> G::Curve {
        bases
            .iter()
            .zip(scalars)
            .fold(G::Curve::identity(), |acc, (b, s)| acc + b.to_curve() * s)
    }

    fn check<G>(n: usize, seed: u64)
    where
        G: CurveAffine,
        G::Curve: Curve<AffineRepr = G>,
    {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut bases: Vec<G> = (0..n)
            .map(|_| G::Curve::random(&mut rng).to_affine())
            .collect();
        let mut scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        // Special values at fixed places: zero, one, r - 1, and identity bases.
        for (i, s) in [Scalar::ZERO, Scalar::ONE, -Scalar::ONE]
            .into_iter()
            .enumerate()
        {
            if i < n {
                scalars[i] = s;
            }
        }
        for i in (3..n).step_by(7) {
            bases[i] = G::identity();
        }
        let reprs = scalar_reprs(&scalars);
        let expected = naive(&bases, &scalars);
        assert_eq!(multiexp(&bases, &reprs).unwrap(), expected, "n = {n}");

        // Chunks that do not divide n sum to the whole.
        let step = (n / 3).max(1) + 1;
        let mut total = G::Curve::identity();
        let mut start = 0;
        while start < n {
            let end = (start + step).min(n);
            total += multiexp_chunk(&bases, &reprs, start..end).unwrap();
            start = end;
        }
        assert_eq!(total, expected, "chunked, n = {n}");
    }

    #[test]
    fn g1_equals_naive_sum() {
        for (n, seed) in [(0, 1), (1, 2), (2, 3), (3, 4), (37, 5), (200, 6), (1029, 7)] {
            check::<G1Affine>(n, seed);
        }
    }

    #[test]
    fn g2_equals_naive_sum() {
        for (n, seed) in [(0, 1), (1, 2), (5, 3), (101, 4), (513, 5)] {
            check::<G2Affine>(n, seed);
        }
    }

    #[test]
    fn all_zero_scalars_and_identity_bases_give_identity() {
        let bases = vec![G1Affine::identity(), G1Projective::generator().to_affine()];
        let reprs = scalar_reprs(&[Scalar::ONE, Scalar::ZERO]);
        assert_eq!(multiexp(&bases, &reprs).unwrap(), G1Projective::identity());
        let bases = vec![G2Projective::generator().to_affine(); 2];
        let reprs = scalar_reprs(&[-Scalar::ONE, Scalar::ONE]);
        assert_eq!(
            multiexp::<G2Affine>(&bases, &reprs).unwrap(),
            G2Projective::identity()
        );
    }

    /// The affine bucket path against the Jacobian one, with repeated and opposite bases so that
    /// doublings, cancellations and batch conflicts all happen.
    fn check_affine_window<G>(seed: u64)
    where
        G: CurveAffine,
        G::Curve: Curve<AffineRepr = G>,
    {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let distinct: Vec<G> = (0..50)
            .map(|_| G::Curve::random(&mut rng).to_affine())
            .collect();
        let mut bases = Vec::new();
        let mut scalars = Vec::new();
        for i in 0..3000 {
            let p = distinct[i % distinct.len()];
            bases.push(match i % 5 {
                0 => -p,
                1 => G::identity(),
                _ => p,
            });
            // Few distinct scalars: the same bucket over and over.
            scalars.push(Scalar::from((i % 7) as u64 * 1_000_003 + 1));
        }
        scalars.extend((0..1000).map(|_| Scalar::random(&mut rng)));
        bases.extend((0..1000).map(|i| distinct[i % 50]));
        let reprs = scalar_reprs(&scalars);
        let finite = finite_flags(&bases);
        for c in [3, 12, 13] {
            for w in 0..256usize.div_ceil(c) {
                assert_eq!(
                    G::window_sum_affine(&bases, &finite, &reprs, w, c, None),
                    window_sum(&bases, &reprs, w, c, None),
                    "c = {c}, w = {w}"
                );
            }
        }
    }

    #[test]
    fn affine_buckets_equal_projective_buckets() {
        check_affine_window::<G1Affine>(8);
        check_affine_window::<G2Affine>(9);
    }

    #[test]
    fn mismatched_lengths_are_an_error() {
        let bases = vec![G1Affine::generator(); 3];
        let reprs = scalar_reprs(&[Scalar::ONE; 2]);
        assert!(multiexp(&bases, &reprs).is_err());
        assert!(multiexp_chunk(&bases, &reprs, 0..2).is_err());
        let reprs = scalar_reprs(&[Scalar::ONE; 3]);
        assert!(multiexp_chunk(&bases, &reprs, 2..4).is_err());
        assert!(multiexp_chunk(&bases, &reprs, 2..3).is_ok());
    }

    #[test]
    fn density_selects_used_scalars() {
        let mut d = Density::default();
        for _ in 0..4 {
            d.add_element();
        }
        d.inc(1);
        d.inc(3);
        d.inc(3);
        d.inc(9);
        assert_eq!(d.total(), 2);
        let reprs = scalar_reprs(&[1u64, 2, 3, 4].map(Scalar::from));
        assert_eq!(d.select(&reprs), vec![reprs[1], reprs[3]]);
        assert_eq!(
            d.select_after(&reprs[..1], &reprs),
            vec![reprs[0], reprs[1], reprs[3]]
        );
    }

    #[test]
    fn density_selection_across_pieces_equals_a_filter() {
        // Several of the selection's pieces (2^14 variables each), with runs of used and
        // unused variables, and scalars fewer than the variables.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let n = 3 * (1 << 14) + 77;
        let mut d = Density::default();
        let mut used = Vec::with_capacity(n);
        for i in 0..n {
            d.add_element();
            let u =
                (i / 1000) % 3 != 0 && rand_chacha::rand_core::RngCore::next_u32(&mut rng) % 4 != 0;
            if u {
                d.inc(i);
            }
            used.push(u);
        }
        let scalars = scalar_reprs(
            &(0..n - 5)
                .map(|i| Scalar::from(i as u64))
                .collect::<Vec<_>>(),
        );
        let head = scalar_reprs(&[Scalar::from(7u64), Scalar::from(8u64)]);
        let mut want = head.clone();
        want.extend(
            scalars
                .iter()
                .zip(&used)
                .filter(|(_, u)| **u)
                .map(|(s, _)| *s),
        );
        assert_eq!(d.select_after(&head, &scalars), want);
    }
}
