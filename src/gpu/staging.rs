//! The pinned host memory that uploads and downloads pass through ([`Staging`]), in two slots
//! that the host fills (or empties) while the other is on the bus.

use super::buffer::{settled, wait_interruptible};
use super::error::GpuError;
use crate::multicore;

/// What a download hands each slot's values to: `take(start, values)`.
pub(crate) type Take<'a> = dyn FnMut(usize, &[u32]) -> Result<(), GpuError> + 'a;

/// `u32` values per staging slot (32 MiB); a stager has two, and a device two stagers (one per
/// queue): 128 MiB of host memory. Slots of 8 MiB would save 96 MiB of it but fill three times
/// slower (a 128 MiB upload's filling 23 ms instead of 7.6, G1 2^24 0.218 s instead of 0.172, FFT
/// 2^24 end to end 79 ms instead of 46; H200 host, 16 cores; docs/BENCHMARKS.md): each slot is
/// filled by several threads that start and join, and the more slots, the more of those joins.
const SLOT: usize = 1 << 23;

/// Uploads of at least this many values (64 MiB) log their speed at debug level.
const LOGGED_TRANSFER: usize = 1 << 24;

/// Pinned host memory (`CL_MEM_ALLOC_HOST_PTR`, mapped once and kept mapped) that transfers
/// pass through in slots. A transfer from an ordinary allocation goes through the driver's own
/// bounce buffer, one piece at a time, at a fraction of the bus speed (about 1.5 GB/s measured on
/// the H200 host); from a pinned pointer it runs at the bus speed. With two slots the host fills
/// (or empties) one while the other is on the bus. This is NVIDIA's documented idiom for pinned
/// transfers in OpenCL (the "OpenCL Best Practices Guide", section on pinned memory).
///
/// Host memory only: the device buffers it fills are [`TrackedBuffer`](super::buffer::TrackedBuffer)s,
/// counted as usual.
pub(crate) struct Staging {
    // Field order matters: the mapping is dropped (unmapped) before its buffer.
    map: ocl::MemMap<u32>,
    _buffer: ocl::Buffer<u32>,
    /// Values per slot ([`SLOT`]; smaller in tests, to cross slots).
    slot: usize,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Staging(2 slots of {} values)", self.slot)
    }
}

impl Staging {
    /// Two slots of pinned memory for `queue`'s context.
    #[allow(unsafe_code)]
    pub(crate) fn new(queue: &ocl::Queue) -> Result<Self, GpuError> {
        Self::with_slot(queue, SLOT)
    }

    /// Two slots of `slot` values.
    #[allow(unsafe_code)]
    fn with_slot(queue: &ocl::Queue, slot: usize) -> Result<Self, GpuError> {
        let buffer = ocl::Buffer::<u32>::builder()
            .queue(queue.clone())
            .flags(ocl::flags::MemFlags::new().alloc_host_ptr().read_write())
            .len(2 * slot)
            .build()?;
        // SAFETY: the only mapping of a buffer made just now; it lives as long as the buffer
        // (field order) and is only read or written between the transfers that use it, which
        // `upload` and `download` wait for.
        let map = unsafe { buffer.map().enq()? };
        Ok(Staging {
            map,
            _buffer: buffer,
            slot,
        })
    }

    /// Values per transfer: a whole number of `unit`s that fits a slot.
    fn piece(&self, unit: usize) -> Result<usize, GpuError> {
        if unit == 0 || unit > self.slot {
            return Err(GpuError::InvalidInput(format!(
                "a unit of {unit} values does not fit a staging slot"
            )));
        }
        Ok(self.slot / unit * unit)
    }

    /// Writes `len` values into `device`, each slot's worth made by `fill(start, out)`, which
    /// fills `out` with values `start..start + out.len()` (whole `unit`s), on a few threads.
    /// Asks `interrupt` before each slot: a large transfer is several slots, and a prover asked
    /// to give the device up should not finish it first.
    pub(crate) fn upload(
        &mut self,
        queue: &ocl::Queue,
        device: &ocl::Buffer<u32>,
        len: usize,
        unit: usize,
        fill: &(dyn Fn(usize, &mut [u32]) + Sync),
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        settled(
            queue,
            self.upload_pieces(queue, device, len, unit, fill, interrupt),
        )
    }

