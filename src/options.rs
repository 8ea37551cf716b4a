//! What a caller asks of a proof beyond the circuit (priority, GPU use) and what it gets back
//! beside the proof: a report of where the work ran.

pub use crate::priority::{ParsePriorityError, Priority};
use std::time::Duration;

/// Options of [`crate::groth16::create_proof_with_options`]: start from
/// [`ProveOptions::default`] or [`ProveOptions::with_priority`] and set what differs with the
/// methods of the same names as the fields (new options may be added, so the struct cannot be
/// written out field by field outside this crate).
///
/// ```
/// use preemptible_groth16::groth16::{Priority, ProveOptions};
/// let options = ProveOptions::with_priority(Priority::Low).use_gpu(false);
/// assert_eq!(options.priority, Priority::Low);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProveOptions {
    /// The proof's priority for GPUs.
    pub priority: Priority,
    /// Whether to use GPUs at all (with the `gpu` feature; without it, the CPU does everything).
    pub use_gpu: bool,
    /// Only these devices, by id exactly (as `gpu::backend::device_ids()` and the `gpu_info`
    /// example list them; `PREEMPTIBLE_GROTH16_GPUS` also takes name fragments); `None` for every
    /// selected device. Ids that match no device leave the proof on the CPU.
    pub devices: Option<Vec<String>>,
    /// Terms per G1 multiexp chunk (G2 chunks take a quarter): the unit of work handed to a
    /// device or the CPU, and so the bound on how long a higher priority waits for a device (one
    /// chunk of the holder).
    pub chunk_terms: usize,
    /// Quotient domains of at least this many values go in steps kept on the host from their
    /// first try on a device when the proof is at [`Priority::Low`]: a higher priority that takes
    /// the device in the middle then costs at most the step it interrupts, not the quotient so
    /// far. Each kept step
    /// costs a download (about 40 ms at 2^24) and keeps up to three coset vectors (32 bytes a
    /// value each) in host memory beside the inputs until the quotient is done, so smaller
    /// quotients, and those of higher priorities, go whole first.
    pub stepped_quotient_from: usize,
    /// In a batch of several circuits and parameters without a shape, record one circuit's
    /// constraints while it is synthesized and run the later ones for their witness only
    /// (`groth16::CircuitShape`); each proof made so is verified before it is returned. Where a
    /// witness may be made ahead ([`ProveOptions::witnesses_ahead`]), the first two circuits are
    /// synthesized at once, the first plainly so that the first proof starts sooner, and the
    /// second records (a batch of two records none); else the first records. Sound because the
    /// parameters fix the constraints: circuits whose constraints differ from the recorded one's
    /// could not give proofs that verify with the same parameters anyway.
    pub reuse_shape_in_batch: bool,
    /// In a batch, how many witnesses may be synthesized, or being synthesized, while the prover
    /// proves the one before (witnesses are synthesized beside the proofs, on a thread of their
    /// own): a batch holds at most this many witnesses plus one. One is enough for the batch
    /// to take the longer of its synthesis and its proving rather than their sum where each
    /// witness takes less time than a proof's device work; more absorb circuits whose synthesis
    /// times vary, and hold a witness each. `0`: each circuit is synthesized after the proof
    /// before it is done (their sum). `None`: one, or none where one more witness would take
    /// more than half the memory available at the batch's start (Linux). On an H100 host,
    /// batches of 10 x 2^22 and 8 x 2^24 constraints took the same time with one as with as
    /// many as fit in a quarter of the memory, and added 1.5 and 4.6 GiB at their peak against
    /// 3.7 and 11.1 GiB (commit ee6f7ab, synthesizing one circuit at a time; docs/BENCHMARKS.md).
    pub witnesses_ahead: Option<usize>,
    /// In a batch of several circuits, keep each query's bases on the devices the batch holds
    /// between its proofs, so that they go up once per batch rather than once per proof (a
    /// mapped file's are then also read and decoded once). They take device memory beside the
    /// quotient's (a query is kept only where it fits) and are freed when the device is given
    /// up, to a higher priority or at the batch's end. The batch holds its devices from its
    /// first proof's multiexps to its end (between proofs too, while the next witness is
    /// synthesized); a higher priority still takes them at any time.
    pub keep_bases_on_device: bool,
}

