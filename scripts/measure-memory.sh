#!/usr/bin/env bash
# Peak host memory of one prover process proving from cached parameters, against the size of the
# parameter file (issue 5's target: at most 1.5x at 2^20). The first run caches the parameters
# (setup takes the most memory, so it is not the one measured); the second is measured with
# getrusage(RUSAGE_CHILDREN).
#
#   scripts/measure-memory.sh                       # 2^20, the prover built here with `gpu`
#   K=18 PROVER_BIN=.bench/prover scripts/measure-memory.sh   # on a host without cargo
#   TRACE=trace.txt scripts/measure-memory.sh       # and where the memory went, in trace.txt
#   MAPPED=1 scripts/measure-memory.sh              # proving from the file mapped (--mapped)
#   SHAPE=1 scripts/measure-memory.sh               # each proof from a recorded shape (--shape)
#
# The measured process's anonymous memory (RssAnon: what it allocated, not file pages it maps)
# is sampled every 2 ms from /proc (Linux) and its peak printed beside the peak resident memory.
#
# With TRACE, the measured process runs with the crate's debug log, and its resident memory is
# sampled every 2 ms from /proc (Linux): each move of 8 MiB or more is written to the file as a
# line, in time order among the log's lines, so the peak can be placed among a proof's phases.
set -euo pipefail
cd "$(dirname "$0")/.."
K=${K:-20}
PROOFS=${PROOFS:-2}
if [ -z "${PROVER_BIN:-}" ]; then
    cargo build --release --features gpu,serde --example prover >&2
    PROVER_BIN=target/release/examples/prover
fi
"$PROVER_BIN" --circuit squares --log2-constraints "$K" --proofs 1 --json > /dev/null
python3 - "$PROVER_BIN" "$K" "$PROOFS" "${TRACE:-}" "${MAPPED:-}" "${SHAPE:-}" <<'PY'
import datetime, os, resource, subprocess, sys, tempfile, time
prover, k, proofs, trace, mapped, shape = sys.argv[1:7]
cmd = [prover, "--circuit", "squares", "--log2-constraints", k, "--proofs", proofs, "--json"]
if mapped:
    cmd.append("--mapped")
if shape:
    cmd.append("--shape")
env = dict(os.environ)
samples = []
with tempfile.TemporaryFile("w+") as log, tempfile.TemporaryFile("w+") as out:
    if trace:
        env["RUST_LOG"] = "preemptible_groth16=debug"
    # Both to files: a pipe left unread while the memory is sampled could fill and stall it.
    run = subprocess.Popen(cmd, stdout=out, stderr=log if trace else None, text=True, env=env)
    # The log's times are UTC with milliseconds (the example's logger); so are the samples'.
    last, peak_anon = 0, 0
    while run.poll() is None:
        try:
            with open(f"/proc/{run.pid}/status") as f:
                fields = {l.split(":")[0]: int(l.split()[1]) for l in f if l.startswith(("VmRSS", "RssAnon"))}
        except (OSError, ValueError, IndexError):
            break
        rss, anon = fields.get("VmRSS", 0) // 1024, fields.get("RssAnon", 0) // 1024
        peak_anon = max(peak_anon, anon)
        if trace and abs(rss - last) >= 8:
            now = datetime.datetime.now(datetime.timezone.utc)
            samples.append(f"[{now.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3]}Z RSS {rss} MiB, anonymous {anon} MiB]")
            last = rss
        time.sleep(0.002)
    run.wait()
    if run.returncode != 0:
        sys.exit(f"prover failed with {run.returncode}")
    if trace:
        log.seek(0)
        with open(trace, "w") as f:
            f.writelines(l + "\n" for l in sorted(samples + log.read().splitlines()))
    out.seek(0)
    for line in out.read().splitlines():
        print(line)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
params = os.path.getsize(f"params-cache/squares-{k}.params")
print(f"peak resident memory {peak / 2**20:.0f} MiB, parameter file {params / 2**20:.0f} MiB: "
      f"{peak / params:.2f}x; peak anonymous memory {peak_anon} MiB: {peak_anon * 2**20 / params:.2f}x"
      + (" (mapped)" if mapped else "") + (" (shape)" if shape else ""))
PY
