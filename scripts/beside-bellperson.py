#!/usr/bin/env python3
"""Reads what scripts/beside-bellperson.sh wrote and prints, per /proc/locks sample, who held what:
bellperson's exclusive GPU lock (bellman.gpu.lock or a per-device bellman.gpu.lock.<id>), our
device lock, and our shared holds on bellperson's files. "Both on the GPU" is a sample where
bellperson held a GPU file exclusively while our prover held its device lock.

    scripts/beside-bellperson.py target/beside-bellperson
"""
import json
import sys
from collections import Counter
from pathlib import Path


def main(out: Path) -> None:
    pids = dict(zip(*[iter((out / "pids.txt").read_text().split())] * 2))
    peer, ours = pids["peer"], pids["ours"]
    names = {}
    for line in (out / "inodes.txt").read_text().splitlines():
        inode, path = line.split(maxsplit=1)
        names[inode] = Path(path).name
    states = Counter()
    samples = 0
    for block in (out / "locks.txt").read_text().split("@ ")[1:]:
        samples += 1
        bp_gpu, our_dev, our_shared = set(), False, set()
        for line in block.splitlines()[1:]:
            f = line.split()
            # "N: FLOCK ADVISORY WRITE pid maj:min:inode start end"; a waiter has "->" after N:.
            if len(f) < 6 or f[1] != "FLOCK":
                continue
            kind, pid, inode = f[3], f[4], f[5].rsplit(":", 1)[-1]
            name = names.get(inode, "")
            if pid == peer and kind == "WRITE" and name.startswith("bellman.gpu.lock"):
                bp_gpu.add(name)
            elif pid == ours and kind == "WRITE" and name.endswith(".lock") \
                    and not name.startswith("bellman."):
                our_dev = True
            elif pid == ours and kind == "READ" and name.startswith("bellman.gpu.lock"):
                our_shared.add(name)
        states[(
            "bellperson holds " + ",".join(sorted(bp_gpu)) if bp_gpu else "bellperson off",
            "ours holds the device" if our_dev else "ours off",
            "ours shares " + ",".join(sorted(our_shared)) if our_shared else "",
        )] += 1
    print(f"{samples} samples")
    for state, n in states.most_common():
        both = state[0] != "bellperson off" and state[1] == "ours holds the device"
        print(f"{n:6}  {' | '.join(s for s in state if s)}{'   <- both' if both else ''}")
    reports = [json.loads(l) for l in (out / "ours.jsonl").read_text().splitlines()
               if l.startswith("{") and "verified" in l]
    print(f"ours: {len(reports)} proofs, verified {sum(r.get('verified') is True for r in reports)}")
    peer_log = (out / "peer.log").read_text()
    print(f"bellperson: {peer_log.count('high priority')} yields logged")
    for line in peer_log.splitlines()[-3:]:
        print("  peer:", line)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "target/beside-bellperson"))
