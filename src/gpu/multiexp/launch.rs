//! How this module's kernels are launched on a piece's queue: over whole work-groups, enqueued
//! (the module's one `unsafe` block, with what makes it sound), each launch preceded by the
//! question whether to stop, and a few words read back.

use super::curve::GpuCurve;
use super::plan::WORK_GROUP;
use crate::gpu::error::GpuError;
use crate::gpu::program::BuiltProgram;

/// Asked before each launch. When the answer is yes, the kernels already enqueued are let finish
/// (they use the call's buffers) before the buffers are dropped and the device is released.
pub(super) fn interrupted(
    queue: &ocl::Queue,
    interrupt: &dyn Fn() -> bool,
) -> Result<(), GpuError> {
    if interrupt() {
        let _ = queue.finish();
        Err(GpuError::Interrupted)
    } else {
        Ok(())
    }
}

/// A launch of kernel `name` of the group of `G` over `items` work-items (rounded up to whole
/// work-groups; the kernels bounds-check their index) on `built`'s queue.
pub(super) fn kernel_builder<'a, G: GpuCurve>(
    built: &'a BuiltProgram,
    name: &str,
    items: usize,
) -> ocl::builders::KernelBuilder<'a> {
    let mut builder = ocl::Kernel::builder();
    builder
        .program(&built.program)
        .name(format!("{}_{name}", G::NAME))
        .queue(built.queue.clone())
        .global_work_size(items.max(1).next_multiple_of(WORK_GROUP))
        .local_work_size(WORK_GROUP);
    builder
}

/// Enqueues a kernel built by this module; the event says when it is done.
#[allow(unsafe_code)]
pub(super) fn enqueue(kernel: &ocl::Kernel) -> Result<ocl::Event, GpuError> {
    let mut done = ocl::Event::empty();
    // SAFETY: the kernels of ec.cl and multiexp.cl bounds-check their work-item index against
    // their count argument (`msm_segments` also against its launch's `end_segment`), and
    // `multiexp` sizes every buffer for those counts with the argument types of the kernels'
    // signatures: two coordinates of 12 limbs per base in G1 (24 in G2), 8 limbs per scalar, one
    // counter per bucket and one offset more, one block sum per `SCAN_BLOCK` buckets (the scan
    // of them is one work-group of `SCAN_ITEMS` = `WORK_GROUP` items, which loops over them and
    // writes the offset after the last bucket), one entry per nonzero digit (the offsets' total,
    // so the scatter's atomic cursors stay inside), a long-bucket list of three words per bucket
    // that `msm_long_buckets` bounds by its `capacity` argument, one Jacobian point per bucket,
    // two per segment (head and tail), one per fold job, group and output; the fold levels'
    // ranges lie inside their input ([`fold_levels`], unit-tested) and their destinations inside
    // their output.
    unsafe { kernel.cmd().enew(&mut done).enq()? };
    Ok(done)
}

/// Enqueues a kernel built by this module, without waiting for it.
pub(super) fn launch(kernel: &ocl::Kernel) -> Result<(), GpuError> {
    enqueue(kernel).map(drop)
}

/// `len` values of `buffer` from `offset`, read straight into ordinary memory: for a few words
/// (a total, a short list), where the staging memory's two steps would cost more than they save.
/// A blocking read, which does not probe: callers wait for the kernels before it while probing
/// (`wait_interruptible`), so that it finds the queue done.
pub(super) fn read_u32s(
    queue: &ocl::Queue,
    buffer: &ocl::Buffer<u32>,
    offset: usize,
    len: usize,
) -> Result<Vec<u32>, GpuError> {
    let mut out = vec![0u32; len];
    buffer.read(&mut out).queue(queue).offset(offset).enq()?;
    Ok(out)
}
