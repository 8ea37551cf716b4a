//! The main job: a prover process at a priority, and a demo of two of them sharing a GPU.
//!
//! ```text
//! cargo run --release --features gpu,serde --example prover -- --demo [--fake] [--low K] [--high K] \
//!     [--rounds N] [--alone] [--alone-proofs N] [--low-holds-ms MS] [--mapped] [--high-guard]
//! cargo run --release --features gpu,serde --example prover -- --circuit squares|sha256 \
//!     --log2-constraints K --priority low|normal|high --proofs N [--json] [--after-go] [--mapped] \
//!     [--shape] [--guard]
//! ```
//!
//! A prover run generates the circuit's parameters once and caches them under `params-cache/`,
//! proves `N` times, verifies each proof, and prints one line per proof (with `--json`, one JSON
//! object per line on stdout: `verified` plus the prover's report). `--demo` starts a
//! low-priority proving service and a high-priority one, as separate processes of this example
//! (each ready before its first proof, `--after-go`); the low one proves one proof after another,
//! and each high proof starts once the low one has held the GPU for `--low-holds-ms` (300 by
//! default). It samples the lock files every 2 ms, prints who held the GPU when, and writes the
//! timeline as an SVG chart (`demo-timeline.svg`, or `--svg FILE`). `--fake` (or a machine
//! without an OpenCL GPU) runs the demo on a fake device of known speed. `--rounds N` runs N
//! high-priority proofs and prints the hand-over latency's p50 and p99; `--alone` first has each
//! service prove alone (three proofs, the median of the last two counted; `--alone-proofs N`
//! counts N; 0: none; the high service counts at least `--rounds`), and prints what the
//! low-priority proofs lost, in all and after synthesis, against how long the high ones held the
//! GPU. `--after-go` makes a prover ready itself (parameters read, GPUs readied) and then start
//! each proof when a line arrives on stdin, as a service does with requests (with `--json` it
//! first prints `{"ready":true}`). `--mapped` proves from the cached file mapped into memory
//! (`MappedParameters`) instead of read into it (in the demo: the low service does); `--shape` records the circuit's shape once (no
//! witness) and proves each proof from it, computing only the witness (`PreparedParameters`).
//! `--guard` holds a `gpu::PriorityGuard` at the proofs' priority from before each proof's
//! synthesis until the proof is done, so that lower provers hand the devices over while the
//! circuit is synthesized (the README's recipe for a deadline-bound proof); `--high-guard` has
//! the demo's high service do so.

#[path = "../tests/circuits/mod.rs"]
mod circuits;
#[path = "../tests/reports/mod.rs"]
mod reports;
#[path = "common/write_atomically.rs"]
mod write_atomically;

use circuits::{Sha256Preimage, Squares};
use clap::Parser;
use preemptible_groth16::groth16::{
    create_random_proof_with_options, generate_random_parameters_with_progress,
    prepare_verifying_key, verify_proof, CircuitShape, MappedParameters, ParameterSource,
    Parameters, PreparedParameters, Priority, ProveOptions, SetupProgress,
};
use preemptible_groth16::{Circuit, Scalar};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;
use write_atomically::write_atomically;

