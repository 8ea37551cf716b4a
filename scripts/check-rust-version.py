#!/usr/bin/env python3
"""Checks that Cargo.toml's `rust-version` is at least that of every dependency the crate builds
with (all features on, dev-dependencies aside): a `rust-version` lower than a dependency's
promises a compiler that cannot build the crate.

    scripts/check-rust-version.py        # from .ci/run
"""
import json
import subprocess
import sys


def version(v):
    return tuple(int(p) for p in v.split("."))[:3] + (0,) * (3 - len(v.split(".")))


meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--format-version", "1", "--all-features", "--locked"],
    check=True, capture_output=True, text=True).stdout)
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
root = meta["resolve"]["root"]


def kinds(dep):
    return {k["kind"] for k in dep["dep_kinds"]}


# What a user's build compiles: normal and build dependencies, from the crate down.
todo = [d["pkg"] for d in nodes[root]["deps"] if kinds(d) & {None, "build"}]
seen = set()
while todo:
    pkg = todo.pop()
    if pkg in seen:
        continue
    seen.add(pkg)
    todo += [d["pkg"] for d in nodes[pkg]["deps"] if kinds(d) & {None, "build"}]
ours = packages[root].get("rust_version")
if ours is None:
    sys.exit("Cargo.toml has no rust-version")
needs = max((version(packages[p]["rust_version"]), packages[p]["name"])
            for p in seen if packages[p].get("rust_version"))
if version(ours) < needs[0]:
    sys.exit(f"rust-version {ours} is below {needs[1]}'s {'.'.join(map(str, needs[0]))}")
print(f"rust-version {ours}: at least every dependency's (the highest, {needs[1]}'s, "
      f"{'.'.join(map(str, needs[0]))})")
