//! Parameters with the recorded shape of their circuit ([`PreparedParameters`]).

use super::params::{ParameterSource, VerifyingKey};
use super::shape::CircuitShape;
use crate::bases::Bases;
use bellpepper_core::{Circuit, SynthesisError};
use blstrs::{G1Affine, G2Affine, Scalar};

/// Parameters (in memory, mapped, or any other [`ParameterSource`]) with the recorded shape of
/// their circuit: every proof made with them runs its circuit for the witness only and evaluates
/// the constraints from the shape ([`CircuitShape`]), at every entry point (single, batch,
/// priority, options). Each such proof is verified before it is returned.
///
/// A service records the shape once (or reads it from a file written beside the parameters),
/// maps its parameter file, and proves from both:
///
/// ```
/// use preemptible_groth16::groth16::{
///     create_random_proof_with_options, generate_random_parameters, CircuitShape,
///     MappedParameters, PreparedParameters, ProveOptions,
/// };
/// # use preemptible_groth16::{Circuit, ConstraintSystem, SynthesisError, Scalar};
/// # #[derive(Clone, Copy)]
/// # struct Square(Option<Scalar>);
/// # impl Circuit<Scalar> for Square {
/// #     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
/// #         let x = cs.alloc(|| "x", || self.0.ok_or(SynthesisError::AssignmentMissing))?;
/// #         let y = cs.alloc_input(|| "y", || self.0.map(|v| v * v).ok_or(SynthesisError::AssignmentMissing))?;
/// #         cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
/// #         Ok(())
/// #     }
/// # }
/// let dir = tempfile::tempdir()?;
/// let mut rng = rand::thread_rng();
/// // Once per circuit: the parameters and the shape, in files side by side.
/// let params = generate_random_parameters(Square(None), &mut rng)?;
/// params.write(std::fs::File::create(dir.path().join("square.params"))?)?;
/// CircuitShape::record(Square(None))?.write(std::fs::File::create(dir.path().join("square.shape"))?)?;
///
/// // At each start of the service: map the parameters, read the shape.
/// let mapped = MappedParameters::open(dir.path().join("square.params"), false)?;
/// let shape = CircuitShape::read(std::fs::File::open(dir.path().join("square.shape"))?)?;
/// let prepared = PreparedParameters::new(&mapped, shape);
/// let options = ProveOptions::default();
/// let (_proof, report) =
///     create_random_proof_with_options(Square(Some(Scalar::from(3u64))), &prepared, &mut rng, &options)?;
/// assert!(report.shape_used);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct PreparedParameters<P> {
    params: P,
    shape: CircuitShape,
}

impl<P: ParameterSource> PreparedParameters<P> {
    /// `params` with `shape`. The shape's counts are checked against the parameters' at each
    /// proof, as a circuit's are.
    pub fn new(params: P, shape: CircuitShape) -> Self {
        PreparedParameters { params, shape }
    }

    /// `params` with the shape of `circuit`, recorded without its witness
    /// ([`CircuitShape::record`]).
    pub fn record<C: Circuit<Scalar>>(params: P, circuit: C) -> Result<Self, SynthesisError> {
        Ok(Self::new(params, CircuitShape::record(circuit)?))
    }

    /// The parameters.
    pub fn params(&self) -> &P {
        &self.params
    }

    /// The shape.
    pub fn circuit_shape(&self) -> &CircuitShape {
        &self.shape
    }

    /// The parameters and the shape, apart.
    pub fn into_parts(self) -> (P, CircuitShape) {
        (self.params, self.shape)
    }
}

impl<P: ParameterSource> ParameterSource for PreparedParameters<P> {
    fn vk(&self) -> &VerifyingKey {
        self.params.vk()
    }
    fn h(&self) -> Bases<'_, G1Affine> {
        self.params.h()
    }
    fn l(&self) -> Bases<'_, G1Affine> {
        self.params.l()
    }
    fn a(&self) -> Bases<'_, G1Affine> {
        self.params.a()
    }
    fn b_g1(&self) -> Bases<'_, G1Affine> {
        self.params.b_g1()
    }
    fn b_g2(&self) -> Bases<'_, G2Affine> {
        self.params.b_g2()
    }
    fn shape(&self) -> Option<&CircuitShape> {
        Some(&self.shape)
    }
}
