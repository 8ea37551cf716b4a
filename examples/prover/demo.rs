//! The demo: a long low-priority prover and a short high-priority one as separate processes of
//! this example, the lock files sampled every 2 ms, the timeline printed and drawn as SVG.

#[path = "../../tests/reports/mod.rs"]
mod reports;

use preemptible_groth16::gpu::device::{self, Selection};
use preemptible_groth16::gpu::fake::FAKE_GPUS_ENV;
use preemptible_groth16::gpu::locks;
use reports::{field, quantile};
use std::error::Error;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the low prover holds the GPU before a high one starts its proof.
const LOW_HOLDS_FIRST: Duration = Duration::from_millis(300);

/// One process of the demo.
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

fn spawn(k: u32, priority: &str) -> Result<Reaped, Box<dyn Error>> {
    Ok(Reaped(
        Command::new(std::env::current_exe()?)
            .args(["--circuit", "squares", "--log2-constraints"])
            .arg(k.to_string())
            .args(["--priority", priority, "--json"])
            .stdout(Stdio::piped())
            .spawn()?,
    ))
}

/// A high-priority proving service: one process started before the rounds, its parameters read
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
    fn start(k: u32, priority: &str, proofs: usize) -> Result<Service, Box<dyn Error>> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--circuit", "squares", "--log2-constraints"])
            .arg(k.to_string())
            .args(["--priority", priority, "--json", "--after-go", "--proofs"])
            .arg(proofs.to_string())
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

/// Waits for a prover and returns its pid and role (its last stdout line is its report).
fn finish(
    name: &'static str,
    k: u32,
    mut prover: Reaped,
    started: Duration,
    t0: Instant,
) -> Result<(u32, Role), Box<dyn Error>> {
    let pid = prover.0.id();
    let mut stdout = String::new();
    if let Some(mut out) = prover.0.stdout.take() {
        out.read_to_string(&mut stdout)?;
    }
    prover.0.wait()?;
    Ok((pid, role(name, k, started, t0, &stdout)))
}

/// One prover alone: its report.
fn alone(k: u32, priority: &str) -> Result<String, Box<dyn Error>> {
    let t0 = Instant::now();
    let prover = spawn(k, priority)?;
    Ok(finish("alone", k, prover, Duration::ZERO, t0)?.1.report)
}