    #[allow(unsafe_code)]
    fn upload_pieces(
        &mut self,
        queue: &ocl::Queue,
        device: &ocl::Buffer<u32>,
        len: usize,
        unit: usize,
        fill: &(dyn Fn(usize, &mut [u32]) + Sync),
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        let piece = self.piece(unit)?;
        let mut pending: [Option<ocl::Event>; 2] = [None, None];
        // Where the time goes, for the debug log of large transfers: filling the slots on the
        // host, or waiting for the bus to hand a slot back.
        let timed = len >= LOGGED_TRANSFER && log::log_enabled!(log::Level::Debug);
        let began = std::time::Instant::now();
        let mut filling = std::time::Duration::ZERO;
        for (i, start) in (0..len).step_by(piece).enumerate() {
            let end = (start + piece).min(len);
            let half = i % 2;
            if interrupt() {
                return Err(GpuError::Interrupted);
            }
            if let Some(done) = pending[half].take() {
                wait_interruptible(queue, &done, interrupt)?;
            }
            let range = slot_range(self.slot, half, end - start);
            let fill_began = std::time::Instant::now();
            fill_in_parts(start, &mut self.map[range.clone()], unit, fill);
            filling += fill_began.elapsed();
            let mut event = ocl::Event::empty();
            let source = &self.map[range];
            // SAFETY: the write reads `source`, pinned memory that stays mapped and is not
            // written again until `event` (waited for above, or below) says the write is done.
            unsafe {
                device
                    .write(source)
                    .queue(queue)
                    .offset(start)
                    .block(false)
                    .enew(&mut event)
                    .enq()?;
            }
            pending[half] = Some(event);
        }
        for done in pending.into_iter().flatten() {
            wait_interruptible(queue, &done, interrupt)?;
        }
        if timed {
            let took = began.elapsed();
            log::debug!(
                "gpu: upload of {} MiB in {took:.2?} ({:.1} GB/s): filling {filling:.2?}",
                len >> 18,
                4.0 * len as f64 / took.as_secs_f64() / 1e9,
            );
        }
        Ok(())
    }

    /// Reads `len` values of `device`, handing each slot's worth to `take(start, values)`
    /// while the next one is on the bus; asks `interrupt` before each slot.
    pub(crate) fn download(
        &mut self,
        queue: &ocl::Queue,
        device: &ocl::Buffer<u32>,
        len: usize,
        unit: usize,
        take: &mut Take<'_>,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        settled(
            queue,
            self.download_pieces(queue, device, len, unit, take, interrupt),
        )
    }

    #[allow(unsafe_code)]
    fn download_pieces(
        &mut self,
        queue: &ocl::Queue,
        device: &ocl::Buffer<u32>,
        len: usize,
        unit: usize,
        take: &mut Take<'_>,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        let piece = self.piece(unit)?;
        let stride = self.slot;
        let starts: Vec<usize> = (0..len).step_by(piece).collect();
        let enqueue = |map: &mut ocl::MemMap<u32>, i: usize| -> Result<ocl::Event, GpuError> {
            let start = starts[i];
            let end = (start + piece).min(len);
            let half = i % 2;
            let mut event = ocl::Event::empty();
            let target = &mut map[slot_range(stride, half, end - start)];
            // SAFETY: the read writes `target`, pinned memory that stays mapped and that nobody
            // reads or writes until `event` says the read is done (waited for below).
            unsafe {
                device
                    .read(target)
                    .queue(queue)
                    .offset(start)
                    .block(false)
                    .enew(&mut event)
                    .enq()?;
            }
            Ok(event)
        };
        let mut next = match starts.first() {
            Some(_) => Some(enqueue(&mut self.map, 0)?),
            None => None,
        };
        for (i, &start) in starts.iter().enumerate() {
            if interrupt() {
                return Err(GpuError::Interrupted);
            }
            let done = next.take();
            if i + 1 < starts.len() {
                next = Some(enqueue(&mut self.map, i + 1)?);
            }
            if let Some(done) = done {
                wait_interruptible(queue, &done, interrupt)?;
            }
            let end = (start + piece).min(len);
            let half = i % 2;
            take(start, &self.map[slot_range(self.slot, half, end - start)])?;
        }
        Ok(())
    }
}