/// Default of [`ProveOptions::stepped_quotient_from`]: 2^22 values (a proof of more than 2^21
/// constraints).
pub const DEFAULT_STEPPED_QUOTIENT_FROM: usize = 1 << 22;

/// Default terms per chunk: a higher priority waits for at most the holder's chunk in progress
/// (hand-over p99 under 20 ms on an H200, docs/BENCHMARKS.md); smaller chunks cost more per
/// term.
pub const DEFAULT_CHUNK_TERMS: usize = 1 << 15;

impl Default for ProveOptions {
    fn default() -> Self {
        ProveOptions {
            priority: Priority::Normal,
            use_gpu: true,
            devices: None,
            chunk_terms: DEFAULT_CHUNK_TERMS,
            stepped_quotient_from: DEFAULT_STEPPED_QUOTIENT_FROM,
            reuse_shape_in_batch: true,
            witnesses_ahead: None,
            keep_bases_on_device: true,
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

    /// These options at `priority` ([`ProveOptions::priority`]).
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    /// These options with GPUs used or not ([`ProveOptions::use_gpu`]).
    pub fn use_gpu(mut self, use_gpu: bool) -> Self {
        self.use_gpu = use_gpu;
        self
    }

    /// These options on these devices only, or every selected one for `None`
    /// ([`ProveOptions::devices`]).
    pub fn devices(mut self, devices: Option<Vec<String>>) -> Self {
        self.devices = devices;
        self
    }

    /// These options with `chunk_terms` terms per G1 multiexp chunk
    /// ([`ProveOptions::chunk_terms`]).
    pub fn chunk_terms(mut self, chunk_terms: usize) -> Self {
        self.chunk_terms = chunk_terms;
        self
    }

    /// These options with low-priority quotients of at least this many values in steps
    /// ([`ProveOptions::stepped_quotient_from`]).
    pub fn stepped_quotient_from(mut self, values: usize) -> Self {
        self.stepped_quotient_from = values;
        self
    }

    /// These options with a shape recorded in a batch reused for the rest or not
    /// ([`ProveOptions::reuse_shape_in_batch`]).
    pub fn reuse_shape_in_batch(mut self, reuse: bool) -> Self {
        self.reuse_shape_in_batch = reuse;
        self
    }

    /// These options with at most `n` witnesses synthesized ahead of the one being proven in a
    /// batch, or the default for `None` ([`ProveOptions::witnesses_ahead`]).
    pub fn witnesses_ahead(mut self, n: Option<usize>) -> Self {
        self.witnesses_ahead = n;
        self
    }

    /// These options with a batch's bases kept on its devices between proofs or not
    /// ([`ProveOptions::keep_bases_on_device`]).
    pub fn keep_bases_on_device(mut self, keep: bool) -> Self {
        self.keep_bases_on_device = keep;
        self
    }
}

/// Where a proof's work ran and what it waited for. Chunks are pieces of the multiexps; the
/// quotient (the FFTs) counts as one piece of GPU or CPU work. New fields may be added, so it is
/// only made by this crate (or [`Default`]).
///
/// With the `serde` feature it serializes as one flat JSON object whose keys carry their units
/// (`total_ms`, `peak_device_bytes`; `gpu_chunks` is the sum and `gpu_chunks_by_device` the
/// parts), as the examples' `--json` prints it.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ProofReport {
    /// The priority the proof ran at.
    pub priority: Priority,
    /// Wall time from the call's start until this proof was done, its synthesis included (in a
    /// batch, from the batch's start: the last proof's `total` is the batch's).
    pub total: Duration,
    /// Wall time of this proof's witness synthesis (in a batch, each circuit's own, made while
    /// the device worked on earlier proofs), before any device is claimed: the CPU part a
    /// preemption cannot touch.
    pub synthesis: Duration,
    /// Whether the circuit ran for its witness only, its constraints evaluated from a recorded
    /// shape (`groth16::CircuitShape`: given with the parameters, or recorded from an earlier
    /// circuit of the batch); the proof was then verified before it was returned.
    pub shape_used: bool,
    /// With a shape: the time the circuit took to compute its witness.
    pub witness: Duration,
    /// With a shape: the time the constraints' evaluations and their check took.
    pub evaluation: Duration,
    /// Multiexp chunks computed on each device, by device id.
    pub gpu_chunks: Vec<(String, u64)>,
    /// Multiexp chunks computed on the CPU.
    pub cpu_chunks: u64,
    /// Multiexp chunks in all; always `gpu_chunks` summed plus `cpu_chunks`.
    pub total_chunks: u64,
    /// Whether the quotient's FFTs ran on a GPU.
    pub fft_on_gpu: bool,
    /// Whether a higher priority interrupted the quotient on a device (or asked for the device
    /// just before it started), so that the prover did its other multiexps first and then
    /// offered the quotient to a device again, waiting for one for up to 0.5 us per value before
    /// computing it on the CPU.
    pub quotient_deferred: bool,
    /// Steps of a put-off quotient done on a device, of 4 (each input moved to the coset, then
    /// the combination and the way back): the steps are kept on the host as they finish, so a
    /// device taken away in the middle loses only the step it was in.
    pub quotient_steps_on_gpu: u64,
    /// Of those, the steps of the quotient's first try that were kept when a higher priority
    /// interrupted it (a first try goes in steps for [`ProveOptions::stepped_quotient_from`]).
    pub quotient_first_try_steps: u64,
    /// Times this prover gave a device up to a higher priority.
    pub preemptions: u64,
    /// Times this prover took a device again after losing one to a higher priority.
    pub returns_to_gpu: u64,
    /// The most multiexp chunks this prover computed on the CPU one after another while it held
    /// no device, with no try for one between them. The scheduler's loop tries for a device
    /// before each CPU chunk, so this is 0 or 1 unless chunks are left to the fallback after the
    /// loop (none should be): a preempted prover returns to a free device at its next chunk
    /// boundary, not after the rest of its multiexp.
    pub cpu_chunks_without_retry: u64,
    /// Time spent waiting for a device: at the proof's start for a lower priority's hand-over,
    /// and for a put-off quotient's device while higher priorities held them.
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
    /// The most device memory this proof's work held at once on one device (0 without a GPU).
    pub peak_device_bytes: u64,
    /// GPU errors that sent work to the CPU.
    pub gpu_failures: u64,
    /// Times a device ran out of memory: it then takes fewer chunks at once, or, at one chunk,
    /// counts as a GPU failure and the CPU does the work.
    pub out_of_memory: u64,
    /// Chunks that device calls stopped early (preempted, or failed) had finished and kept: a
    /// call computes its chunks in pieces, each summed and brought back whole, so only the
    /// piece in progress is lost.
    pub kept_chunks: u64,
    /// CPU chunks given up half way because a device came back that would finish them sooner
    /// (they went back to the queue and count where they were finished).
    pub cpu_chunks_given_up: u64,
    /// Device time thrown away, which the prover computes again: multiexp calls stopped early
    /// (preempted, or failed) after their last finished piece, and quotient tries a higher
    /// priority interrupted after their last kept step, uploads included.
    pub device_work_lost: Duration,
    /// Multiexp pieces finished on a device after a higher priority had asked for it, because
    /// little of them was left: the request waited for them rather than have them thrown away.
    pub pieces_finished_on_request: u64,
    /// Bytes of multiexp bases that went up to devices from the host (calls stopped early
    /// included): the parameters' query points, or their encodings for a mapped file. Bases a
    /// device kept from an earlier proof of the batch are copied there instead and not counted
    /// ([`ProveOptions::keep_bases_on_device`]).
    pub bases_uploaded_bytes: u64,
}

impl ProofReport {
    /// Counts `chunks` more multiexp chunks on `device` (the list stays sorted by device id).
    pub(crate) fn add_gpu_chunks(&mut self, device: &str, chunks: u64) {
        match self
            .gpu_chunks
            .binary_search_by(|(id, _)| id.as_str().cmp(device))
        {
            Ok(i) => self.gpu_chunks[i].1 += chunks,
            Err(i) => self.gpu_chunks.insert(i, (device.to_owned(), chunks)),
        }
    }

