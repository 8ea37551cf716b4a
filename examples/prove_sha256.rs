//! The main job, end to end: prove knowledge of a SHA-256 preimage and verify the proof.
//!
//! ```text
//! cargo run --release --example prove_sha256 -- [--message TEXT] [--proofs N] [--params FILE]
//! ```
//!
//! Parameters are generated once per message length and cached (default:
//! `params-cache/sha256-<len>.params`); later runs read them back. Each stage prints its timing;
//! `RUST_LOG=debug` shows the prover's inner phases.

#[path = "../tests/circuits/mod.rs"]
mod circuits;
#[path = "common/write_atomically.rs"]
mod write_atomically;

use blstrs::Scalar;
use circuits::Sha256Preimage;
use preemptible_groth16::groth16::{
    create_random_proof, generate_random_parameters, prepare_verifying_key, verify_proof,
    Parameters,
};
use preemptible_groth16::multicore;
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;
use write_atomically::write_atomically;

/// Proves knowledge of a SHA-256 preimage and verifies the proof.
#[derive(clap::Parser)]

struct Options {
    /// The preimage; its length fixes the circuit (parameters are cached per length).
    #[arg(
        long,
        default_value = "The short proof must get the GPU now; the long one must not lose its work."
    )]
    message: String,
    /// Proofs to make, one after another.
    #[arg(long, value_name = "N", default_value_t = 1)]
    proofs: usize,
    /// The parameter file (default: params-cache/sha256-<len>.params).
    #[arg(long, value_name = "FILE")]
    params: Option<PathBuf>,
}

fn step(n: usize, total: usize, what: &str) {
    eprintln!("[{n}/{total}] {what}");
}

/// Reads cached parameters, or generates and caches them. A cache that cannot be read is
/// reported and replaced, never trusted.
fn load_or_generate(path: &Path, len: usize) -> Result<Parameters, Box<dyn std::error::Error>> {
    if path.exists() {
        let t = Instant::now();
        // Our own cache: the encoding and curve membership are checked, the slower subgroup
        // checks are skipped. Read files from elsewhere with `checked = true`.
        match File::open(path)
            .map(BufReader::new)
            .map_err(|e| e.to_string())
            .and_then(|r| Parameters::read(r, false).map_err(|e| e.to_string()))
        {
            Ok(p) => {
                eprintln!("      read {} in {:.2?}", path.display(), t.elapsed());
                return Ok(p);
            }
            Err(e) => eprintln!("      cached parameters unusable ({e}); generating anew"),
        }
    }
    let t = Instant::now();
    eprintln!("      generating parameters (once per message length)...");
    let params = generate_random_parameters(
        Sha256Preimage {
            len,
            preimage: None,
        },
        &mut rand::thread_rng(),
    )?;
    eprintln!("      generated in {:.2?}", t.elapsed());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    write_atomically(path, |w| params.write(w))?;
    eprintln!("      cached at {}", path.display());
    Ok(params)
}

fn run(opts: Options) -> Result<(), Box<dyn std::error::Error>> {
    let preimage = opts.message.into_bytes();
    let len = preimage.len();
    let digest = Sha256::digest(&preimage);
    let inputs = Sha256Preimage::public_inputs::<Scalar>(&digest);
    let path = opts
        .params
        .unwrap_or_else(|| PathBuf::from(format!("params-cache/sha256-{len}.params")));
    eprintln!(
        "SHA-256 preimage of {len} bytes, digest {}, {} threads",
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>(),
        multicore::num_threads()
    );

    let total = 3;
    step(1, total, "parameters");
    let params = load_or_generate(&path, len)?;
    let pvk = prepare_verifying_key(&params.vk);

    let mut rng = rand::thread_rng();
    let mut proofs = Vec::with_capacity(opts.proofs);
    for i in 0..opts.proofs {
        step(2, total, &format!("proof {} of {}", i + 1, opts.proofs));
        let t = Instant::now();
        let circuit = Sha256Preimage {
            len,
            preimage: Some(preimage.clone()),
        };
        let proof = create_random_proof(circuit, &params, &mut rng)?;
        eprintln!("      proved in {:.2?}", t.elapsed());
        proofs.push(proof);
    }

    step(3, total, "verify");
    for (i, proof) in proofs.iter().enumerate() {
        let t = Instant::now();
        let ok = verify_proof(&pvk, proof, &inputs)?;
        eprintln!(
            "      proof {}: {} in {:.2?}",
            i + 1,
            if ok { "valid" } else { "INVALID" },
            t.elapsed()
        );
        if !ok {
            return Err("a proof did not verify".into());
        }
    }
    let hex: String = proofs[0]
        .to_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("{hex}");
    Ok(())
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if let Err(e) = run(<Options as clap::Parser>::parse()) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
