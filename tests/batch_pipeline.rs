//! A batch synthesizes its witnesses beside its proofs: a later circuit is synthesized while an
//! earlier one is proven, no more than `ProveOptions::witnesses_ahead` witnesses are made ahead
//! of the one being proven, and with one ahead the first two are synthesized together.

mod circuits;

use circuits::Squares;
use preemptible_groth16::groth16::{
    create_proof_batch_with_options, generate_random_parameters, prepare_verifying_key,
    verify_proof, Proof, ProofReport, ProveOptions,
};
use preemptible_groth16::{Circuit, ConstraintSystem, Scalar, SynthesisError};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// [`Squares`], noting when its synthesis starts (after `t0`) under its index.
#[derive(Clone)]
struct Timed {
    inner: Squares,
    index: usize,
    t0: Instant,
    starts: Arc<Mutex<Vec<(usize, Duration)>>>,
}

impl Circuit<Scalar> for Timed {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.starts
            .lock()
            .unwrap()
            .push((self.index, self.t0.elapsed()));
        self.inner.synthesize(cs)
    }
}

/// A batch of four 2^12 squares circuits with `ahead` witnesses allowed ahead: each proof (which
/// must verify) with its report, and when each circuit's synthesis started.
type Run = (Vec<(Proof, ProofReport)>, Vec<(usize, Duration)>);

fn batch_of_four(ahead: usize) -> Run {
    let squares = Squares::log2(12);
    let rng = &mut ChaCha20Rng::seed_from_u64(3);
    let params = generate_random_parameters(squares, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let starts = Arc::new(Mutex::new(Vec::new()));
    let t0 = Instant::now();
    let circuits = (0..4)
        .map(|index| Timed {
            inner: squares,
            index,
            t0,
            starts: starts.clone(),
        })
        .collect();
    let options = ProveOptions::default().witnesses_ahead(Some(ahead));
    let rs = || {
        (0..4)
            .map(|i| Scalar::from(i as u64 + 2))
            .collect::<Vec<_>>()
    };
    let proofs = create_proof_batch_with_options(circuits, &params, rs(), rs(), &options).unwrap();
    assert_eq!(proofs.len(), 4);
    for (proof, report) in &proofs {
        assert!(verify_proof(&pvk, proof, &[squares.output()]).unwrap());
        // Each report's synthesis is its own circuit's, not the batch's.
        assert!(report.synthesis < report.total, "{report:?}");
    }
    let starts = starts.lock().unwrap().clone();
    assert_eq!(starts.len(), 4, "{starts:?}");
    (proofs, starts)
}

/// When circuit `i`'s synthesis started.
fn start_of(starts: &[(usize, Duration)], i: usize) -> Duration {
    starts.iter().find(|(j, _)| *j == i).unwrap().1
}

/// Asserts that circuit `i + gap` of a batch of four started once proof `i` was done.
fn starts_after_proofs(proofs: &[(Proof, ProofReport)], starts: &[(usize, Duration)], gap: usize) {
    for (i, (_, report)) in proofs.iter().enumerate().take(4 - gap) {
        let done = report.total;
        let start = start_of(starts, i + gap);
        assert!(
            start >= done,
            "circuit {} started at {start:?}, proof {i} done at {done:?}",
            i + gap
        );
    }
}

#[test]
fn later_witnesses_are_synthesized_while_earlier_proofs_run_and_at_most_the_bound_wait() {
    let (proofs, starts) = batch_of_four(1);
    let first_proof_done = proofs[0].1.total;
    // Beside: the second circuit is synthesized before the first proof is done.
    assert!(
        start_of(&starts, 1) < first_proof_done,
        "circuit 1 started at {:?}, proof 0 done at {first_proof_done:?}",
        start_of(&starts, 1)
    );
    // Bounded: with one witness allowed ahead, at most two are alive, so circuit i + 2 starts
    // only once proof i is done (on this path a proof takes longer than a synthesis, so without
    // the bound they would pile up).
    starts_after_proofs(&proofs, &starts, 2);
}

#[test]
fn with_no_witness_ahead_each_circuit_waits_for_the_proof_before() {
    let (proofs, starts) = batch_of_four(0);
    starts_after_proofs(&proofs, &starts, 1);
}

#[test]
fn an_unsatisfied_circuit_in_a_pipelined_batch_is_an_error() {
    #[derive(Clone)]
    struct Unsatisfied;
    impl Circuit<Scalar> for Unsatisfied {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(2u64)))?;
            let y = cs.alloc_input(|| "y", || Ok(Scalar::from(5u64)))?;
            cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            Ok(())
        }
    }
    let rng = &mut ChaCha20Rng::seed_from_u64(4);
    let params = generate_random_parameters(Unsatisfied, rng).unwrap();
    let options = ProveOptions::default().witnesses_ahead(Some(1));
    let ones = vec![Scalar::from(1u64); 5];
    let result = create_proof_batch_with_options(
        vec![Unsatisfied; 5],
        &params,
        ones.clone(),
        ones,
        &options,
    );
    assert!(
        matches!(result, Err(SynthesisError::Unsatisfiable)),
        "{result:?}"
    );
}