    /// Adds the counters of `part`, one part of this proof's work (a backend's, or its GPU
    /// claim's): counts and times add up, the largest of the highs is kept, a flag set in either
    /// is set. `priority`, `total`, `synthesis` and the shape's fields are this report's own.
    pub(crate) fn absorb(&mut self, part: ProofReport) {
        let ProofReport {
            priority: _,
            total: _,
            synthesis: _,
            shape_used: _,
            witness: _,
            evaluation: _,
            gpu_chunks,
            cpu_chunks,
            total_chunks,
            fft_on_gpu,
            quotient_deferred,
            quotient_steps_on_gpu,
            quotient_first_try_steps,
            preemptions,
            returns_to_gpu,
            cpu_chunks_without_retry,
            wait,
            handover,
            yield_latency,
            live_device_bytes_at_release,
            peak_device_bytes,
            gpu_failures,
            out_of_memory,
            kept_chunks,
            cpu_chunks_given_up,
            device_work_lost,
            pieces_finished_on_request,
            bases_uploaded_bytes,
        } = part;
        for (device, chunks) in gpu_chunks {
            self.add_gpu_chunks(&device, chunks);
        }
        self.cpu_chunks += cpu_chunks;
        self.total_chunks += total_chunks;
        self.fft_on_gpu |= fft_on_gpu;
        self.quotient_deferred |= quotient_deferred;
        self.quotient_steps_on_gpu += quotient_steps_on_gpu;
        self.quotient_first_try_steps += quotient_first_try_steps;
        self.preemptions += preemptions;
        self.returns_to_gpu += returns_to_gpu;
        self.cpu_chunks_without_retry = self.cpu_chunks_without_retry.max(cpu_chunks_without_retry);
        self.wait += wait;
        self.handover = self.handover.max(handover);
        self.yield_latency = self.yield_latency.max(yield_latency);
        self.live_device_bytes_at_release = self
            .live_device_bytes_at_release
            .max(live_device_bytes_at_release);
        self.peak_device_bytes = self.peak_device_bytes.max(peak_device_bytes);
        self.gpu_failures += gpu_failures;
        self.out_of_memory += out_of_memory;
        self.kept_chunks += kept_chunks;
        self.cpu_chunks_given_up += cpu_chunks_given_up;
        self.device_work_lost += device_work_lost;
        self.pieces_finished_on_request += pieces_finished_on_request;
        self.bases_uploaded_bytes += bases_uploaded_bytes;
    }

