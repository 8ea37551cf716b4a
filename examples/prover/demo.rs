//! The demo: a long low-priority prover and a short high-priority one as separate processes of
//! this example, the lock files sampled every 2 ms, the timeline printed and drawn as SVG.

use crate::reports::{field, quantile};
use preemptible_groth16::gpu::device::{self, Selection};
use preemptible_groth16::gpu::fake::FAKE_GPUS_ENV;
use preemptible_groth16::gpu::locks;
use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One proof of the demo.
#[derive(Clone)]
struct Role {
    name: &'static str,
    k: u32,
    started: Duration,
    ended: Duration,
    report: String,
}

/// A prover process that is killed and reaped if the demo lets go of it before it has ended (an
/// error on the way), so that no prover outlives the demo.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// A proving service: one process started before the rounds, its parameters read
/// and its GPUs readied (a new process spends about half a second on that), proving one proof
/// per "go" line on stdin, as a service proves on request. The hand-over then measures
/// preemption, not process start-up, and no service start competes with the low prover for the
/// CPU in the middle of a round (a process per round did, in the eighth session's first run).
struct Service {
    child: Reaped,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
}

impl Service {
    /// Starts the service for `proofs` proofs of `2^k` constraints and waits until it is ready.
    /// `flags`: more of this example's flags for the service (`--mapped`, `--guard`).
    fn start(
        k: u32,
        priority: &str,
        proofs: usize,
        flags: &[&str],
    ) -> Result<Service, Box<dyn Error>> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--circuit", "squares", "--log2-constraints"])
            .arg(k.to_string())
            .args(["--priority", priority, "--json", "--after-go", "--proofs"])
            .arg(proofs.to_string())
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let out = child.stdout.take().map(BufReader::new);
        // From here on, `Reaped` kills and reaps the child on every path.
        let child = Reaped(child);
        let Some(out) = out else {
            return Err("the service has no stdout".into());
        };
        let mut service = Service { child, stdin, out };
        let mut line = String::new();
        service.out.read_line(&mut line)?;
        if !line.contains("\"ready\"") {
            return Err(format!("the service did not get ready: {line:?}").into());
        }
        Ok(service)
    }

    /// Asks for one proof and waits for its report: the service's pid and the proof's role.
    fn prove(
        &mut self,
        name: &'static str,
        k: u32,
        t0: Instant,
    ) -> Result<(u32, Role), Box<dyn Error>> {
        let started = t0.elapsed();
        let stdin = self.stdin.as_mut().ok_or("the service's stdin is closed")?;
        writeln!(stdin, "go")?;
        stdin.flush()?;
        // The report, skipping the "ready" line the service prints before waiting again.
        let mut line = String::new();
        loop {
            line.clear();
            if self.out.read_line(&mut line)? == 0 {
                return Err("the service ended before its report".into());
            }
            if !line.contains("\"ready\"") {
                break;
            }
        }
        Ok((self.child.0.id(), role(name, k, started, t0, &line)))
    }

    /// Closes its stdin (the service then ends) and waits for it.
    fn end(mut self) -> Result<(), Box<dyn Error>> {
        drop(self.stdin.take());
        let status = self.child.0.wait()?;
        if !status.success() {
            return Err(format!("the service ended with {status}").into());
        }
        Ok(())
    }
}

/// The role of a prover that has ended, whose last stdout line is its report.
fn role(name: &'static str, k: u32, started: Duration, t0: Instant, stdout: &str) -> Role {
    Role {
        name,
        k,
        started,
        ended: t0.elapsed(),
        report: stdout.lines().last().unwrap_or_default().to_string(),
    }
}

/// How the demo runs its provers.
#[derive(Clone, Copy, Default)]
pub struct How {
    /// A fake device of known speed instead of the machine's GPUs.
    pub fake: bool,
    /// The low service proves from its parameter file mapped (`--mapped`), as services with
    /// files of tens of GB do.
    pub low_mapped: bool,
    /// The high service holds a priority guard from before each proof's synthesis (`--guard`).
    pub high_guard: bool,
}

