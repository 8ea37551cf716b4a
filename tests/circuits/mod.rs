//! Circuits shared by the tests, the benchmarks and the examples (each includes this file with
//! `#[path]`). Not every user needs every circuit.
#![allow(dead_code)]

use bellpepper::gadgets::boolean::{AllocatedBit, Boolean};
use bellpepper::gadgets::{multipack, sha256::sha256};
use ff::PrimeField;
use preemptible_groth16::compat::bellperson as v02;
use preemptible_groth16::{Circuit, ConstraintSystem, SynthesisError};

/// A chain of squares `x -> x^2`, `n` times, from `x = 3`, with the last value public: the
/// circuit of bellperson's own GPU test and of the peer benchmark. `n = 2^k - 2` gives the peer's
/// "2^k constraints".
#[derive(Clone, Copy, Debug)]
pub struct Squares {
    /// Number of squarings.
    pub n: u64,
}

impl Squares {
    /// The circuit the peer benchmark calls "2^k constraints".
    pub fn log2(k: u32) -> Self {
        Squares { n: (1u64 << k) - 2 }
    }

    /// The public output, `3^(2^n)`.
    pub fn output<S: PrimeField>(&self) -> S {
        let mut v = S::from(3u64);
        for _ in 0..self.n {
            v = v.square();
        }
        v
    }
}

