//! Assembling kernel sources: the `.cl` files under `src/gpu/cl/`, instantiated per field with
//! constants computed here from the modulus (so no constant is typed in by hand but the moduli).

/// The scalar field `Fr` of BLS12-381 (the group order `r`), 255 bits.
pub const FR_MODULUS: &str = "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001";
/// The base field `Fq` of BLS12-381, 381 bits.
pub const FQ_MODULUS: &str = "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab";

const PRELUDE: &str = include_str!("cl/prelude.cl");
const FIELD: &str = include_str!("cl/field.cl");
const FIELD_TEST: &str = include_str!("cl/field_test.cl");
const FFT: &str = include_str!("cl/fft.cl");
const EC: &str = include_str!("cl/ec.cl");
const MULTIEXP: &str = include_str!("cl/multiexp.cl");
const DECODE: &str = include_str!("cl/decode.cl");
const FQ2: &str = include_str!("cl/fq2.cl");
const THROUGHPUT: &str = include_str!("cl/throughput.cl");

/// A prime field as the kernels need it: 32-bit limbs, least significant first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldParams {
    /// The type name in OpenCL (`Fr`, `Fq`).
    pub name: &'static str,
    /// The modulus `P`.
    pub p: Vec<u32>,
    /// `R mod P` with `R = 2^(32 * limbs)`: one in Montgomery form.
    pub one: Vec<u32>,
    /// `R^2 mod P`, which converts into Montgomery form.
    pub r2: Vec<u32>,
    /// `-P^-1 mod 2^32`.
    pub inv: u32,
}

/// Parses a big-endian hex string into little-endian 32-bit limbs.
fn limbs_from_hex(hex: &str) -> Vec<u32> {
    let digits: Vec<u32> = hex.chars().filter_map(|c| c.to_digit(16)).collect();
    let mut limbs: Vec<u32> = digits
        .rchunks(8)
        .map(|chunk| chunk.iter().fold(0u32, |acc, d| (acc << 4) | d))
        .collect();
    while limbs.len() > 1 && limbs.last() == Some(&0) {
        limbs.pop();
    }
    limbs
}

/// `2 * a mod p` for `a < p`, on limbs of `p`'s length.
fn double_mod(a: &mut [u32], p: &[u32]) {
    let mut carry = 0u32;
    for x in a.iter_mut() {
        let v = ((*x as u64) << 1) | carry as u64;
        *x = v as u32;
        carry = (v >> 32) as u32;
    }
    let ge = carry == 1 || {
        let mut ge = true;
        for (x, q) in a.iter().zip(p).rev() {
            if x != q {
                ge = x > q;
                break;
            }
        }
        ge
    };
    if ge {
        let mut borrow = 0i64;
        for (x, q) in a.iter_mut().zip(p) {
            let d = *x as i64 - *q as i64 - borrow;
            *x = d as u32;
            borrow = (d < 0) as i64;
        }
    }
}

/// `2^k mod p`.
fn pow2_mod(k: usize, p: &[u32]) -> Vec<u32> {
    let mut a = vec![0u32; p.len()];
    a[0] = 1;
    for _ in 0..k {
        double_mod(&mut a, p);
    }
    a
}

impl FieldParams {
    /// Parameters for the field with modulus `hex` (odd, big-endian hex).
    pub fn new(name: &'static str, hex: &str) -> Self {
        let p = limbs_from_hex(hex);
        let bits = 32 * p.len();
        // Newton's iteration doubles the correct low bits of p^-1 mod 2^32 each round.
        let mut inv = 1u32;
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u32.wrapping_sub(p[0].wrapping_mul(inv)));
        }
        FieldParams {
            name,
            one: pow2_mod(bits, &p),
            r2: pow2_mod(2 * bits, &p),
            inv: inv.wrapping_neg(),
            p,
        }
    }

    /// Number of 32-bit limbs.
    pub fn limbs(&self) -> usize {
        self.p.len()
    }

    fn array(limbs: &[u32]) -> String {
        let items: Vec<String> = limbs.iter().map(|l| format!("0x{l:08x}u")).collect();
        format!("{{ {} }}", items.join(", "))
    }

    /// `field.cl` (and `extra`, kernels written for one field) instantiated for this field.
    fn instantiate(&self, extra: &[&str]) -> String {
        let mut s = format!(
            "#define FIELD {}\n#define FIELD_LIMBS {}\n#define FIELD_P {}\n#define FIELD_ONE {}\n\
             #define FIELD_R2 {}\n#define FIELD_INV 0x{:08x}u\n",
            self.name,
            self.limbs(),
            Self::array(&self.p),
            Self::array(&self.one),
            Self::array(&self.r2),
            self.inv
        );
        s.push_str(FIELD);
        for e in extra {
            s.push_str(e);
        }
        s.push_str(
            "\n#undef FIELD\n#undef FIELD_LIMBS\n#undef FIELD_P\n#undef FIELD_ONE\n\
             #undef FIELD_R2\n#undef FIELD_INV\n",
        );
        s
    }
}