/// Runs the demo with a low prover of `2^low` and a high one of `2^high` constraints.
/// With `rounds > 1`, high-priority proofs run one after another while the low service proves
/// one proof after another, and the hand-over statistics are printed; with `alone_proofs`, each
/// service first proves alone that many times (the high one at least `rounds` times), after one
/// more proof that is not counted (a process's first proof pays for first touches of its
/// parameters and buffers). A high proof starts once the low one has held the GPU for
/// `low_holds`.
pub fn run(
    low: u32,
    high: u32,
    rounds: usize,
    alone_proofs: usize,
    low_holds: Duration,
    how: How,
    svg: &Path,
) -> Result<(), Box<dyn Error>> {
    let fake = how.fake;
    let real: Vec<String> = device::list(&Selection::from_env())
        .map(|d| d.into_iter().map(|d| d.id).collect())
        .unwrap_or_default();
    let devices = if fake || real.is_empty() {
        if !fake {
            eprintln!("no OpenCL GPU found: the demo runs on a fake device (2 us per term)");
        }
        std::env::set_var(FAKE_GPUS_ENV, "1:2000");
        vec!["fake-0".to_string()]
    } else {
        real
    };
    let dir = locks::lock_dir();
    std::fs::create_dir_all(&dir)?;
    // Parameters first, so that the timeline shows proving only.
    for k in [low, high] {
        crate::cache_squares_params(k)?;
    }
    eprintln!(
        "demo: low-priority proofs of 2^{low} and high-priority proofs of 2^{high} constraints; \
         devices {devices:?}; locks in {}",
        dir.display()
    );
    let rounds = rounds.max(1);
    let measure_alone = alone_proofs > 0;
    let counted_alone = alone_proofs;
    // The high proofs alone are short: as many are counted as there are rounds beside the low
    // one, so that the two medians of the ratio rest on as many proofs (two or four alone moved
    // it by up to 0.1 between runs).
    let counted_high_alone = if measure_alone {
        alone_proofs.max(rounds)
    } else {
        0
    };
    let high_alone_proofs = if measure_alone {
        1 + counted_high_alone
    } else {
        0
    };
    let alone_proofs = if measure_alone { 1 + alone_proofs } else { 0 };
    let t0 = Instant::now();
    let high_flags: &[&str] = if how.high_guard { &["--guard"] } else { &[] };
    let mut high_service = Service::start(high, "high", rounds + high_alone_proofs, high_flags)?;
    // The low service proves until its stdin closes.
    let low_flags: &[&str] = if how.low_mapped { &["--mapped"] } else { &[] };
    let mut low_service = Service::start(low, "low", 1 << 30, low_flags)?;
    let low_pid = low_service.child.0.id();
    let high_service_pid = high_service.child.0.id();
    let mut alone_roles: Vec<(u32, Role)> = Vec::new();
    for _ in 0..high_alone_proofs {
        alone_roles.push(high_service.prove("alone", high, t0)?);
    }
    for _ in 0..alone_proofs {
        alone_roles.push(low_service.prove("alone", low, t0)?);
    }
    let rounds_from = t0.elapsed();
    let stop = AtomicBool::new(false);
    let rounds_done = AtomicBool::new(false);
    // Low proofs ended so far (a round whose low proof ends before it has held the GPU for
    // `low_holds` starts once the next one holds it).
    let lows_ended = std::sync::atomic::AtomicUsize::new(0);
    let (samples, roles) = std::thread::scope(|s| -> Result<_, Box<dyn Error>> {
        let sampler = s.spawn(|| {
            let mut samples: Vec<(Duration, Option<u32>)> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let holder = locks::status(&dir, &devices[..1])
                    .ok()
                    .and_then(|st| st[0].holder.as_ref().map(|h| h.pid));
                samples.push((t0.elapsed(), holder));
                std::thread::sleep(Duration::from_millis(2));
            }
            samples
        });
        // The low service proves one proof after another until the rounds are done; its proof
        // in progress then ends before the service does.
        let lows = s.spawn(|| -> Result<Vec<(u32, Role)>, String> {
            let mut roles = Vec::new();
            while !rounds_done.load(Ordering::Relaxed) {
                roles.push(
                    low_service
                        .prove("low", low, t0)
                        .map_err(|e| e.to_string())?,
                );
                lows_ended.fetch_add(1, Ordering::Relaxed);
            }
            low_service.end().map_err(|e| e.to_string())?;
            Ok(roles)
        });
        // The rounds, in a closure of their own so that the sampler and the low service are
        // stopped on every path (the services are killed as they drop: `Reaped`).
        let mut run_rounds = || -> Result<Vec<(u32, Role)>, Box<dyn Error>> {
            let mut roles = Vec::new();
            for round in 0..rounds {
                // The high one starts once the low one has held the GPU for `low_holds`, not
                // the moment it gets it back: a request at every return would leave the low
                // one no device time at all.
                let mut held_since: Option<Instant> = None;
                let waited = Instant::now();
                let ended_before = lows_ended.load(Ordering::Relaxed);
                loop {
                    if lows.is_finished() {
                        return Err("the low service ended before the rounds did".into());
                    }
                    if waited.elapsed() > Duration::from_secs(600) {
                        return Err(
                            format!("the low prover never held the GPU in round {round}").into(),
                        );
                    }
                    let holder = locks::status(&dir, &devices[..1])?[0]
                        .holder
                        .as_ref()
                        .map(|h| h.pid);
                    if holder == Some(low_pid) {
                        let since = *held_since.get_or_insert_with(Instant::now);
                        // A low proof that ends first holds the GPU for less than `low_holds`
                        // (a 2^18 one on an H200): the round then starts as the next one holds it.
                        let shorter = lows_ended.load(Ordering::Relaxed) > ended_before;
                        if since.elapsed() >= low_holds || shorter {
                            break;
                        }
                    } else {
                        held_since = None;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                roles.push(high_service.prove("high", high, t0)?);
                if round + 1 < rounds {
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
            Ok(roles)
        };
        let highs = run_rounds();
        rounds_done.store(true, Ordering::Relaxed);
        let lows = lows
            .join()
            .map_err(|_| "the low service's thread panicked")?;
        stop.store(true, Ordering::Relaxed);
        let samples = sampler.join().map_err(|_| "the sampler panicked")?;
        // The low service's error first: the rounds' own error then is only its consequence.
        let lows = lows?;
        let mut roles = highs?;
        roles.extend(lows);
        roles.sort_by_key(|(_, r)| r.started);
        Ok((samples, roles))
    })?;
    high_service.end()?;
    let roles: Vec<(u32, Role)> = roles;

    // Segments of the same holder, from the rounds on.
    let mut segments: Vec<(Duration, Duration, Option<u32>)> = Vec::new();
    for (t, holder) in samples.iter().filter(|(t, _)| *t >= rounds_from) {
        match segments.last_mut() {
            Some(last) if last.2 == *holder => last.1 = *t,
            _ => segments.push((*t, *t, *holder)),
        }
    }
    let high_pid = roles
        .iter()
        .find(|(_, r)| r.name == "high")
        .map(|(p, _)| *p);
    let name_of = |pid: Option<u32>| match pid {
        Some(p) if p == low_pid => "low",
        Some(p) if Some(p) == high_pid => "high",
        Some(_) => "other",
        None => "free",
    };
    // Every segment and proof when there are few; a summary of many rounds otherwise.
    if segments.len() <= 40 {
        println!("who held {} (sampled every 2 ms):", devices[0]);
        for (a, b, holder) in &segments {
            println!(
                "  {:>8.3} - {:>8.3} s  {}",
                a.as_secs_f64(),
                b.as_secs_f64(),
                name_of(*holder)
            );
        }
    }
    for (pid, r) in roles.iter().filter(|_| roles.len() <= 16) {
        println!(
            "{} priority (pid {pid}, 2^{} constraints): started {:.3} s, ended {:.3} s, verified {}, \
             total {:.0} ms, synthesis {:.0} ms, hand-over {} ms, preemptions {}, returns {}, \
             GPU chunks {} of {}, kept {}, device work lost {} ms, CPU chunks given up {}",
            r.name,
            r.k,
            r.started.as_secs_f64(),
            r.ended.as_secs_f64(),
            r.report.contains("\"verified\":true"),
            field(&r.report, "total_ms").unwrap_or(f64::NAN),
            field(&r.report, "synthesis_ms").unwrap_or(f64::NAN),
            field(&r.report, "handover_ms").map_or("-".into(), |h| format!("{h:.1}")),
            field(&r.report, "preemptions").unwrap_or(f64::NAN),
            field(&r.report, "returns_to_gpu").unwrap_or(f64::NAN),
            field(&r.report, "gpu_chunks").unwrap_or(f64::NAN),
            field(&r.report, "total_chunks").unwrap_or(f64::NAN),
            field(&r.report, "kept_chunks").unwrap_or(f64::NAN),
            field(&r.report, "device_work_lost_ms").unwrap_or(f64::NAN),
            field(&r.report, "cpu_chunks_given_up").unwrap_or(f64::NAN),
        );
    }
    let of = |roles: &[(u32, Role)], name: &str, key: &str| -> Vec<f64> {
        let mut v: Vec<f64> = roles
            .iter()
            .filter(|(_, r)| r.name == name)
            .filter_map(|(_, r)| field(&r.report, key))
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    // A high proof that found the GPU free (the low one between proofs) has no hand-over.
    let handovers = of(&roles, "high", "handover_ms");
    let high_totals = of(&roles, "high", "total_ms");
    let low_totals = of(&roles, "low", "total_ms");
    let sum = |key: &str| -> f64 { of(&roles, "low", key).iter().sum() };
    let low_deferred = roles
        .iter()
        .filter(|(_, r)| r.name == "low" && r.report.contains("\"quotient_deferred\":true"))
        .count();
    let high_held: f64 = segments
        .iter()
        .filter(|(_, _, h)| name_of(*h) == "high")
        .map(|(a, b, _)| (*b - *a).as_secs_f64() * 1e3)
        .sum();
    let low_ends: Vec<Duration> = roles
        .iter()
        .filter(|(_, r)| r.name == "low")
        .map(|(_, r)| r.ended)
        .collect();
    // The free segments between a holder named `before` and one named `after`, in ms; not those
    // around a low proof's end (the next low proof's synthesis then leaves the GPU free).
    let free_between = |before: &str, after: &str| -> Vec<f64> {
        segments
            .windows(3)
            .filter(|w| name_of(w[0].2) == before && w[1].2.is_none() && name_of(w[2].2) == after)
            .filter(|w| !low_ends.iter().any(|e| *e > w[0].0 && *e < w[2].0))
            .map(|w| (w[2].0 - w[0].1).as_secs_f64() * 1e3)
            .collect()
    };
    // After a high proof, before the low one took the GPU back: the low prover's return latency,
    // plus the 2 ms of sampling.
    let returns = free_between("high", "low");
    // After the low prover released the GPU, before a high one took it: the sampling's 2 ms, or
    // with `--high-guard` the rest of the high proof's synthesis (the low prover yielded to the
    // guard), which the low prover loses as it loses the hold.
    let reserved = free_between("low", "high");
    let reserved_ms: f64 = reserved.iter().sum();
    println!(
        "{} high-priority proofs, {} of them took the GPU from a low one; hand-over: p50 {:.1} ms, \
         p99 {:.1} ms, max {:.1} ms",
        high_totals.len(),
        handovers.len(),
        quantile(&handovers, 0.5),
        quantile(&handovers, 0.99),
        handovers.last().copied().unwrap_or(f64::NAN),
    );
    if !handovers.is_empty() && handovers.len() <= 100 {
        let list: Vec<String> = handovers.iter().map(|h| format!("{h:.1}")).collect();
        println!("hand-over samples (ms, sorted): {}", list.join(" "));
    }
    println!(
        "high-priority proof while the low one runs: p50 {:.0} ms, p99 {:.0} ms; the high ones \
         held the GPU {high_held:.0} ms in all",
        quantile(&high_totals, 0.5),
        quantile(&high_totals, 0.99),
    );
    if !reserved.is_empty() {
        println!(
            "the GPU stood free between the low one's release and a high proof {} times: {:.0} ms \
             in all, at most {:.0} ms",
            reserved.len(),
            reserved_ms,
            reserved.iter().copied().fold(0.0, f64::max),
        );
    }
    if !returns.is_empty() {
        println!(
            "the GPU stood free between a high proof and the low one's return {} times: {:.0} ms \
             in all, at most {:.0} ms",
            returns.len(),
            returns.iter().sum::<f64>(),
            returns.iter().copied().fold(0.0, f64::max),
        );
    }
    println!(
        "{} low-priority proofs: {:.0} ms in all, {} preemptions, {} returns to the GPU, {} chunks \
         kept from stopped calls, {:.0} ms of device work thrown away by them, {} pieces \
         finished on request, {} CPU chunks given up to a device back; {low_deferred} quotients \
         put off, {} of their steps on a GPU",
        low_totals.len(),
        low_totals.iter().sum::<f64>(),
        sum("preemptions"),
        sum("returns_to_gpu"),
        sum("kept_chunks"),
        sum("device_work_lost_ms"),
        sum("pieces_finished_on_request"),
        sum("cpu_chunks_given_up"),
        sum("quotient_steps_on_gpu"),
    );
    if measure_alone {
        // The alone figures: the median of the proofs after each service's first.
        let counted: Vec<(u32, Role)> = ["high", "low"]
            .iter()
            .flat_map(|name| {
                let (pid, count) = if *name == "high" {
                    (high_service_pid, counted_high_alone)
                } else {
                    (low_pid, counted_alone)
                };
                alone_roles
                    .iter()
                    .filter(move |(p, _)| *p == pid)
                    .skip(1)
                    .take(count)
                    .map(move |(p, r)| (*p, Role { name, ..r.clone() }))
            })
            .collect();
        let after_synthesis = |roles: &[(u32, Role)], name: &str| -> Vec<f64> {
            let mut v: Vec<f64> = roles
                .iter()
                .filter(|(_, r)| r.name == name)
                .filter_map(|(_, r)| {
                    Some(field(&r.report, "total_ms")? - field(&r.report, "synthesis_ms")?)
                })
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let high_alone = quantile(&of(&counted, "high", "total_ms"), 0.5);
        let low_alone = quantile(&of(&counted, "low", "total_ms"), 0.5);
        let low_alone_after = quantile(&after_synthesis(&counted, "low"), 0.5);
        let lost: f64 = low_totals.iter().map(|t| t - low_alone).sum();
        // Synthesis comes before a prover claims a device, so a preemption cannot slow it; the
        // time after it is what the GPU's sharing can change.
        let lost_after: f64 = after_synthesis(&roles, "low")
            .iter()
            .map(|t| t - low_alone_after)
            .sum();
        println!(
            "alone (medians after a first): high-priority proof {high_alone:.0} ms (of \
             {counted_high_alone}), low-priority proof {low_alone:.0} ms ({low_alone_after:.0} ms \
             after synthesis; of {counted_alone})"
        );
        // Issue 31's figure for the high proofs: the p50 beside the low one over the median alone.
        println!(
            "high-priority proof beside the low one / alone: {:.2}x",
            quantile(&high_totals, 0.5) / high_alone.max(1e-9)
        );
        // Where a high proof's time beside the low one goes: its synthesis (beside the low
        // prover's host work) and the rest (the hand-over, then its own device work).
        let p50 = |v: Vec<f64>| quantile(&v, 0.5);
        println!(
            "high-priority proof's synthesis: p50 {:.1} ms beside the low one, {:.1} ms alone; \
             after it: p50 {:.1} ms beside, {:.1} ms alone",
            p50(of(&roles, "high", "synthesis_ms")),
            p50(of(&counted, "high", "synthesis_ms")),
            p50(after_synthesis(&roles, "high")),
            p50(after_synthesis(&counted, "high")),
        );
        println!(
            "low-priority proofs preempted: lost {lost:.0} ms in all, {lost_after:.0} ms after \
             synthesis, for {high_held:.0} ms the high ones held the GPU: {:.2}x after synthesis",
            lost_after / high_held.max(1e-9)
        );
        if how.high_guard {
            println!(
                "with the GPU's free time before each high proof ({reserved_ms:.0} ms, their \
                 guards up while they synthesized) counted as held: {:.2}x after synthesis",
                lost_after / (high_held + reserved_ms).max(1e-9)
            );
        }
        // The ratio above falls as the high proofs get slower and rises as they get faster,
        // whatever the low prover does; what a preemption costs it beyond the hold does not.
        let preemptions = sum("preemptions");
        if preemptions > 0.0 {
            println!(
                "beyond the hold, each of the {preemptions:.0} preemptions cost the low proofs \
                 {:.0} ms after synthesis",
                (lost_after - high_held) / preemptions
            );
        }
    }
    write_svg(svg, &segments, &roles, &name_of)?;
    println!("timeline chart: {}", svg.display());
    if roles
        .iter()
        .chain(&alone_roles)
        .any(|(_, r)| !r.report.contains("\"verified\":true"))
    {
        return Err("a proof did not verify".into());
    }
    Ok(())
}

/// Draws the timeline: one row per process (its lifetime as a thin bar, its time on the GPU as a
/// thick one) and a time axis.
fn write_svg(
    path: &Path,
    segments: &[(Duration, Duration, Option<u32>)],
    roles: &[(u32, Role)],
    name_of: &dyn Fn(Option<u32>) -> &'static str,
) -> Result<(), Box<dyn Error>> {
    let end = roles
        .iter()
        .map(|(_, r)| r.ended)
        .max()
        .unwrap_or_default()
        .as_secs_f64()
        .max(0.001);
    let (left, width, row) = (110.0, 760.0, 44.0);
    let x = |t: f64| left + width * t / end;
    let mut svg = String::new();
    // One row per process when there are few; one per role (all its processes) otherwise.
    let rows: Vec<Vec<&(u32, Role)>> = if roles.len() <= 12 {
        roles.iter().map(|r| vec![r]).collect()
    } else {
        ["low", "high"]
            .iter()
            .map(|name| roles.iter().filter(|(_, r)| r.name == *name).collect())
            .collect()
    };
    let height = 40.0 + row * rows.len() as f64 + 40.0;
    svg.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"22\">Who held the GPU (lock files sampled every 2 ms)</text>\n"
    ));
    for (i, members) in rows.iter().enumerate() {
        let y = 40.0 + row * i as f64;
        let Some((_, first)) = members.first() else {
            continue;
        };
        let color = if first.name == "high" {
            "#d62728"
        } else {
            "#1f77b4"
        };
        let count = if members.len() > 1 {
            format!(" (x{})", members.len())
        } else {
            String::new()
        };
        svg.push_str(&format!(
            "<text x=\"10\" y=\"{}\">{} 2^{}{count}</text>\n",
            y + 22.0,
            first.name,
            first.k
        ));
        for (pid, r) in members {
            svg.push_str(&format!(
                "<rect x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"4\" fill=\"#999\"/>\n",
                x(r.started.as_secs_f64()),
                y + 16.0,
                (x(r.ended.as_secs_f64()) - x(r.started.as_secs_f64())).max(1.0)
            ));
            for (a, b, holder) in segments {
                // The segments of this role's lifetime (a service's pid serves many proofs).
                let during = *a >= r.started && *a <= r.ended;
                if *holder == Some(*pid) && name_of(*holder) == r.name && during {
                    svg.push_str(&format!(
                        "<rect x=\"{:.1}\" y=\"{}\" width=\"{:.1}\" height=\"24\" fill=\"{color}\"/>\n",
                        x(a.as_secs_f64()),
                        y + 6.0,
                        (x(b.as_secs_f64()) - x(a.as_secs_f64())).max(1.0)
                    ));
                }
            }
        }
    }
    let axis = 40.0 + row * rows.len() as f64 + 10.0;
    svg.push_str(&format!(
        "<line x1=\"{left}\" y1=\"{axis}\" x2=\"{}\" y2=\"{axis}\" stroke=\"black\"/>\n",
        left + width
    ));
    let step = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0]
        .into_iter()
        .find(|s| end / s <= 10.0)
        .unwrap_or(120.0);
    let mut t = 0.0;
    while t <= end + 1e-9 {
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{t:.1} s</text>\n",
            x(t),
            axis + 18.0
        ));
        t += step;
    }
    svg.push_str("</svg>\n");
    crate::write_atomically::write_atomically(path, |w| w.write_all(svg.as_bytes()))?;
    Ok(())
}
