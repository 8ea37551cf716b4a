//! Errors of the OpenCL layer. Every one of them means "do this piece of work on the CPU", never a
//! failed proof.

/// Why GPU work could not be done.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No OpenCL platform, or none of the selected devices, is present.
    #[error("no OpenCL device available{0}")]
    NoDevice(String),
    /// The OpenCL runtime reported an error.
    #[error("OpenCL error: {0}")]
    Ocl(String),
    /// A program did not compile for a device; `log` is the compiler's output.
    #[error("OpenCL program build failed on {device}: {log}")]
    BuildFailed {
        /// The device's name.
        device: String,
        /// The build log.
        log: String,
    },
    /// The work was stopped between kernel launches because a higher priority asked for the
    /// device; every buffer of it has been freed.
    #[error("interrupted: a higher priority wants the device")]
    Interrupted,
    /// Input that the kernels cannot take (a size that does not fit, mismatched lengths).
    #[error("invalid GPU input: {0}")]
    InvalidInput(String),
}

impl From<ocl::Error> for GpuError {
    fn from(e: ocl::Error) -> Self {
        GpuError::Ocl(e.to_string())
    }
}

impl From<ocl::core::Error> for GpuError {
    fn from(e: ocl::core::Error) -> Self {
        GpuError::Ocl(e.to_string())
    }
}
