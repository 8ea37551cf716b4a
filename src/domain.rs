//! Evaluation domains: the multiplicative subgroup of size `n = 2^k` of the scalar field, and the
//! FFTs that move a polynomial between coefficients and evaluations on it.
//!
//! Groth16 ([eprint 2016/260](https://eprint.iacr.org/2016/260)) encodes a rank-1 constraint
//! system as a quadratic arithmetic program: polynomials `A`, `B`, `C` that interpolate the
//! constraints' evaluations on the domain `{w^0, ..., w^(n-1)}`. The prover needs the quotient
//! `H = (A * B - C) / Z` where `Z(x) = x^n - 1` vanishes on the domain. `Z` is zero on the domain
//! itself, so the division is done on the coset `g * {w^i}` (`g` the field's multiplicative
//! generator), where `Z` is the non-zero constant `g^n - 1`: interpolate (iFFT), evaluate on the
//! coset (coset FFT), multiply and divide pointwise, interpolate back (inverse coset FFT).
//!
//! The FFT is an iterative radix-2 Cooley-Tukey transform over a bit-reversed input with a
//! precomputed table of twiddle factors; each round's butterflies run in parallel.

use crate::multicore;
use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

/// Rounds with at least this many independent blocks run block-parallel; smaller rounds split
/// each block's butterflies across threads instead.
const MIN_PARALLEL_BLOCKS: usize = 64;
/// Below this many butterflies a round runs on one thread.
const MIN_PARALLEL_WORK: usize = 1 << 10;

/// A polynomial of degree below `2^exp`, as coefficients or as evaluations on the domain.
#[derive(Clone, Debug, PartialEq)]
pub struct EvaluationDomain {
    coeffs: Vec<Scalar>,
    exp: u32,
    omega: Scalar,
    omega_inv: Scalar,
    n_inv: Scalar,
}

impl EvaluationDomain {
    /// Pads `coeffs` with zeros to the next power of two and takes the domain of that size.
    ///
    /// Fails with [`SynthesisError::PolynomialDegreeTooLarge`] beyond `2^32` elements, the largest
    /// power-of-two subgroup of the BLS12-381 scalar field.
    pub fn from_coeffs(mut coeffs: Vec<Scalar>) -> Result<Self, SynthesisError> {
        let n = coeffs.len().max(1).next_power_of_two();
        let exp = n.trailing_zeros();
        if exp > Scalar::S {
            return Err(SynthesisError::PolynomialDegreeTooLarge);
        }
        // ROOT_OF_UNITY has order 2^S; squaring it S - exp times leaves order 2^exp.
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in exp..Scalar::S {
            omega = omega.square();
        }
        coeffs.resize(n, Scalar::ZERO);
        Ok(EvaluationDomain {
            coeffs,
            exp,
            omega,
            omega_inv: omega.invert().unwrap_or(Scalar::ONE),
            n_inv: Scalar::from(n as u64).invert().unwrap_or(Scalar::ONE),
        })
    }

    /// The domain size `n`.
    pub fn size(&self) -> usize {
        self.coeffs.len()
    }

    /// `log2(n)`.
    pub fn log_size(&self) -> u32 {
        self.exp
    }

    /// The generator `w` of the domain, a primitive `n`-th root of unity.
    pub fn omega(&self) -> Scalar {
        self.omega
    }

    /// The values, coefficients or evaluations depending on the last transform.
    pub fn into_coeffs(self) -> Vec<Scalar> {
        self.coeffs
    }

    /// Evaluations on the domain from coefficients.
    pub fn fft(&mut self) {
        fft(&mut self.coeffs, self.omega);
    }

    /// Coefficients from evaluations on the domain.
    pub fn ifft(&mut self) {
        fft(&mut self.coeffs, self.omega_inv);
        scale(&mut self.coeffs, self.n_inv);
    }

    /// Evaluations on the coset `g * domain` from coefficients.
    pub fn coset_fft(&mut self) {
        distribute_powers(&mut self.coeffs, Scalar::MULTIPLICATIVE_GENERATOR);
        self.fft();
    }

    /// Coefficients from evaluations on the coset `g * domain`.
    pub fn icoset_fft(&mut self) {
        self.ifft();
        let g_inv = Scalar::MULTIPLICATIVE_GENERATOR
            .invert()
            .unwrap_or(Scalar::ONE);
        distribute_powers(&mut self.coeffs, g_inv);
    }

    /// `Z(tau) = tau^n - 1`, the vanishing polynomial of the domain.
    pub fn z(&self, tau: &Scalar) -> Scalar {
        tau.pow_vartime([self.size() as u64]) - Scalar::ONE
    }