/// `Fr` parameters.
pub fn fr() -> FieldParams {
    FieldParams::new("Fr", FR_MODULUS)
}

/// `Fq` parameters.
pub fn fq() -> FieldParams {
    FieldParams::new("Fq", FQ_MODULUS)
}

/// The source of the field test kernels (`Fr_test_ops`, `Fq_test_ops`).
pub fn field_test_source() -> String {
    let mut s = String::from(PRELUDE);
    for field in [fr(), fq()] {
        s.push_str(&field.instantiate(&[FIELD_TEST]));
    }
    s
}

/// The source of the FFT kernels over `Fr` (`Fr_bit_reverse`, `Fr_fft_round`, `Fr_scale`,
/// `Fr_distribute_powers`).
pub fn fft_source() -> String {
    let mut s = String::from(PRELUDE);
    s.push_str(&fr().instantiate(&[FFT]));
    s
}

/// The source of the multiexp kernels of one group (`G1_msm_count`, `G1_msm_scatter`,
/// `G1_msm_segments`, the folds and the weighing, or the same for `G2`): G1 over `Fq`, G2 over
/// `Fq2`. The groups are separate programs, so that a caller of one does not wait for the other's
/// compilation.
pub fn multiexp_source(group: &str) -> String {
    group_source(group, &[MULTIEXP, DECODE].concat())
}

/// The source of the arithmetic throughput kernels of one group (`G1_mul_loop`, `G1_sqr_loop`,
/// `G1_add_affine_xyzz_loop`, `G1_add_loop`, or the same for `G2` over `Fq2`), which the benchmarks
/// time to compare the multiexp with what its arithmetic allows.
pub fn throughput_source(group: &str) -> String {
    group_source(group, THROUGHPUT)
}

/// `kernels` written against `POINT` and `FIELD`, instantiated for G1 (over `Fq`) or G2 (over
/// `Fq2`), after the point formulas.
fn group_source(group: &str, kernels: &str) -> String {
    let mut s = String::from(PRELUDE);
    if group == "G2" {
        s.push_str(&fq().instantiate(&[]));
        s.push_str(FQ2);
        s.push_str("\n#define FIELD Fq2\n#define POINT G2\n#define CURVE_OVER_FQ2\n");
        s.push_str(EC);
        s.push_str(kernels);
        s.push_str("\n#undef CURVE_OVER_FQ2\n#undef POINT\n#undef FIELD\n");
    } else {
        s.push_str(&fq().instantiate(&["#define POINT G1\n", EC, kernels, "\n#undef POINT\n"]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_satisfy_their_definitions() {
        for f in [fr(), fq()] {
            assert_eq!(
                f.p[0].wrapping_mul(f.inv),
                u32::MAX,
                "{}: p * inv = -1",
                f.name
            );
            assert!(f.p.len() == 8 || f.p.len() == 12);
            // one = R mod p, r2 = R^2 mod p: doubling `one` 32 * limbs times gives r2.
            let mut x = f.one.clone();
            for _ in 0..32 * f.limbs() {
                double_mod(&mut x, &f.p);
            }
            assert_eq!(x, f.r2, "{}", f.name);
        }
        assert_eq!(fr().p[0], 1);
        assert_eq!(fq().p[0], 0xffffaaab);
    }
}