/// [`Squares`] whose synthesis, as circuit 0, waits for circuit 1's to start (up to 30 s), and
/// notes whether it did (only a batch that synthesizes the two at once lets it); as circuit 1,
/// says it started, then lingers and notes when it ended.
struct Rendezvous {
    inner: Squares,
    starting: Option<(std::sync::mpsc::Sender<()>, Instant, Ended)>,
    waiting: Option<(std::sync::mpsc::Receiver<()>, Met)>,
}

/// Whether circuit 0 saw circuit 1 start (`None`: circuit 0 was not synthesized).
type Met = Arc<Mutex<Option<bool>>>;
/// When circuit 1's synthesis ended, after the batch's start.
type Ended = Arc<Mutex<Option<Duration>>>;

/// How long circuit 1 lingers: far longer than a 2^10 proof.
const LINGER: Duration = Duration::from_secs(2);

impl Circuit<Scalar> for Rendezvous {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if let Some((started, met)) = self.waiting {
            let seen = started.recv_timeout(Duration::from_secs(30)).is_ok();
            *met.lock().unwrap() = Some(seen);
        }
        let Some((starting, t0, ended)) = self.starting else {
            return self.inner.synthesize(cs);
        };
        let _ = starting.send(());
        std::thread::sleep(LINGER);
        let result = self.inner.synthesize(cs);
        *ended.lock().unwrap() = Some(t0.elapsed());
        result
    }
}

#[test]
fn with_a_witness_ahead_the_first_two_circuits_are_synthesized_together() {
    let squares = Squares::log2(10);
    let rng = &mut ChaCha20Rng::seed_from_u64(5);
    let params = generate_random_parameters(squares, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let (starting, started) = std::sync::mpsc::channel();
    let (met, ended) = (Met::default(), Ended::default());
    let plain = || Rendezvous {
        inner: squares,
        starting: None,
        waiting: None,
    };
    let t0 = Instant::now();
    let circuits = vec![
        Rendezvous {
            waiting: Some((started, met.clone())),
            ..plain()
        },
        Rendezvous {
            starting: Some((starting, t0, ended.clone())),
            ..plain()
        },
        plain(),
        plain(),
    ];
    let options = ProveOptions::default().witnesses_ahead(Some(1));
    let ones = vec![Scalar::from(1u64); 4];
    let proofs =
        create_proof_batch_with_options(circuits, &params, ones.clone(), ones, &options).unwrap();
    for (proof, _) in &proofs {
        assert!(verify_proof(&pvk, proof, &[squares.output()]).unwrap());
    }
    // Together: circuit 1 started while circuit 0 was synthesized.
    let met = met.lock().unwrap().expect("circuit 0 was synthesized");
    assert!(
        met,
        "circuit 1 did not start while circuit 0 was synthesized"
    );
    // The first proof did not wait for circuit 1 (`total` runs from the batch's start, after t0).
    let ended = ended.lock().unwrap().expect("circuit 1 was synthesized");
    let first_done = proofs[0].1.total;
    assert!(
        first_done < ended,
        "proof 0 done at {first_done:?}, circuit 1 made at {ended:?}"
    );
    // Circuit 0 plainly, circuit 1 recording the shape the later two are made from.
    let used: Vec<bool> = proofs.iter().map(|(_, r)| r.shape_used).collect();
    assert_eq!(used, [false, false, true, true]);
}

#[test]
fn a_failing_second_circuit_made_beside_the_first_is_the_batch_error() {
    /// [`Squares`], or a circuit whose witness is missing.
    #[derive(Clone, Copy)]
    struct MaybeMissing(Squares, bool);
    impl Circuit<Scalar> for MaybeMissing {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            if self.1 {
                cs.alloc(|| "x", || Err(SynthesisError::AssignmentMissing))?;
            }
            self.0.synthesize(cs)
        }
    }
    let squares = Squares::log2(10);
    let rng = &mut ChaCha20Rng::seed_from_u64(6);
    let params = generate_random_parameters(MaybeMissing(squares, false), rng).unwrap();
    let circuits = [false, true, false, false]
        .map(|missing| MaybeMissing(squares, missing))
        .to_vec();
    let ones = vec![Scalar::from(1u64); 4];
    // One witness ahead: circuit 1, made beside circuit 0, fails after circuit 0 is proven; its
    // error is the batch's, not a shorter list of proofs.
    let options = ProveOptions::default().witnesses_ahead(Some(1));
    let result = create_proof_batch_with_options(circuits, &params, ones.clone(), ones, &options);
    assert!(
        matches!(result, Err(SynthesisError::AssignmentMissing)),
        "{result:?}"
    );
}
