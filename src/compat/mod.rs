//! The APIs of other Groth16 crates, so that programs written for them switch by their `use`
//! lines.
//!
//! [`bellperson`] mirrors bellperson 0.27: its circuit traits (bellpepper-core 0.2, on which its
//! gadgets are written) and its `groth16` module's names and signatures.

pub mod bellperson;
