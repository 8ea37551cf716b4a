//! Errors of the OpenCL layer. Every one of them but [`GpuError::InvalidBases`] means "do this
//! piece of work on the CPU", never a failed proof.

/// Why GPU work could not be done.
#[derive(Clone, Debug, thiserror::Error)]
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
    /// The device had too little free memory for the work (the runtime's allocation failure or
    /// out-of-resources status). The scheduler retries with fewer chunks, then the CPU.
    #[error("the device ran out of memory: {0}")]
    OutOfMemory(String),
    /// The device returned a result that cannot be right (a point off the curve, or a check
    /// computation that differs from the CPU's): a faulty device or driver.
    #[error("the device computed a wrong result: {0}")]
    WrongResult(String),
    /// Input that the kernels cannot take (a size that does not fit, mismatched lengths).
    #[error("invalid GPU input: {0}")]
    InvalidInput(String),
    /// A base encoded in a mapped parameter file is not a point on the curve (the device decodes
    /// them: `cl/decode.cl`). The CPU would refuse it too, so the multiexp fails with this
    /// message (which names the point) rather than going to the CPU.
    #[error("{0}")]
    InvalidBases(String),
}

/// Whether an OpenCL status says the device's memory (or resources) ran out.
fn out_of_memory(status: Option<ocl::core::Status>) -> bool {
    matches!(
        status,
        Some(ocl::core::Status::CL_MEM_OBJECT_ALLOCATION_FAILURE)
            | Some(ocl::core::Status::CL_OUT_OF_RESOURCES)
    )
}

impl From<ocl::Error> for GpuError {
    fn from(e: ocl::Error) -> Self {
        if out_of_memory(e.api_status()) {
            GpuError::OutOfMemory(e.to_string())
        } else {
            GpuError::Ocl(e.to_string())
        }
    }
}

impl From<ocl::core::Error> for GpuError {
    fn from(e: ocl::core::Error) -> Self {
        if out_of_memory(e.api_status()) {
            GpuError::OutOfMemory(e.to_string())
        } else {
            GpuError::Ocl(e.to_string())
        }
    }
}