/// A prover at a priority, or the demo of two sharing a GPU (`--demo`).
#[derive(Clone, Debug, clap::Parser)]
#[command(after_help = "Parameters are generated once per circuit and cached under params-cache/.")]
struct Args {
    /// The circuit: a chain of squarings, or SHA-256 of a preimage (about 2^15 constraints a
    /// 64-byte block).
    #[arg(long, default_value = "squares", value_parser = ["squares", "sha256"])]
    circuit: String,
    /// About 2^K constraints.
    #[arg(long = "log2-constraints", value_name = "K", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(2..=28))]
    k: u32,
    /// The proofs' priority for GPUs: low, normal or high.
    #[arg(long, default_value_t = Priority::Normal)]
    priority: Priority,
    /// Proofs to make, one after another.
    #[arg(long, value_name = "N", default_value_t = 1)]
    proofs: usize,
    /// One JSON object a proof on stdout: `verified` and the prover's report.
    #[arg(long)]
    json: bool,
    /// Run the demo: a low-priority and a high-priority prover process sharing a GPU.
    #[arg(long)]
    demo: bool,
    /// Demo on a fake device of known speed (also when no OpenCL GPU is found).
    #[arg(long)]
    fake: bool,
    /// Demo: the low-priority prover's 2^K constraints.
    #[arg(long, value_name = "K", default_value_t = 18)]
    low: u32,
    /// Demo: the high-priority prover's 2^K constraints.
    #[arg(long, value_name = "K", default_value_t = 14)]
    high: u32,
    /// Demo: high-priority proofs to make (p50 and p99 of the hand-over are printed).
    #[arg(long, value_name = "N", default_value_t = 1)]
    rounds: usize,
    /// Demo: first have each service prove alone (three proofs, the last two counted).
    #[arg(long)]
    alone: bool,
    /// Demo: proofs alone counted (0: none; the high service counts at least --rounds); implies
    /// --alone.
    #[arg(long, value_name = "N")]
    alone_proofs: Option<usize>,
    /// Be ready (parameters read, GPUs readied), then start each proof when a line arrives on
    /// stdin, as a service does with requests.
    #[arg(long)]
    after_go: bool,
    /// Demo: a high-priority proof starts once the low one has held the GPU this long.
    #[arg(long, value_name = "MS", default_value_t = 300)]
    low_holds_ms: u32,
    /// Demo: where to write the timeline chart.
    #[arg(long, value_name = "FILE", default_value = "demo-timeline.svg")]
    svg: PathBuf,
    /// Prove from the cached file mapped into memory (`MappedParameters`) instead of read into it
    /// (in the demo: the low service does).
    #[arg(long)]
    mapped: bool,
    /// Record the circuit's shape once and prove each proof from it, computing only the witness
    /// (`PreparedParameters`).
    #[arg(long)]
    shape: bool,
    /// Hold a priority guard (`gpu::PriorityGuard`) at the proofs' priority from before each
    /// proof's synthesis until it is done: lower provers hand the devices over meanwhile.
    #[arg(long)]
    guard: bool,
    /// Demo: the high service proves with `--guard`.
    #[arg(long)]
    high_guard: bool,
}

impl Args {
    /// Proofs each demo service makes alone, counted (0: none).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    fn alone(&self) -> usize {
        self.alone_proofs.unwrap_or(if self.alone { 2 } else { 0 })
    }
}

/// Makes sure the parameters of the squares circuit of `2^k` constraints are cached.
#[cfg(feature = "gpu")]
fn cache_squares_params(k: u32) -> Result<(), Box<dyn std::error::Error>> {
    let (make, name) = circuit("squares", k);
    params_for(&name, &*make).map(|_| ())
}

/// The circuit `kind` of about `2^k` constraints to prove, with its witness, and its public
/// inputs.
fn circuit(kind: &str, k: u32) -> (Box<dyn Fn(bool) -> Instance>, String) {
    match kind {
        "sha256" => {
            // About 2^15 constraints per 64-byte block of the preimage.
            let blocks = (1usize << k.saturating_sub(15)).max(1);
            let len = 64 * blocks - 9;
            let name = format!("sha256-{len}");
            (
                Box::new(move |witness| {
                    let preimage = vec![0x61u8; len];
                    let inputs = Sha256Preimage::public_inputs(&Sha256::digest(&preimage));
                    Instance::Sha(
                        Sha256Preimage {
                            len,
                            preimage: witness.then_some(preimage),
                        },
                        inputs,
                    )
                }),
                name,
            )
        }
        _ => {
            let c = Squares::log2(k);
            (
                Box::new(move |_| Instance::Squares(c, vec![c.output()])),
                format!("squares-{k}"),
            )
        }
    }
}

