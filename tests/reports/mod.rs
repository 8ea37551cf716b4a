//! Reading the one-line JSON reports that prover processes print (the `ProofReport` through
//! serde, with `verified` beside it): shared by the process tests, the soak test and the demo
//! example.
#![allow(dead_code)]

use crate::circuits::Squares;
use preemptible_groth16::groth16::{
    create_random_proof_with_options, prepare_verifying_key, verify_proof, Parameters, ProofReport,
    ProveOptions,
};
use preemptible_groth16::Scalar;

/// A child prover's work: proves `circuit`, verifies the proof, and prints
/// `REPORT {"verified":...,<the report>}` for the parent to read with [`report_in`].
pub fn prove_and_print(circuit: Squares, params: &Parameters, options: &ProveOptions) {
    let (proof, report) =
        create_random_proof_with_options(circuit, params, &mut rand::thread_rng(), options)
            .unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let verified = verify_proof(&pvk, &proof, &[circuit.output::<Scalar>()]).unwrap();
    println!("REPORT {}", report_line(verified, &report));
}

/// One JSON object: `verified` and the report's fields.
pub fn report_line(verified: bool, report: &ProofReport) -> String {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        verified: bool,
        #[serde(flatten)]
        report: &'a ProofReport,
    }
    serde_json::to_string(&Line { verified, report }).expect("a report always serializes")
}

/// The number (or `true`/`false` as 1/0) under `key` in a JSON object (`None` for `null`, a
/// missing key or a line that is not JSON).
pub fn field(json: &str, key: &str) -> Option<f64> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    match &value[key] {
        serde_json::Value::Bool(b) => Some(f64::from(u8::from(*b))),
        v => v.as_f64(),
    }
}

/// The `q`-quantile (nearest rank) of sorted values; NaN for none.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// The report in a child's standard output: the text after `REPORT ` (libtest may print the
/// test's name on the same line before it).
pub fn report_in(stdout: &str) -> Option<&str> {
    stdout
        .lines()
        .find_map(|l| l.find("REPORT ").map(|at| &l[at + "REPORT ".len()..]))
}
