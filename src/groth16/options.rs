//! What a caller asks of a proof beyond the circuit (priority, GPU use) and what it gets back
//! beside the proof: a report of where the work ran.

use std::time::Duration;

/// How urgently a proof needs a GPU. A prover holding a device yields it, between chunks, to a
/// prover of a strictly higher priority that asks for it; equal priorities never preempt each
/// other. bellperson's `priority: bool` maps `false` to [`Priority::Normal`] and `true` to
/// [`Priority::High`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Background work (sealing): uses a GPU when nobody above it wants one.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Deadline-bound work (PoSt): takes a GPU from lower priorities.
    High,
}

impl Priority {
    /// Every level, lowest first.
    pub const ALL: [Priority; 3] = [Priority::Low, Priority::Normal, Priority::High];

    /// The level as a number, 0 for the lowest.
    pub fn level(self) -> usize {
        self as usize
    }

    /// The level numbered `level` (see [`Priority::level`]).
    pub fn from_level(level: usize) -> Option<Priority> {
        Priority::ALL.get(level).copied()
    }

    /// bellperson's mapping: `true` is high priority, `false` the default.
    pub fn from_bool(high: bool) -> Priority {
        if high {
            Priority::High
        } else {
            Priority::Normal
        }
    }

    /// `low`, `normal` or `high`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
        }
    }
}

impl std::str::FromStr for Priority {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Priority::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown priority {s:?}: low, normal or high"))
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Options of [`crate::groth16::create_proof_with_options`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProveOptions {
    /// The proof's priority for GPUs.
    pub priority: Priority,
    /// Whether to use GPUs at all (with the `gpu` feature; without it, the CPU does everything).
    pub use_gpu: bool,
    /// Only these devices (ids as `gpu_info` lists them); `None` for every selected device.
    pub devices: Option<Vec<String>>,
    /// Terms per multiexp chunk: the unit of work handed to a device or the CPU, and so the
    /// bound on how long a higher priority waits for a device (one chunk of the holder).
    pub chunk_terms: usize,
}

/// Default terms per chunk: about 50 ms of the first multiexp kernel on an H200.
pub const DEFAULT_CHUNK_TERMS: usize = 1 << 16;

impl Default for ProveOptions {
    fn default() -> Self {
        ProveOptions {
            priority: Priority::Normal,
            use_gpu: true,
            devices: None,
            chunk_terms: DEFAULT_CHUNK_TERMS,
        }
    }
}

impl ProveOptions {
    /// The default options at `priority`.
    pub fn with_priority(priority: Priority) -> Self {
        ProveOptions {
            priority,
            ..ProveOptions::default()
        }
    }
}

/// Where a proof's work ran and what it waited for. Chunks are pieces of the multiexps; the
/// quotient (the FFTs) counts as one piece of GPU or CPU work.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProofReport {
    /// The priority the proof ran at.
    pub priority: Priority,
    /// Wall time of the proof, synthesis included.
    pub total: Duration,
    /// Multiexp chunks computed on each device, by device id.
    pub gpu_chunks: Vec<(String, u64)>,
    /// Multiexp chunks computed on the CPU.
    pub cpu_chunks: u64,
    /// Multiexp chunks in all; always `gpu_chunks` summed plus `cpu_chunks`.
    pub total_chunks: u64,
    /// Whether the quotient's FFTs ran on a GPU.
    pub fft_on_gpu: bool,
    /// Times this prover gave a device up to a higher priority.
    pub preemptions: u64,
    /// Times this prover took a device again after losing one to a higher priority.
    pub returns_to_gpu: u64,
    /// Time spent waiting for a device held by a lower priority to be handed over.
    pub wait: Duration,
    /// The longest hand-over this prover saw as the requester: from asking for a device held by
    /// a lower priority until holding it.
    pub handover: Option<Duration>,
    /// The longest time this prover took, as the holder, from seeing a higher request to
    /// releasing the device (its buffers freed).
    pub yield_latency: Option<Duration>,
    /// Device bytes this prover still owned when it released a device after a preemption (the
    /// largest seen; 0 means every buffer was freed first).
    pub live_device_bytes_at_release: u64,
    /// GPU errors that sent work to the CPU.
    pub gpu_failures: u64,
}

impl ProofReport {
    /// Chunks computed on any GPU.
    pub fn gpu_chunks_total(&self) -> u64 {
        self.gpu_chunks.iter().map(|(_, c)| c).sum()
    }
}