    /// Chunks computed on any GPU.
    pub fn gpu_chunks_total(&self) -> u64 {
        self.gpu_chunks.iter().map(|(_, c)| c).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_parse_and_order() {
        assert!(Priority::Low < Priority::Normal && Priority::Normal < Priority::High);
        for p in Priority::ALL {
            assert_eq!(p.name().parse::<Priority>(), Ok(p));
            assert_eq!(Priority::from_level(p.level()), Some(p));
        }
        assert_eq!(
            "urgent".parse::<Priority>().unwrap_err().to_string(),
            "unknown priority \"urgent\": low, normal or high"
        );
    }

    #[test]
    fn a_part_adds_counts_keeps_the_highest_highs_and_sets_flags() {
        let ms = Duration::from_millis;
        let mut report = ProofReport {
            priority: Priority::High,
            synthesis: ms(5),
            cpu_chunks: 2,
            total_chunks: 3,
            wait: ms(1),
            handover: Some(ms(9)),
            peak_device_bytes: 100,
            ..ProofReport::default()
        };
        report.add_gpu_chunks("b", 1);
        let mut part = ProofReport {
            priority: Priority::Low,
            synthesis: ms(50),
            cpu_chunks: 1,
            total_chunks: 4,
            fft_on_gpu: true,
            wait: ms(2),
            handover: Some(ms(3)),
            yield_latency: Some(ms(4)),
            peak_device_bytes: 50,
            preemptions: 1,
            ..ProofReport::default()
        };
        part.add_gpu_chunks("b", 2);
        part.add_gpu_chunks("a", 1);
        report.absorb(part);
        assert_eq!(report.priority, Priority::High);
        assert_eq!(report.synthesis, ms(5));
        assert_eq!((report.cpu_chunks, report.total_chunks), (3, 7));
        assert_eq!(report.gpu_chunks, vec![("a".into(), 1), ("b".into(), 3)]);
        assert_eq!(
            report.gpu_chunks_total() + report.cpu_chunks,
            report.total_chunks
        );
        assert!(report.fft_on_gpu);
        assert_eq!(report.wait, ms(3));
        assert_eq!(report.handover, Some(ms(9)));
        assert_eq!(report.yield_latency, Some(ms(4)));
        assert_eq!(report.peak_device_bytes, 100);
        assert_eq!(report.preemptions, 1);
        assert_eq!(Priority::from_bool(true), Priority::High);
        assert_eq!(Priority::from_bool(false), Priority::Normal);
    }
}
