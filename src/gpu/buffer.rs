//! Device buffers that count themselves: each kernel keeps the bytes of its live buffers, so the
//! preemption logic can show that a prover freed everything before it released a device. And the
//! waits that probe while a kernel or a transfer runs (the pinned host memory transfers pass
//! through is `staging.rs`).

use super::error::GpuError;
use std::sync::atomic::{AtomicU64, Ordering};

/// The device memory of one kernel (or fake device): the bytes of its live buffers now, and the
/// most it held at once since the peak was last taken (each proof takes it when it gets and gives
/// up the device, for its report).
#[derive(Debug, Default)]
pub struct DeviceMemory {
    live: AtomicU64,
    peak: AtomicU64,
}

impl DeviceMemory {
    /// Counts `bytes` more as live.
    pub(crate) fn add(&self, bytes: u64) {
        let now = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// Counts `bytes` fewer as live.
    pub(crate) fn sub(&self, bytes: u64) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Bytes live now.
    pub fn live(&self) -> u64 {
        self.live.load(Ordering::Relaxed)
    }

    /// The most bytes live at once since the last call; starts the next count at what is live now.
    pub fn take_peak(&self) -> u64 {
        self.peak.swap(self.live(), Ordering::Relaxed)
    }
}

/// An OpenCL buffer of `u32` whose bytes are counted in `memory` while it exists.
#[derive(Debug)]
pub(crate) struct TrackedBuffer<'a> {
    buffer: ocl::Buffer<u32>,
    bytes: u64,
    memory: &'a DeviceMemory,
}

impl<'a> TrackedBuffer<'a> {
    /// A buffer of `len` values (at least one), filled from `data` if given.
    pub(crate) fn new(
        queue: &ocl::Queue,
        len: usize,
        data: Option<&[u32]>,
        memory: &'a DeviceMemory,
    ) -> Result<Self, GpuError> {
        let len = len.max(1);
        let mut builder = ocl::Buffer::<u32>::builder().queue(queue.clone()).len(len);
        if let Some(data) = data {
            builder = builder.copy_host_slice(data);
        }
        let buffer = builder.build()?;
        let bytes = 4 * len as u64;
        memory.add(bytes);
        Ok(TrackedBuffer {
            buffer,
            bytes,
            memory,
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
        self.memory.sub(self.bytes);
    }
}

/// How often [`wait_interruptible`] asks its `interrupt`, and looks at its event.
const PROBE_EVERY: std::time::Duration = std::time::Duration::from_millis(1);
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_micros(20);

/// Waits for `event`, asking `interrupt` about every millisecond. A transfer on an in-order queue
/// waits for every kernel enqueued before it, hundreds of milliseconds at 2^24 (a blocking wait
/// there keeps a 2^24 proof's quotient from probing for 0.8 s while a slot waits, H200), and a
/// prover asked to give the device up must see the request meanwhile. The queue is flushed first,
/// so that the event gets to run while we look at it. It spins rather than sleeps between looks, as
/// the driver's own blocking wait does: a thread that sleeps while the CPU's share of a multiexp
/// keeps every core busy wakes late, and the device idles meanwhile.
pub(crate) fn wait_interruptible(
    queue: &ocl::Queue,
    event: &ocl::Event,
    interrupt: &dyn Fn() -> bool,
) -> Result<(), GpuError> {
    use ocl::enums::{CommandExecutionStatus, EventInfo, EventInfoResult};
    queue.flush()?;
    let mut probed = std::time::Instant::now();
    loop {
        match event.info(EventInfo::CommandExecutionStatus) {
            Ok(EventInfoResult::CommandExecutionStatus(CommandExecutionStatus::Complete)) => {
                return Ok(())
            }
            Ok(EventInfoResult::CommandExecutionStatus(_)) => {}
            // A failed command (a negative status) or a failed query: the blocking wait reports it.
            _ => return Ok(event.wait_for()?),
        }
        if probed.elapsed() >= PROBE_EVERY {
            if interrupt() {
                return Err(GpuError::Interrupted);
            }
            probed = std::time::Instant::now();
        }
        // Some microseconds between looks: each look is a driver call, and a tight stream of
        // them would contend with the driver's own threads.
        let next = std::time::Instant::now() + LOOK_EVERY;
        while std::time::Instant::now() < next {
            std::hint::spin_loop();
        }
    }
}

/// The result a transfer thread sends on `from`, waited for while asking `interrupt` about every
/// millisecond ([`GpuError::Interrupted`] when it says yes; the caller then stops the thread).
pub(crate) fn receive_interruptible<T>(
    from: &std::sync::mpsc::Receiver<Result<T, GpuError>>,
    interrupt: &dyn Fn() -> bool,
) -> Result<T, GpuError> {
    use std::sync::mpsc::RecvTimeoutError;
    loop {
        match from.recv_timeout(PROBE_EVERY) {
            Ok(result) => return result,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(GpuError::Ocl(
                    "a transfer thread ended without its result".into(),
                ))
            }
            Err(RecvTimeoutError::Timeout) => {
                if interrupt() {
                    return Err(GpuError::Interrupted);
                }
            }
        }
    }
}

/// Ends a transfer: after an error, transfers still on the bus use the slots, so they are let
/// finish before anyone else uses them.
pub(crate) fn settled(queue: &ocl::Queue, result: Result<(), GpuError>) -> Result<(), GpuError> {
    if result.is_err() {
        let _ = queue.finish();
    }
    result
}

/// 64-bit limbs as the device reads them: pairs of 32-bit limbs, low half first, into `out`.
pub(crate) fn write_limbs(limbs: &[u64], out: &mut [u32]) {
    for (pair, l) in out.chunks_exact_mut(2).zip(limbs) {
        pair[0] = *l as u32;
        pair[1] = (*l >> 32) as u32;
    }
}

/// Whether the little-endian limbs `x` are below those of `p`.
pub(crate) fn below(x: &[u32], p: &[u32]) -> bool {
    for (x, p) in x.iter().zip(p).rev() {
        if x != p {
            return x < p;
        }
    }
    false
}

/// The phases of one device call, timed for the debug log: with debug logging on, each mark
/// waits for the queue (a little slower, so only then) and records the time since the last.
pub(crate) struct PhaseTimer {
    on: bool,
    marks: Vec<(&'static str, std::time::Instant)>,
}

impl PhaseTimer {
    /// Starts timing if debug logging is on.
    pub(crate) fn start() -> PhaseTimer {
        PhaseTimer {
            on: log::log_enabled!(log::Level::Debug),
            marks: vec![("", std::time::Instant::now())],
        }
    }