enum Instance {
    Squares(Squares, Vec<Scalar>),
    Sha(Sha256Preimage, Vec<Scalar>),
}

fn cache_path(name: &str) -> PathBuf {
    PathBuf::from(format!("params-cache/{name}.params"))
}

fn params_for(
    name: &str,
    make: &dyn Fn(bool) -> Instance,
) -> Result<Parameters, Box<dyn std::error::Error>> {
    let path = cache_path(name);
    if let Ok(f) = File::open(&path) {
        match Parameters::read(BufReader::new(f), false) {
            Ok(p) => return Ok(p),
            Err(e) => eprintln!(
                "cached parameters {} unusable ({e}); generating anew",
                path.display()
            ),
        }
    }
    eprintln!(
        "generating parameters for {name} (once; cached in {})...",
        path.display()
    );
    let t = Instant::now();
    let rng = &mut rand::thread_rng();
    // A bar over the points, most of a setup's time (indicatif draws nothing where stderr is
    // not a terminal).
    let bar = std::sync::OnceLock::new();
    let style = indicatif::ProgressStyle::with_template(
        "setup [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} points (eta {eta})",
    )?;
    let progress = |p: SetupProgress| match p {
        SetupProgress::Synthesized { constraints, .. } => {
            eprintln!("setup: {constraints} constraints synthesized")
        }
        SetupProgress::Points { done, total } => bar
            .get_or_init(|| indicatif::ProgressBar::new(total).with_style(style.clone()))
            .set_position(done),
        _ => {}
    };
    let params = match make(false) {
        Instance::Squares(c, _) => generate_random_parameters_with_progress(c, rng, &progress)?,
        Instance::Sha(c, _) => generate_random_parameters_with_progress(c, rng, &progress)?,
    };
    if let Some(bar) = bar.get() {
        bar.finish_and_clear();
    }
    eprintln!("generated in {:.1?}", t.elapsed());
    std::fs::create_dir_all("params-cache")?;
    write_atomically(&path, |w| params.write(w))?;
    Ok(params)
}

/// Proves `c` and verifies the proof; `guard`, if any, is dropped once the proof is made.
fn prove_one<C: Circuit<Scalar> + Send>(
    c: C,
    inputs: &[Scalar],
    params: &(dyn ParameterSource + Sync),
    options: &ProveOptions,
    guard: Option<preemptible_groth16::gpu::PriorityGuard>,
) -> Result<(bool, preemptible_groth16::groth16::ProofReport), Box<dyn std::error::Error>> {
    let (proof, report) =
        create_random_proof_with_options(c, params, &mut rand::thread_rng(), options)?;
    drop(guard);
    let verified = verify_proof(&prepare_verifying_key(params.vk()), &proof, inputs)?;
    Ok((verified, report))
}

/// Says it is ready, then waits for a line on stdin: `false` when stdin has ended.
fn wait_for_go(json: bool) -> Result<bool, Box<dyn std::error::Error>> {
    use std::io::{BufRead, Write};
    if json {
        println!("{{\"ready\":true}}");
        std::io::stdout().flush()?;
    } else {
        eprintln!("ready: a line on stdin starts the next proof");
    }
    let mut line = String::new();
    Ok(std::io::stdin().lock().read_line(&mut line)? > 0)
}

