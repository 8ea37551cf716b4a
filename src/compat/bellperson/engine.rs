//! The engine parameter bellperson's types carry.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Gt, Scalar};
use pairing::MultiMillerLoop;

/// The engines this module proves over: only [`blstrs::Bls12`], whose groups are the ones this
/// crate's prover uses.
///
/// bellperson's types and functions are generic over a pairing engine `E`; here they are too, so
/// that code naming `Parameters<Bls12>` or `create_random_proof::<Bls12, _, _, _>` compiles
/// unchanged, but `E` is bound to this trait, which the associated types tie to BLS12-381's. It is
/// sealed: no other engine can implement it.
pub trait SupportedEngine:
    MultiMillerLoop<
        Fr = Scalar,
        G1 = G1Projective,
        G1Affine = G1Affine,
        G2 = G2Projective,
        G2Affine = G2Affine,
        Gt = Gt,
    > + sealed::Sealed
{
}

impl SupportedEngine for blstrs::Bls12 {}

mod sealed {
    /// Keeps [`super::SupportedEngine`] to the engines implemented here.
    pub trait Sealed {}
    impl Sealed for blstrs::Bls12 {}
}
