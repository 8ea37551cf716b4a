//! The scalar representation the multiexps read (CPU and GPU alike): kept at the bottom, beside
//! the curve trait's users, so that the curve code and the multiexp need not import each other.

use blstrs::Scalar;

/// A scalar in canonical (not Montgomery) form, as four little-endian 64-bit limbs. Made only from
/// a [`Scalar`], so it is below the group order and its bit 255 is clear, which the signed-window
/// recoding relies on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScalarRepr([u64; 4]);

impl From<&Scalar> for ScalarRepr {
    fn from(s: &Scalar) -> Self {
        let bytes = s.to_bytes_le();
        let mut limbs = [0u64; 4];
        for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut le = [0u8; 8];
            le.copy_from_slice(chunk);
            *limb = u64::from_le_bytes(le);
        }
        ScalarRepr(limbs)
    }
}

impl ScalarRepr {
    /// The scalar whose canonical integer is `limbs` (least significant first), which must be
    /// below the group order: from a device that made it so (the GPU quotient checks).
    #[cfg(feature = "gpu")]
    pub(crate) fn from_canonical_limbs(limbs: [u64; 4]) -> ScalarRepr {
        ScalarRepr(limbs)
    }

    /// The limbs, least significant first.
    pub fn limbs(&self) -> &[u64; 4] {
        &self.0
    }

    /// Bits `start .. start + len` (`len <= 32`) as an integer; bits past 255 read as zero.
    fn bits(&self, start: usize, len: usize) -> u64 {
        let limb = start / 64;
        let offset = start % 64;
        if limb >= 4 {
            return 0;
        }
        let mut v = self.0[limb] >> offset;
        if offset + len > 64 && limb + 1 < 4 {
            v |= self.0[limb + 1] << (64 - offset);
        }
        v & ((1u64 << len) - 1)
    }

    /// The signed digit of window `w` of width `c`: `value_w + top_(w-1) - 2^c * top_w`, where
    /// `top_w` is the highest bit of window `w`. The digits sum back to the scalar because the
    /// borrowed top bits telescope away.
    pub(crate) fn signed_digit(&self, w: usize, c: usize) -> i64 {
        let (window, borrow) = if w == 0 {
            (self.bits(0, c), 0)
        } else {
            let x = self.bits(c * w - 1, c + 1);
            (x >> 1, x & 1)
        };
        let top = window >> (c - 1);
        window as i64 + borrow as i64 - ((top as i64) << c)
    }
}
