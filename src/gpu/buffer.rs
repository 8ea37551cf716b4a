//! Device buffers that count themselves: each kernel keeps the bytes of its live buffers, so the
//! preemption logic can show that a prover freed everything before it released a device.

use super::error::GpuError;
use std::sync::atomic::{AtomicU64, Ordering};

/// An OpenCL buffer of `u32` whose bytes are added to `live` while it exists.
#[derive(Debug)]
pub(crate) struct TrackedBuffer<'a> {
    buffer: ocl::Buffer<u32>,
    bytes: u64,
    live: &'a AtomicU64,
}

impl<'a> TrackedBuffer<'a> {
    /// A buffer of `len` values (at least one), filled from `data` if given.
    pub(crate) fn new(
        queue: &ocl::Queue,
        len: usize,
        data: Option<&[u32]>,
        live: &'a AtomicU64,
    ) -> Result<Self, GpuError> {
        let len = len.max(1);
        let mut builder = ocl::Buffer::<u32>::builder().queue(queue.clone()).len(len);
        if let Some(data) = data {
            builder = builder.copy_host_slice(data);
        }
        let buffer = builder.build()?;
        let bytes = 4 * len as u64;
        live.fetch_add(bytes, Ordering::Relaxed);
        Ok(TrackedBuffer {
            buffer,
            bytes,
            live,
        })
    }
}

impl std::ops::Deref for TrackedBuffer<'_> {
    type Target = ocl::Buffer<u32>;

    fn deref(&self) -> &ocl::Buffer<u32> {
        &self.buffer
    }
}

impl Drop for TrackedBuffer<'_> {
    fn drop(&mut self) {
        self.live.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}