    /// Divides evaluations on the coset by `Z`, which is the constant `g^n - 1` there.
    pub fn divide_by_z_on_coset(&mut self) {
        let z_inv = self
            .z(&Scalar::MULTIPLICATIVE_GENERATOR)
            .invert()
            .unwrap_or(Scalar::ZERO);
        scale(&mut self.coeffs, z_inv);
    }

    /// Pointwise product with `other` (both as evaluations on the same domain or coset).
    pub fn mul_assign(&mut self, other: &EvaluationDomain) {
        multicore::install(|| {
            self.coeffs
                .par_iter_mut()
                .zip(&other.coeffs)
                .for_each(|(a, b)| *a *= b)
        });
    }

    /// Pointwise difference with `other`.
    pub fn sub_assign(&mut self, other: &EvaluationDomain) {
        multicore::install(|| {
            self.coeffs
                .par_iter_mut()
                .zip(&other.coeffs)
                .for_each(|(a, b)| *a -= b)
        });
    }
}

impl AsRef<[Scalar]> for EvaluationDomain {
    fn as_ref(&self) -> &[Scalar] {
        &self.coeffs
    }
}

impl AsMut<[Scalar]> for EvaluationDomain {
    fn as_mut(&mut self) -> &mut [Scalar] {
        &mut self.coeffs
    }
}

fn scale(values: &mut [Scalar], factor: Scalar) {
    multicore::install(|| values.par_iter_mut().for_each(|v| *v *= factor));
}

/// `values[i] *= g^i`.
fn distribute_powers(values: &mut [Scalar], g: Scalar) {
    const CHUNK: usize = 1 << 12;
    multicore::install(|| {
        values
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(i, chunk)| {
                let mut power = g.pow_vartime([(i * CHUNK) as u64]);
                for v in chunk {
                    *v *= power;
                    power *= g;
                }
            })
    });
}

/// `[w^0, w^1, ..., w^(len-1)]`, computed in parallel.
fn powers(w: Scalar, len: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![Scalar::ZERO; len];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut power = w.pow_vartime([(i * CHUNK) as u64]);
            for v in chunk {
                *v = power;
                power *= w;
            }
        });
    out
}

/// In-place evaluation of the polynomial with coefficients `a` at `w^0 .. w^(n-1)`, where `w` is a
/// primitive `n`-th root of unity and `n = a.len()` a power of two.
fn fft(a: &mut [Scalar], w: Scalar) {
    let n = a.len();
    if n <= 1 {
        return;
    }
    let log_n = n.trailing_zeros();
    multicore::install(|| {
        bit_reverse(a, log_n);
        let twiddles = powers(w, n / 2);
        let mut half = 1;
        while half < n {
            // Butterfly j of a block of 2 * half uses w^(j * n / (2 * half)).
            let stride = n / (2 * half);
            let blocks = n / (2 * half);
            if n / 2 < MIN_PARALLEL_WORK {
                a.chunks_mut(2 * half)
                    .for_each(|block| butterflies(block, &twiddles, stride, 0));
            } else if blocks >= MIN_PARALLEL_BLOCKS {
                a.par_chunks_mut(2 * half)
                    .for_each(|block| butterflies(block, &twiddles, stride, 0));
            } else {
                for block in a.chunks_mut(2 * half) {
                    let (lo, hi) = block.split_at_mut(half);
                    let piece = (half / (4 * rayon::current_num_threads())).max(64);
                    lo.par_chunks_mut(piece)
                        .zip(hi.par_chunks_mut(piece))
                        .enumerate()
                        .for_each(|(k, (lo, hi))| {
                            half_butterflies(lo, hi, &twiddles, stride, k * piece)
                        });
                }
            }
            half *= 2;
        }
    });
}

fn butterflies(block: &mut [Scalar], twiddles: &[Scalar], stride: usize, offset: usize) {
    let (lo, hi) = block.split_at_mut(block.len() / 2);
    half_butterflies(lo, hi, twiddles, stride, offset);
}

/// Butterflies `j = offset ..` of one block: `(lo, hi) <- (lo + t * hi, lo - t * hi)`.
fn half_butterflies(
    lo: &mut [Scalar],
    hi: &mut [Scalar],
    twiddles: &[Scalar],
    stride: usize,
    offset: usize,
) {
    for (j, (u, v)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
        let t = *v * twiddles[(offset + j) * stride];
        *v = *u - t;
        *u += t;
    }
}

fn bit_reverse(a: &mut [Scalar], log_n: u32) {
    let shift = usize::BITS - log_n;
    for i in 0..a.len() {
        let j = i.reverse_bits() >> shift;
        if i < j {
            a.swap(i, j);
        }
    }
}