/// The first `len` values of slot `half` (0 or 1) of a staging buffer with slots of `slot`.
fn slot_range(slot: usize, half: usize, len: usize) -> std::ops::Range<usize> {
    half * slot..half * slot + len
}

/// Runs `fill` over `out` (values from `start`) in up to [`multicore::fill_threads`] parts of
/// whole units.
fn fill_in_parts(
    start: usize,
    out: &mut [u32],
    unit: usize,
    fill: &(dyn Fn(usize, &mut [u32]) + Sync),
) {
    let units = out.len() / unit;
    let parts = (units / 4096).clamp(1, multicore::fill_threads());
    let per_part = units.div_ceil(parts) * unit;
    if parts == 1 {
        fill(start, out);
        return;
    }
    std::thread::scope(|scope| {
        for (k, part) in out.chunks_mut(per_part).enumerate() {
            scope.spawn(move || fill(start + k * per_part, part));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::buffer::{test_queue, DeviceMemory, TrackedBuffer};
    use std::sync::atomic::Ordering;

    /// Many pieces through two small slots (of 40 values, pieces of 5 units of 8, and a short
    /// last piece) arrive whole and in place, both ways.
    #[test]
    fn transfers_through_small_slots_arrive_in_place() {
        let q = test_queue();
        let memory = DeviceMemory::default();
        let mut staging = Staging::with_slot(&q, 40).unwrap();
        let len = 8 * 1000 + 8 * 3;
        let device = TrackedBuffer::new(&q, len, None, &memory).unwrap();
        staging
            .upload(
                &q,
                &device,
                len,
                8,
                &|start, out| {
                    assert_eq!(start % 8, 0);
                    for (i, v) in out.iter_mut().enumerate() {
                        *v = (start + i) as u32 ^ 0x5a5a;
                    }
                },
                &|| false,
            )
            .unwrap();
        let mut direct = vec![0u32; len];
        device.read(&mut direct).queue(&q).enq().unwrap();
        assert!(direct
            .iter()
            .enumerate()
            .all(|(i, v)| *v == i as u32 ^ 0x5a5a));

        let mut back = vec![0u32; len];
        let mut calls = 0;
        staging
            .download(
                &q,
                &device,
                len,
                8,
                &mut |start, values| {
                    calls += 1;
                    back[start..start + values.len()].copy_from_slice(values);
                    Ok(())
                },
                &|| false,
            )
            .unwrap();
        assert_eq!(back, direct);
        assert_eq!(calls, len.div_ceil(40));
        assert!(staging
            .upload(&q, &device, len, 41, &|_, _| {}, &|| false)
            .is_err());
        // Asked to stop, a transfer stops within one slot and says so.
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let stop_at_third = || asked.fetch_add(1, Ordering::Relaxed) >= 2;
        let filled = std::sync::atomic::AtomicUsize::new(0);
        let result = staging.upload(
            &q,
            &device,
            len,
            8,
            &|_, out| {
                filled.fetch_add(out.len(), Ordering::Relaxed);
            },
            &stop_at_third,
        );
        assert!(matches!(result, Err(GpuError::Interrupted)));
        assert_eq!(filled.load(Ordering::Relaxed), 80);
    }

    /// Slots big enough to be filled by several threads (8192 units of 8 make two parts).
    #[test]
    fn slots_filled_in_parts_arrive_in_place() {
        let q = test_queue();
        let memory = DeviceMemory::default();
        let mut staging = Staging::with_slot(&q, 8 * 8192).unwrap();
        let len = 8 * 30_000;
        let device = TrackedBuffer::new(&q, len, None, &memory).unwrap();
        staging
            .upload(
                &q,
                &device,
                len,
                8,
                &|start, out| {
                    for (i, v) in out.iter_mut().enumerate() {
                        *v = (start + i) as u32 * 3;
                    }
                },
                &|| false,
            )
            .unwrap();
        let mut direct = vec![0u32; len];
        device.read(&mut direct).queue(&q).enq().unwrap();
        assert!(direct.iter().enumerate().all(|(i, v)| *v == i as u32 * 3));
    }
}
