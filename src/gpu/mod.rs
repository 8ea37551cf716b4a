//! OpenCL backend (feature `gpu`): FFT and multiexp kernels, device locks and preemption.
//!
//! Empty for now: the CPU prover is complete without it. The OpenCL kernels and the lock protocol
//! arrive here behind the `gpu` cargo feature, so that a build without it needs no OpenCL.