fn run_prover(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let (make, name) = circuit(&a.circuit, a.k);
    let (in_memory, mapped);
    let params: &(dyn ParameterSource + Sync) = if a.mapped {
        if !cache_path(&name).exists() {
            params_for(&name, &*make)?;
        }
        mapped = MappedParameters::open(cache_path(&name), false)?;
        &mapped
    } else {
        in_memory = params_for(&name, &*make)?;
        &in_memory
    };
    let prepared;
    let params: &(dyn ParameterSource + Sync) = if a.shape {
        let t = Instant::now();
        let shape = match make(false) {
            Instance::Squares(c, _) => CircuitShape::record(c)?,
            Instance::Sha(c, _) => CircuitShape::record(c)?,
        };
        if !a.json {
            eprintln!(
                "shape recorded in {:.2?}: {} constraints, {} terms, {:.1} MiB",
                t.elapsed(),
                shape.num_constraints(),
                shape.num_terms(),
                shape.memory_bytes() as f64 / (1 << 20) as f64
            );
        }
        prepared = PreparedParameters::new(params, shape);
        &prepared
    } else {
        params
    };
    let options = ProveOptions::with_priority(a.priority);
    // A service readies its GPUs once at start: device discovery, programs (compiled or from the
    // caches) and contexts; the proofs' times then show proving only.
    #[cfg(feature = "gpu")]
    {
        let t = Instant::now();
        let n = preemptible_groth16::gpu::backend::devices().len();
        if !a.json {
            eprintln!("{n} GPU(s) ready in {:.2?}", t.elapsed());
        }
    }
    for i in 0..a.proofs {
        if a.after_go && !wait_for_go(a.json)? {
            break;
        }
        if !a.json {
            eprintln!(
                "proof {}/{} of {name} at {} priority...",
                i + 1,
                a.proofs,
                a.priority
            );
        }
        // Before the circuit is made and synthesized: the hand-over overlaps the synthesis.
        let guard = if a.guard {
            Some(preemptible_groth16::gpu::PriorityGuard::acquire(
                a.priority,
            )?)
        } else {
            None
        };
        let (verified, report) = match make(true) {
            Instance::Squares(c, inputs) => prove_one(c, &inputs, params, &options, guard)?,
            Instance::Sha(c, inputs) => prove_one(c, &inputs, params, &options, guard)?,
        };
        if a.json {
            println!("{}", reports::report_line(verified, &report));
        } else {
            println!(
                "proof {}/{}: verified {verified}, {:.3} s, {} of {} chunks on a GPU, {} preemptions, \
                 {} returns, device memory at most {:.1} MiB",
                i + 1,
                a.proofs,
                report.total.as_secs_f64(),
                report.gpu_chunks_total(),
                report.total_chunks,
                report.preemptions,
                report.returns_to_gpu,
                report.peak_device_bytes as f64 / (1 << 20) as f64
            );
        }
        if !verified {
            return Err("a proof did not verify".into());
        }
    }
    Ok(())
}

#[cfg(feature = "gpu")]
#[path = "prover/demo.rs"]
mod demo;

fn main() {
    // Milliseconds in the log's times: the phases of a proof are milliseconds apart. A setup
    // takes minutes at large sizes (about two at 2^24 constraints): on a terminal a progress bar
    // shows it; elsewhere (a log file) its steps are logged.
    use std::io::IsTerminal;
    let setup_log = if std::io::stderr().is_terminal() {
        "warn"
    } else {
        "warn,preemptible_groth16::groth16::generator=info"
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(setup_log))
        .format_timestamp_millis()
        .init();
    let a = Args::parse();
    if a.circuit == "sha256" && a.k < 15 {
        eprintln!(
            "note: the smallest sha256 circuit is one 64-byte block, about 2^15 constraints; \
             proving that instead of 2^{}",
            a.k
        );
    }
    let result = if a.demo {
        #[cfg(feature = "gpu")]
        {
            demo::run(
                a.low,
                a.high,
                a.rounds,
                a.alone(),
                std::time::Duration::from_millis(a.low_holds_ms.into()),
                demo::How {
                    fake: a.fake,
                    low_mapped: a.mapped,
                    high_guard: a.high_guard,
                },
                &a.svg,
            )
        }
        #[cfg(not(feature = "gpu"))]
        {
            Err("the demo needs the `gpu` feature: cargo run --release --features gpu,serde --example prover -- --demo".into())
        }
    } else {
        run_prover(&a)
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
