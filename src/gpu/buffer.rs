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

    /// A buffer of `len` values that `fill` writes on the host. The values are staged in pinned
    /// host memory (`CL_MEM_ALLOC_HOST_PTR`, mapped), which the device copies from at full bus
    /// speed; from an ordinary allocation the driver copies through a bounce buffer of its own,
    /// several times slower. Only the device buffer counts as live device memory.
    #[allow(unsafe_code)]
    pub(crate) fn filled(
        queue: &ocl::Queue,
        len: usize,
        live: &'a AtomicU64,
        fill: impl FnOnce(&mut [u32]),
    ) -> Result<Self, GpuError> {
        let len = len.max(1);
        let staging = ocl::Buffer::<u32>::builder()
            .queue(queue.clone())
            .flags(ocl::flags::MemFlags::new().alloc_host_ptr().read_write())
            .len(len)
            .build()?;
        // SAFETY: the only mapping of a buffer this function just made and nobody else sees.
        let mut map = unsafe { staging.map().write_invalidate().enq()? };
        fill(&mut map);
        map.unmap().queue(queue).enq()?;
        let device = Self::new(queue, len, None, live)?;
        staging.copy(&*device, None, None).queue(queue).enq()?;
        queue.finish()?;
        Ok(device)
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
