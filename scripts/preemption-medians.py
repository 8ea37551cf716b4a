#!/usr/bin/env python3
"""Medians over several runs of the preemption demo (scripts/bench-preemption.sh with RUNS=N).

Reads the demos' output on stdin, each run ended by a line "## end of run", and prints one line:
the median over the runs of each figure issue 31 sets a goal for, each run's figure in brackets.
A figure a run did not print (no alone proofs, no preemption) is left out of that figure's list.

    python3 scripts/preemption-medians.py "low 2^24" < target/preemption-24-16.runs.txt
"""
import re
import statistics
import sys

# (name, pattern whose first group is the figure, unit)
FIGURES = [
    ("high proof beside the low one / alone", r"beside the low one / alone: ([0-9.]+)x", "x"),
    ("low proofs' loss after synthesis / hold", r"high ones held the GPU: ([0-9.]+)x after", "x"),
    ("hand-over p50", r"hand-over: p50 ([0-9.]+) ms", " ms"),
    ("hand-over p99", r"hand-over: p50 [0-9.]+ ms, p99 ([0-9.]+) ms", " ms"),
]


def runs(text):
    """The runs' texts, in order (a last run without its end line counts too)."""
    parts = text.split("## end of run")
    return [p for p in parts if p.strip()]


def main():
    label = sys.argv[1] if len(sys.argv) > 1 else "runs"
    texts = runs(sys.stdin.read())
    cells = []
    for name, pattern, unit in FIGURES:
        values = []
        for text in texts:
            found = re.search(pattern, text)
            if found:
                values.append(float(found.group(1)))
        if not values:
            continue
        each = ", ".join(f"{v:g}" for v in values)
        cells.append(f"{name} {statistics.median(values):g}{unit} ({each})")
    print(f"## {label}, medians of {len(texts)} runs: " + "; ".join(cells))


if __name__ == "__main__":
    main()
