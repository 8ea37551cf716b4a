//! `ProofReport` as JSON, with the `serde` feature: one flat object whose keys carry their
//! units (`total_ms`), so that operators' tools, the examples' `--json` lines and the scripts
//! under `scripts/` read the same names. Durations are milliseconds (a fraction where shorter);
//! an absent latency is `null`; the chunks per device are an object keyed by device id beside
//! their sum.

use crate::options::{Priority, ProofReport};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::time::Duration;

impl Serialize for ProofReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ReportJson::from(self).serialize(serializer)
    }
}

/// The JSON form of [`ProofReport`], derived; the report serializes through it.
#[derive(Serialize)]
struct ReportJson {
    priority: Priority,
    total_ms: f64,
    synthesis_ms: f64,
    shape_used: bool,
    witness_ms: f64,
    evaluation_ms: f64,
    gpu_chunks: u64,
    gpu_chunks_by_device: BTreeMap<String, u64>,
    cpu_chunks: u64,
    total_chunks: u64,
    fft_on_gpu: bool,
    quotient_deferred: bool,
    quotient_steps_on_gpu: u64,
    quotient_first_try_steps: u64,
    preemptions: u64,
    returns_to_gpu: u64,
    cpu_chunks_without_retry: u64,
    wait_ms: f64,
    handover_ms: Option<f64>,
    yield_ms: Option<f64>,
    live_device_bytes_at_release: u64,
    peak_device_bytes: u64,
    gpu_failures: u64,
    out_of_memory: u64,
    kept_chunks: u64,
    cpu_chunks_given_up: u64,
    device_work_lost_ms: f64,
    pieces_finished_on_request: u64,
    bases_uploaded_bytes: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl From<&ProofReport> for ReportJson {
    fn from(r: &ProofReport) -> Self {
        let gpu_chunks = r.gpu_chunks_total();
        // Every field named, so that a field added to the report without a JSON key is a
        // compile error here.
        let ProofReport {
            priority,
            total,
            synthesis,
            shape_used,
            witness,
            evaluation,
            gpu_chunks: by_device,
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
        } = r.clone();
        ReportJson {
            priority,
            total_ms: ms(total),
            synthesis_ms: ms(synthesis),
            shape_used,
            witness_ms: ms(witness),
            evaluation_ms: ms(evaluation),
            gpu_chunks,
            gpu_chunks_by_device: by_device.into_iter().collect(),
            cpu_chunks,
            total_chunks,
            fft_on_gpu,
            quotient_deferred,
            quotient_steps_on_gpu,
            quotient_first_try_steps,
            preemptions,
            returns_to_gpu,
            cpu_chunks_without_retry,
            wait_ms: ms(wait),
            handover_ms: handover.map(ms),
            yield_ms: yield_latency.map(ms),
            live_device_bytes_at_release,
            peak_device_bytes,
            gpu_failures,
            out_of_memory,
            kept_chunks,
            cpu_chunks_given_up,
            device_work_lost_ms: ms(device_work_lost),
            pieces_finished_on_request,
            bases_uploaded_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn the_report_serializes_with_units_in_its_keys() {
        let mut r = ProofReport {
            priority: Priority::High,
            total: Duration::from_millis(1500),
            synthesis: Duration::from_millis(250),
            shape_used: true,
            witness: Duration::from_millis(20),
            cpu_chunks: 2,
            total_chunks: 6,
            handover: Some(Duration::from_micros(2500)),
            peak_device_bytes: 4096,
            bases_uploaded_bytes: 1 << 30,
            ..ProofReport::default()
        };
        r.add_gpu_chunks("pci-0000:00:06.0", 3);
        r.add_gpu_chunks("we\"ird", 1);
        let v: Value = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(v["priority"], "high");
        assert_eq!(v["total_ms"], 1500.0);
        assert_eq!(v["synthesis_ms"], 250.0);
        assert_eq!(v["shape_used"], true);
        assert_eq!(v["witness_ms"], 20.0);
        assert_eq!(v["evaluation_ms"], 0.0);
        assert_eq!(v["gpu_chunks"], 4);
        assert_eq!(
            v["gpu_chunks_by_device"],
            json!({"pci-0000:00:06.0": 3, "we\"ird": 1})
        );
        assert_eq!(v["cpu_chunks"], 2);
        assert_eq!(v["total_chunks"], 6);
        assert_eq!(v["handover_ms"], 2.5);
        assert_eq!(v["yield_ms"], Value::Null);
        assert_eq!(v["peak_device_bytes"], 4096);
        assert_eq!(v["fft_on_gpu"], false);
        assert_eq!(v["device_work_lost_ms"], 0.0);
        assert_eq!(v["bases_uploaded_bytes"], 1u64 << 30);
        // One key per field of the report, `gpu_chunks` twice (the sum and by device).
        assert_eq!(v.as_object().unwrap().len(), 29);
    }

    #[test]
    fn priorities_serialize_by_name_and_read_back() {
        for p in Priority::ALL {
            let s = serde_json::to_string(&p).unwrap();
            assert_eq!(s, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Priority>(&s).unwrap(), p);
        }
        assert!(serde_json::from_str::<Priority>("\"urgent\"").is_err());
    }
}