impl<S: PrimeField> Circuit<S> for Squares {
    fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut v = S::from(3u64);
        let mut x = cs.alloc(|| "x0", || Ok(v))?;
        for _ in 0..self.n {
            let v2 = v.square();
            let x2 = cs.alloc(|| "", || Ok(v2))?;
            cs.enforce(|| "", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
            x = x2;
            v = v2;
        }
        let out = cs.alloc_input(|| "out", || Ok(v))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// [`Squares`] written against bellpepper-core 0.2 (bellperson 0.27's circuit trait), through
/// `compat::bellperson`.
#[derive(Clone, Copy, Debug)]
pub struct SquaresV02(pub Squares);

impl<S: PrimeField> v02::Circuit<S> for SquaresV02 {
    fn synthesize<CS: v02::ConstraintSystem<S>>(
        self,
        cs: &mut CS,
    ) -> Result<(), v02::SynthesisError> {
        let mut v = S::from(3u64);
        let mut x = cs.alloc(|| "x0", || Ok(v))?;
        for _ in 0..self.0.n {
            let v2 = v.square();
            let x2 = cs.alloc(|| "", || Ok(v2))?;
            cs.enforce(|| "", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
            x = x2;
            v = v2;
        }
        let out = cs.alloc_input(|| "out", || Ok(v))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}

/// Number of rounds of the MiMC permutation (322 for a 255-bit field with exponent 3 would be
/// the secure count; fewer keep tests fast and change nothing for the prover).
pub const MIMC_ROUNDS: usize = 120;

/// The MiMC round constants, fixed and public.
pub fn mimc_constants<S: PrimeField>() -> Vec<S> {
    (0..MIMC_ROUNDS as u64)
        .map(|i| S::from(i * i * 7919 + 17))
        .collect()
}

/// MiMC in Feistel mode, exponent 3: `(xl, xr) -> (xr + (xl + c_i)^3, xl)`.
pub fn mimc<S: PrimeField>(mut xl: S, mut xr: S, constants: &[S]) -> S {
    for c in constants {
        let t = xl + c;
        let next = t.square() * t + xr;
        xr = xl;
        xl = next;
    }
    xl
}

/// Knowledge of a MiMC preimage `(xl, xr)` of a public image.
#[derive(Clone, Debug)]
pub struct MiMC<S: PrimeField> {
    /// The preimage; `None` for parameter generation.
    pub preimage: Option<(S, S)>,
    /// The round constants.
    pub constants: Vec<S>,
}

impl<S: PrimeField> Circuit<S> for MiMC<S> {
    fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let missing = || SynthesisError::AssignmentMissing;
        let mut xl_val = self.preimage.map(|p| p.0);
        let mut xr_val = self.preimage.map(|p| p.1);
        let mut xl = cs.alloc(|| "xl", || xl_val.ok_or_else(missing))?;
        let mut xr = cs.alloc(|| "xr", || xr_val.ok_or_else(missing))?;
        let last = self.constants.len().saturating_sub(1);
        for (i, c) in self.constants.iter().enumerate() {
            let mut cs = cs.namespace(|| format!("round {i}"));
            // t2 = (xl + c)^2
            let t_val = xl_val.map(|v| v + c);
            let t2_val = t_val.map(|t| t.square());
            let t2 = cs.alloc(|| "t2", || t2_val.ok_or_else(missing))?;
            cs.enforce(
                || "t2 = t * t",
                |lc| lc + xl + (*c, CS::one()),
                |lc| lc + xl + (*c, CS::one()),
                |lc| lc + t2,
            );
            // next = t2 * t + xr, public in the last round
            let next_val = t_val.zip(t2_val).zip(xr_val).map(|((t, t2), r)| t2 * t + r);
            let next = if i == last {
                cs.alloc_input(|| "image", || next_val.ok_or_else(missing))?
            } else {
                cs.alloc(|| "next", || next_val.ok_or_else(missing))?
            };
            cs.enforce(
                || "next = t2 * t + xr",
                |lc| lc + t2,
                |lc| lc + xl + (*c, CS::one()),
                |lc| lc + next - xr,
            );
            xr = xl;
            xr_val = xl_val;
            xl = next;
            xl_val = next_val;
        }
        Ok(())
    }
}

/// Knowledge of a preimage of a public SHA-256 digest, built from bellpepper's gadgets. The
/// digest is exposed as packed public inputs.
#[derive(Clone, Debug)]
pub struct Sha256Preimage {
    /// Length of the preimage in bytes.
    pub len: usize,
    /// The preimage; `None` for parameter generation.
    pub preimage: Option<Vec<u8>>,
}

impl Sha256Preimage {
    /// The public inputs for `digest`.
    pub fn public_inputs<S: PrimeField>(digest: &[u8]) -> Vec<S> {
        multipack::compute_multipacking(&multipack::bytes_to_bits(digest))
    }
}

impl<S: PrimeField> Circuit<S> for Sha256Preimage {
    fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if let Some(p) = &self.preimage {
            if p.len() != self.len {
                return Err(SynthesisError::IncompatibleLengthVector(format!(
                    "preimage of {} bytes for a circuit of {}",
                    p.len(),
                    self.len
                )));
            }
        }
        let bits: Vec<Option<bool>> = match &self.preimage {
            Some(p) => multipack::bytes_to_bits(p).into_iter().map(Some).collect(),
            None => vec![None; self.len * 8],
        };
        let inputs = bits
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                AllocatedBit::alloc(cs.namespace(|| format!("preimage bit {i}")), b)
                    .map(Boolean::from)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let digest = sha256(cs.namespace(|| "sha256"), &inputs)?;
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

/// `x^2 = y` or, with `twist`, `x * 2x = y`: the same counts and densities, other constraints
/// (parameters or a shape of one do not fit the other).
#[derive(Clone, Copy, Debug)]
pub struct Twisted {
    pub x: u64,
    pub twist: bool,
}

impl<S: PrimeField> Circuit<S> for Twisted {
    fn synthesize<CS: ConstraintSystem<S>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x_val = S::from(self.x);
        let k = if self.twist { S::from(2u64) } else { S::ONE };
        let x = cs.alloc(|| "x", || Ok(x_val))?;
        let y = cs.alloc_input(|| "y", || Ok(x_val * x_val * k))?;
        cs.enforce(|| "x * kx = y", |lc| lc + x, |lc| lc + (k, x), |lc| lc + y);
        Ok(())
    }
}
