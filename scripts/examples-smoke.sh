#!/usr/bin/env bash
# The examples as an operator runs them, at small sizes, on fake devices where a GPU is needed:
# a prover's JSON reports, the demo's timeline and chart, and the status view reading lock files
# that another process holds. Called by scripts/test.sh after the tests; fails on the first
# thing missing.
#
#   scripts/examples-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PREEMPTIBLE_GROTH16_LOCK_DIR="$work/locks"
fail() {
    echo "examples-smoke: $*" >&2
    exit 1
}
example() {
    cargo run -q --all-features --example "$@"
}
# The built example's path (for running it under `timeout` or as another user).
example_path() {
    cargo build -q --all-features --example "$1" >&2
    echo "target/debug/examples/$1"
}

# 1. Two proofs with JSON reports: each verified, with the fields the issue names.
out=$(PREEMPTIBLE_GROTH16_FAKE_GPUS=1 example prover -- --circuit squares --log2-constraints 10 \
    --priority low --proofs 2 --json)
[ "$(grep -c '"verified":true' <<<"$out")" = 2 ] || fail "prover --json: two verified proofs expected: $out"
for key in verified priority total_ms gpu_chunks cpu_chunks preemptions returns_to_gpu wait_ms handover_ms; do
    grep -q "\"$key\":" <<<"$out" || fail "prover --json: no $key in: $out"
done
grep -q '"gpu_chunks":0,' <<<"$out" && fail "prover on a fake device: no chunk on it: $out"

# A cached parameter file cut short is reported and made anew; the proof still verifies.
params=params-cache/squares-10.params
head -c "$(($(stat -c %s "$params") / 2))" "$params" >"$work/half" && cp "$work/half" "$params"
out=$(example prover -- --circuit squares --log2-constraints 10 --proofs 1 --json 2>"$work/err")
grep -q "cached parameters .* unusable" "$work/err" || fail "a truncated parameter cache was not reported: $(cat "$work/err")"
grep -q '"verified":true' <<<"$out" || fail "no verified proof after a truncated cache: $out"

# 2. The demo on a fake device: every proof verified, the hand-overs counted, a chart written.
example prover -- --demo --fake --low 12 --high 10 --rounds 2 --svg "$work/t.svg" >"$work/demo.log" 2>&1 ||
    fail "demo failed: $(tail -5 "$work/demo.log")"
grep -q "verified false" "$work/demo.log" && fail "demo: a proof did not verify"
grep -q "2 high-priority proofs, .* took the GPU from a low one; hand-over: p50" "$work/demo.log" ||
    fail "demo: no hand-over summary: $(tail -5 "$work/demo.log")"
grep -q "<svg" "$work/t.svg" || fail "demo: no SVG chart"

# 3. The status view, beside a process holding fake-0 at low priority and a high flag on it.
mkdir -p "$PREEMPTIBLE_GROTH16_LOCK_DIR"
# perl (perl-base is part of every Debian) holds the files as a prover would.
perl -MFcntl=:flock -e '
    my $d = shift;
    open(my $lock, ">>", "$d/pg16-fake-0.lock") or die;
    flock($lock, LOCK_EX) or die;
    truncate($lock, 0);
    select((select($lock), $| = 1)[0]);
    printf $lock "%d 0 %d\n", $$, time() * 1000;
    open(my $flag, ">>", "$d/pg16-fake-0.want-2.flag") or die;
    flock($flag, LOCK_SH) or die;
    open(my $ready, ">", "$d/ready") or die;
    close($ready);
    sleep 30;
' "$PREEMPTIBLE_GROTH16_LOCK_DIR" &
holder=$!
for _ in $(seq 100); do [ -e "$PREEMPTIBLE_GROTH16_LOCK_DIR/ready" ] && break; sleep 0.1; done
status=$(PREEMPTIBLE_GROTH16_FAKE_GPUS=1 example gpu_status)
kill "$holder" 2>/dev/null || true
grep -q "fake-0 .*held by pid $holder at low priority" <<<"$status" || fail "gpu_status: no holder: $status"
# The waiter's pid comes from /proc/locks where its device numbers match the file's (Linux).
grep -Eq "waiting: high( \(pid $holder\))?$" <<<"$status" || fail "gpu_status: no waiter: $status"
# 4. A prover in a sticky, world-writable directory that another uid prepared (needs root, as CI
# runs): a symlink to a root-only file where the lock file goes, a FIFO and a 2 GiB sparse file
# as flags, and the high flag held exclusively. The proof verifies, the target is untouched,
# and the status view says why the device is unusable.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    chmod 755 "$work"
    hostile="$work/hostile"
    mkdir -m 1777 "$hostile"
    printf 'precious\n' >"$work/secret"
    chmod 600 "$work/secret"
    as_nobody() { (cd "$hostile" && setpriv --reuid=65534 --regid=65534 --clear-groups "$@"); }
    as_nobody ln -s ../secret pg16-fake-0.lock
    as_nobody mkfifo -m 666 pg16-fake-0.want-0.flag
    as_nobody truncate -s 2G pg16-fake-0.want-1.flag
    as_nobody sh -c 'touch pg16-fake-0.want-2.flag && chmod 666 pg16-fake-0.want-2.flag'
    as_nobody flock -o -x pg16-fake-0.want-2.flag sleep 60 &
    attacker=$!
    sleep 0.3
    out=$(PREEMPTIBLE_GROTH16_LOCK_DIR=$hostile PREEMPTIBLE_GROTH16_FAKE_GPUS=1 timeout 120 \
        "$(example_path prover)" --circuit squares --log2-constraints 10 --priority high --json \
        2>"$work/hostile.err") || fail "prover in a hostile directory: $(tail -5 "$work/hostile.err")"
    grep -q '"verified":true' <<<"$out" || fail "hostile directory: no verified proof: $out"
    grep -q "symbolic link" "$work/hostile.err" || fail "hostile directory: no warning: $(cat "$work/hostile.err")"
    [ "$(cat "$work/secret")" = precious ] && [ "$(stat -c %a "$work/secret")" = 600 ] ||
        fail "hostile directory: the symlink's target was changed"
    status=$(PREEMPTIBLE_GROTH16_LOCK_DIR=$hostile PREEMPTIBLE_GROTH16_FAKE_GPUS=1 timeout 20 \
        "$(example_path gpu_status)")
    kill "$attacker" 2>/dev/null || true
    grep -q "fake-0 .*lock file unusable (is a symbolic link" <<<"$status" ||
        fail "gpu_status in a hostile directory: $status"
    hostile_note=", a prover in a directory another uid prepared"
else
    echo "examples-smoke: not root: the hostile-directory step needs a second uid; skipped" >&2
    hostile_note=""
fi
echo "examples-smoke: prover --json, the demo and gpu_status ok$hostile_note"