    /// A timer that records nothing, whatever the log level.
    pub(crate) fn off() -> PhaseTimer {
        PhaseTimer {
            on: false,
            marks: Vec::new(),
        }
    }

    /// Ends the phase `label` once `queue` has done its work.
    pub(crate) fn mark(&mut self, queue: &ocl::Queue, label: &'static str) -> Result<(), GpuError> {
        if self.on {
            queue.finish()?;
            self.marks.push((label, std::time::Instant::now()));
        }
        Ok(())
    }

    /// "label time, ..." of the phases, when timing.
    pub(crate) fn summary(&self) -> Option<String> {
        self.on.then(|| {
            self.marks
                .windows(2)
                .map(|w| format!("{} {:.2?}", w[1].0, w[1].1 - w[0].1))
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

/// A queue on the first OpenCL device (PoCL in CI), for unit tests of transfers and waits.
#[cfg(test)]
pub(crate) fn test_queue() -> ocl::Queue {
    let device = super::device::first_for_tests();
    let context = ocl::Context::builder()
        .platform(device.platform)
        .devices(device.device)
        .build()
        .expect("context");
    ocl::Queue::new(&context, device.device, None).expect("queue")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_memory_counts_the_peak_since_it_was_last_taken() {
        let m = DeviceMemory::default();
        m.add(100);
        m.add(50);
        m.sub(100);
        assert_eq!((m.live(), m.take_peak()), (50, 150));
        // The next count starts at what is live.
        assert_eq!(m.take_peak(), 50);
        m.sub(50);
        m.add(20);
        assert_eq!((m.live(), m.take_peak()), (20, 50));
        assert_eq!(m.take_peak(), 20);
    }

    #[test]
    fn an_interruptible_wait_asks_while_it_waits_and_ends_with_its_event() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let q = test_queue();
        // A user event: incomplete until the host says otherwise.
        let event = ocl::Event::user(&q.context()).expect("user event");
        let asked = AtomicUsize::new(0);
        let started = std::time::Instant::now();
        let waited = wait_interruptible(&q, &event, &|| asked.fetch_add(1, Ordering::Relaxed) >= 3);
        assert!(matches!(waited, Err(GpuError::Interrupted)), "{waited:?}");
        assert_eq!(asked.load(Ordering::Relaxed), 4);
        // A probe about every millisecond, not a busy stream of them.
        assert!(
            started.elapsed() >= 3 * PROBE_EVERY,
            "{:?}",
            started.elapsed()
        );
        ocl::core::set_user_event_status(&event, ocl::core::CommandExecutionStatus::Complete)
            .expect("complete the user event");
        wait_interruptible(&q, &event, &|| panic!("a done event needs no probe")).unwrap();
    }
}