/// Coefficients of the prover's quotient `H = (A B - C) / Z` on the CPU: `a`, `b`, `c` are the
/// evaluations of `A`, `B`, `C` on the domain (zero-padded to a power of two); returns the `n - 1`
/// coefficients of `H` that can be non-zero.
pub fn quotient(
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
) -> Result<Vec<Scalar>, SynthesisError> {
    QuotientSteps::new(a, b, c).finish_on_cpu()
}

/// The quotient's first step for one input on the CPU: its evaluations on the domain of size `n`
/// (zero-padded), interpolated and evaluated on the coset `g * domain`.
pub(crate) fn to_coset(mut values: Vec<Scalar>, n: usize) -> Result<Vec<Scalar>, SynthesisError> {
    values.resize(n, Scalar::ZERO);
    let mut d = EvaluationDomain::from_coeffs(values)?;
    d.ifft();
    d.coset_fft();
    Ok(d.into_coeffs())
}

/// One of the quotient's three inputs, before or after its first step.
#[derive(Clone, Debug, PartialEq)]
pub enum QuotientInput {
    /// Evaluations on the domain, as synthesis made them (shorter than the domain: zero-padded).
    OnDomain(Vec<Scalar>),
    /// Evaluations on the coset `g * domain`, the domain's size: interpolated and moved there.
    OnCoset(Vec<Scalar>),
}

/// The prover's quotient as steps whose results are kept on the host: each input moved to the
/// coset (an interpolation and a coset evaluation), then the combination and the interpolation
/// back. A device that must give up the quotient halfway loses only the step it was in, and the
/// next try, on a device or on the CPU, goes on from the last finished step. Done in one piece,
/// a 2^24-constraint quotient (about 1.3 s on the H200) never finishes while short proofs take
/// the device every 0.6 s, and goes on only once they stop (H200 host, docs/BENCHMARKS.md).
#[derive(Clone, Debug, PartialEq)]
pub struct QuotientSteps {
    /// The domain's size, a power of two.
    pub(crate) n: usize,
    /// Values of the longest input as given (constraints).
    values: usize,
    /// `a`, `b`, `c`.
    pub(crate) inputs: [QuotientInput; 3],
    /// When a device last finished a step (what an interrupted try did after it is lost).
    pub(crate) last_step_at: Option<std::time::Instant>,
}

impl crate::free::LargeBuffers for QuotientInput {
    fn release(&mut self) {
        match self {
            QuotientInput::OnDomain(v) | QuotientInput::OnCoset(v) => v.release(),
        }
    }
}

impl crate::free::LargeBuffers for QuotientSteps {
    fn release(&mut self) {
        self.inputs.iter_mut().for_each(|input| input.release());
    }
}

impl QuotientSteps {
    /// The quotient of the evaluations `a`, `b`, `c`, no step done.
    pub fn new(a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar>) -> QuotientSteps {
        let values = a.len().max(b.len()).max(c.len());
        QuotientSteps {
            n: values.max(1).next_power_of_two(),
            values,
            inputs: [a, b, c].map(QuotientInput::OnDomain),
            last_step_at: None,
        }
    }

    /// Values of the longest input as given (the constraints, before padding).
    pub fn values(&self) -> usize {
        self.values
    }

    /// Inputs already on the coset.
    pub fn steps_done(&self) -> usize {
        self.inputs
            .iter()
            .filter(|i| matches!(i, QuotientInput::OnCoset(_)))
            .count()
    }