/// Runs the demo with a low prover of `2^low` and a high one of `2^high` constraints.
/// With `rounds > 1`, high-priority provers run one after another while the low one lives, and
/// the hand-over statistics are printed; with `measure_alone`, each prover first runs alone.
pub fn run(
    low: u32,
    high: u32,
    rounds: usize,
    measure_alone: bool,
    fake: bool,
    svg: &Path,
) -> Result<(), Box<dyn Error>> {
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
        "demo: low-priority proof of 2^{low} and high-priority proof of 2^{high} constraints; \
         devices {devices:?}; locks in {}",
        dir.display()
    );
    let alone_times = if measure_alone {
        let h = alone(high, "high")?;
        let l = alone(low, "low")?;
        let ms = |r: &str| field(r, "total_ms").unwrap_or(f64::NAN);
        println!(
            "alone: high-priority proof {:.0} ms, low-priority proof {:.0} ms",
            ms(&h),
            ms(&l)
        );
        Some((
            ms(&h),
            ms(&l),
            field(&l, "synthesis_ms").unwrap_or(f64::NAN),
        ))
    } else {
        None
    };

    let t0 = Instant::now();
    let stop = AtomicBool::new(false);
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
        // The low prover (spawned anew when one ends before the rounds are done) and, one after
        // another, the high ones.
        let spawn_low = |roles: &Vec<(u32, Role)>| -> Result<(Reaped, Duration), Box<dyn Error>> {
            let child = spawn(low, "low")?;
            let pid = child.0.id();
            let started = t0.elapsed();
            let waited = Instant::now();
            while locks::status(&dir, &devices[..1])?[0]
                .holder
                .as_ref()
                .map(|h| h.pid)
                != Some(pid)
            {
                if waited.elapsed() > Duration::from_secs(600) {
                    return Err(format!(
                        "the low prover never took the GPU ({} processes so far)",
                        roles.len()
                    )
                    .into());
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(LOW_HOLDS_FIRST);
            Ok((child, started))
        };
        // The rounds, in a closure of their own so that the sampler is stopped on every path:
        // an error here must not leave the scope waiting for it (and the provers it started are
        // killed as it returns: `Reaped`, `Service`).
        let run_rounds = || -> Result<Vec<(u32, Role)>, Box<dyn Error>> {
            let mut roles = Vec::new();
            let mut service = Service::start(high, "high", rounds.max(1))?;
            let (mut low_child, mut low_started) = spawn_low(&roles)?;
            for round in 0..rounds.max(1) {
                // The high one starts once the low one has held the GPU for `LOW_HOLDS_FIRST` (a new
                // low prover when the last one has ended), not the moment it gets it back: a
                // request at every return would leave the low one no device time at all.
                let mut held_since: Option<Instant> = None;
                loop {
                    if low_child.0.try_wait()?.is_some() {
                        roles.push(finish("low", low, low_child, low_started, t0)?);
                        (low_child, low_started) = spawn_low(&roles)?;
                        break;
                    }
                    let holder = locks::status(&dir, &devices[..1])?[0]
                        .holder
                        .as_ref()
                        .map(|h| h.pid);
                    if holder == Some(low_child.0.id()) {
                        let since = *held_since.get_or_insert_with(Instant::now);
                        if since.elapsed() >= LOW_HOLDS_FIRST {
                            break;
                        }
                    } else {
                        held_since = None;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                roles.push(service.prove("high", high, t0)?);
                if round + 1 < rounds {
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
            service.end()?;
            roles.push(finish("low", low, low_child, low_started, t0)?);
            Ok(roles)
        };
        let roles = run_rounds();
        stop.store(true, Ordering::Relaxed);
        let samples = sampler.join().map_err(|_| "the sampler panicked")?;
        Ok((samples, roles?))
    })?;
    let roles: Vec<(u32, Role)> = roles;

    // Segments of the same holder.
    let mut segments: Vec<(Duration, Duration, Option<u32>)> = Vec::new();
    for (t, holder) in &samples {
        match segments.last_mut() {
            Some(last) if last.2 == *holder => last.1 = *t,
            _ => segments.push((*t, *t, *holder)),
        }
    }
    let name_of = |pid: Option<u32>| {
        pid.and_then(|p| roles.iter().find(|(q, _)| *q == p).map(|(_, r)| r.name))
            .unwrap_or(if pid.is_some() { "other" } else { "free" })
    };
    // Every segment and process when there are few; a summary of many rounds otherwise.
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
    for (pid, r) in roles.iter().filter(|_| roles.len() <= 12) {
        println!(
            "{} priority (pid {pid}, 2^{} constraints): started {:.3} s, ended {:.3} s, verified {}, \
             total {:.0} ms, hand-over {} ms, preemptions {}, returns {}, GPU chunks {} of {}",
            r.name,
            r.k,
            r.started.as_secs_f64(),
            r.ended.as_secs_f64(),
            r.report.contains("\"verified\":true"),
            field(&r.report, "total_ms").unwrap_or(f64::NAN),
            field(&r.report, "handover_ms").map_or("-".into(), |h| format!("{h:.1}")),
            field(&r.report, "preemptions").unwrap_or(f64::NAN),
            field(&r.report, "returns_to_gpu").unwrap_or(f64::NAN),
            field(&r.report, "gpu_chunks").unwrap_or(f64::NAN),
            field(&r.report, "total_chunks").unwrap_or(f64::NAN),
        );
    }
    let of = |name: &str, key: &str| -> Vec<f64> {
        let mut v: Vec<f64> = roles
            .iter()
            .filter(|(_, r)| r.name == name)
            .filter_map(|(_, r)| field(&r.report, key))
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    // A high proof that found the GPU free (the low one between proofs) has no hand-over.
    let handovers = of("high", "handover_ms");
    let high_totals = of("high", "total_ms");
    let low_totals = of("low", "total_ms");
    let low_preemptions: f64 = of("low", "preemptions").iter().sum();
    let low_returns: f64 = of("low", "returns_to_gpu").iter().sum();
    let low_quotient_steps: f64 = of("low", "quotient_steps_on_gpu").iter().sum();
    let low_deferred = roles
        .iter()
        .filter(|(_, r)| r.name == "low" && r.report.contains("\"quotient_deferred\":true"))
        .count();
    let high_held: f64 = segments
        .iter()
        .filter(|(_, _, h)| name_of(*h) == "high")
        .map(|(a, b, _)| (*b - *a).as_secs_f64() * 1e3)
        .sum();
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
    println!(
        "{} low-priority proofs: {:.0} ms in all, {low_preemptions} preemptions, {low_returns} \
         returns to the GPU; {low_deferred} quotients put off, {low_quotient_steps} of their \
         steps on a GPU",
        low_totals.len(),
        low_totals.iter().sum::<f64>(),
    );
    if let Some((high_alone, low_alone, low_alone_synthesis)) = alone_times {
        let lost = low_totals.iter().map(|t| t - low_alone).sum::<f64>();
        // Synthesis comes before a prover claims a device, so a preemption cannot slow it; what
        // it lost there is the CPU shared with the high provers, or noise.
        let lost_in_synthesis = of("low", "synthesis_ms")
            .iter()
            .map(|t| t - low_alone_synthesis)
            .sum::<f64>();
        println!(
            "low-priority proof alone {low_alone:.0} ms; preempted: lost {lost:.0} ms in all \
             (the high ones held the GPU {high_held:.0} ms), {lost_in_synthesis:.0} ms of it in \
             witness synthesis; high-priority proof alone {high_alone:.0} ms"
        );
    }
    write_svg(svg, &segments, &roles, &name_of)?;
    println!("timeline chart: {}", svg.display());
    if roles
        .iter()
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
    std::fs::File::create(path)?.write_all(svg.as_bytes())?;
    Ok(())
}