    /// Finishes the quotient on the CPU from its last finished step: the `n - 1` coefficients
    /// of `H`.
    pub fn finish_on_cpu(self) -> Result<Vec<Scalar>, SynthesisError> {
        let n = self.n;
        let on_coset = |input| {
            EvaluationDomain::from_coeffs(match input {
                QuotientInput::OnDomain(v) => to_coset(v, n)?,
                QuotientInput::OnCoset(v) => v,
            })
        };
        // `c` moves to the coset only once `b` is multiplied in and gone: two of the three
        // inputs at the domain's size at once, not three (a 2^20-constraint proof's peak of
        // host memory was here, with a domain of 2^21 values: 64 MiB each).
        let [a, b, c] = self.inputs;
        let mut a = on_coset(a)?;
        let b = on_coset(b)?;
        a.mul_assign(&b);
        drop(b);
        let c = on_coset(c)?;
        a.sub_assign(&c);
        drop(c);
        a.divide_by_z_on_coset();
        a.icoset_fft();
        let mut h = a.into_coeffs();
        h.truncate(h.len() - 1);
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    fn random(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    fn eval(coeffs: &[Scalar], x: Scalar) -> Scalar {
        coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn fft_equals_naive_dft() {
        for log_n in 0..=7 {
            let coeffs = random(1 << log_n, log_n as u64);
            let mut d = EvaluationDomain::from_coeffs(coeffs.clone()).unwrap();
            d.fft();
            let w = d.omega();
            for (i, v) in d.as_ref().iter().enumerate() {
                assert_eq!(
                    *v,
                    eval(&coeffs, w.pow_vartime([i as u64])),
                    "n = 2^{log_n}"
                );
            }
            let mut c = EvaluationDomain::from_coeffs(coeffs.clone()).unwrap();
            c.coset_fft();
            let g = Scalar::MULTIPLICATIVE_GENERATOR;
            for (i, v) in c.as_ref().iter().enumerate() {
                assert_eq!(*v, eval(&coeffs, g * w.pow_vartime([i as u64])));
            }
        }
    }

    #[test]
    fn inverse_transforms_are_identity() {
        // Sizes that take each of the three round strategies.
        for log_n in [1, 5, 11, 14] {
            let coeffs = random(1 << log_n, 100 + log_n as u64);
            let mut d = EvaluationDomain::from_coeffs(coeffs.clone()).unwrap();
            d.fft();
            assert_ne!(d.as_ref(), &coeffs[..]);
            d.ifft();
            assert_eq!(d.as_ref(), &coeffs[..]);
            d.coset_fft();
            d.icoset_fft();
            assert_eq!(d.as_ref(), &coeffs[..]);
        }
    }

    #[test]
    fn large_fft_matches_naive_at_sample_points() {
        let coeffs = random(1 << 13, 9);
        let mut d = EvaluationDomain::from_coeffs(coeffs.clone()).unwrap();
        d.fft();
        let w = d.omega();
        for i in [0usize, 1, 2, 1000, 4097, 8191] {
            assert_eq!(d.as_ref()[i], eval(&coeffs, w.pow_vartime([i as u64])));
        }
    }

    #[test]
    fn pads_to_power_of_two_and_divides_by_z() {
        let d = EvaluationDomain::from_coeffs(random(5, 3)).unwrap();
        assert_eq!(d.size(), 8);
        assert_eq!(d.z(&d.omega()), Scalar::ZERO);
        // (x^8 - 1) * q(x) divided by Z on the coset gives q back.
        let q = random(8, 4);
        let mut prod = vec![Scalar::ZERO; 16];
        for (i, c) in q.iter().enumerate() {
            prod[i] -= c;
            prod[i + 8] += c;
        }
        // Evaluate prod on the size-16 coset is not what the prover does; instead evaluate q * Z
        // on the size-8 coset pointwise, where Z is the constant g^8 - 1.
        let mut d = EvaluationDomain::from_coeffs(q.clone()).unwrap();
        d.coset_fft();
        let zg = d.z(&Scalar::MULTIPLICATIVE_GENERATOR);
        for v in d.as_mut() {
            *v *= zg;
        }
        d.divide_by_z_on_coset();
        d.icoset_fft();
        assert_eq!(d.as_ref(), &q[..]);
        let g = Scalar::MULTIPLICATIVE_GENERATOR;
        assert_eq!(eval(&prod, g), eval(&q, g) * zg);
    }

    #[test]
    fn a_quotient_finished_from_any_step_equals_the_whole() {
        // Satisfied constraints: c = a * b, so A B - C vanishes on the domain and H exists.
        let a = random(13, 5);
        let b = random(13, 6);
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let whole = quotient(a.clone(), b.clone(), c.clone()).unwrap();
        assert_eq!(whole.len(), 15);
        // H (A B - C) / Z: A B - C = H Z, checked at a point off the domain.
        let x = Scalar::from(77u64);
        let on = |v: &[Scalar]| {
            let mut d = EvaluationDomain::from_coeffs(v.to_vec()).unwrap();
            d.ifft();
            eval(d.as_ref(), x)
        };
        let z = x.pow_vartime([16]) - Scalar::ONE;
        assert_eq!(on(&a) * on(&b) - on(&c), eval(&whole, x) * z);
        for done in 0..=3 {
            let mut steps = QuotientSteps::new(a.clone(), b.clone(), c.clone());
            for input in steps.inputs.iter_mut().take(done) {
                if let QuotientInput::OnDomain(v) = input {
                    *input = QuotientInput::OnCoset(to_coset(v.clone(), 16).unwrap());
                }
            }
            assert_eq!(steps.steps_done(), done);
            assert_eq!(steps.finish_on_cpu().unwrap(), whole, "from step {done}");
        }
    }
}
