#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""profile.py - guest kernel instructions per call, by function.

Takes pairs of instruction profiles (RUNDIR/profile.txt of
`qemu-run.sh --profile`) of the same workload run twice with different
numbers of calls, and divides their difference by the number of extra
calls: what boots, sets up and exits is the same in both runs and drops
out, and what is left is what one call costs, function by function.

usage: scripts/profile.py [--map SYSTEM.MAP] [--min N] --calls N \\
           NAME=BASE,MORE [NAME=BASE,MORE...]

  --map    the System.map of the profiled kernel
           (default build/kbuild-normal/System.map)
  --calls  how many more calls MORE made than BASE
  --min    leave out functions below N instructions a call in every
           column (default 0.5)
  NAME     a column heading; BASE and MORE are profile.txt files
"""
import argparse
import bisect
import collections
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_map(path):
    """Text symbols of a System.map, sorted by address."""
    syms = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[1] in "tTwW":
                syms.append((int(parts[0], 16), parts[2]))
    if not syms:
        sys.exit(f"profile.py: no text symbols in {path}")
    syms.sort()
    return [a for a, _ in syms], [s for _, s in syms]


def load_profile(path, addrs, names):
    """Instructions run per function in one profile."""
    per_fn = collections.Counter()
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                addr, count = line.split()
                addr, count = int(addr, 16), int(count)
            except ValueError:
                sys.exit(f"profile.py: {path}:{n}: not 'ADDRESS COUNT'")
            i = bisect.bisect_right(addrs, addr) - 1
            per_fn[names[i] if i >= 0 else "?"] += count
    return per_fn


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("usage: ")[1].split("\n\n")[0])
    ap.add_argument("--map", default=os.path.join(ROOT, "build/kbuild-normal/System.map"))
    ap.add_argument("--calls", type=int, required=True)
    ap.add_argument("--min", type=float, default=0.5)
    ap.add_argument("columns", nargs="+", metavar="NAME=BASE,MORE")
    args = ap.parse_args()
    if args.calls <= 0:
        ap.error("--calls must be positive")

    specs = []
    for spec in args.columns:
        name, sep, files = spec.partition("=")
        base, sep2, more = files.partition(",")
        if not (sep and sep2 and name and base and more):
            ap.error(f"'{spec}' is not NAME=BASE,MORE")
        specs.append((name, base, more))
    addrs, names = load_map(args.map)
    columns = []
    for name, base, more in specs:
        a = load_profile(base, addrs, names)
        b = load_profile(more, addrs, names)
        columns.append((name, {fn: (b[fn] - a[fn]) / args.calls for fn in set(a) | set(b)}))

    fns = {fn for _, col in columns for fn, v in col.items() if abs(v) >= args.min}
    first = columns[0][1]
    rows = sorted(fns, key=lambda fn: (-first.get(fn, 0), fn))
    width = max([len(fn) for fn in rows] + [8])
    def cell(v):
        return f" {round(v, 1) + 0.0:10.1f}"  # + 0.0: no "-0.0"

    print(f"{'function':<{width}}" + "".join(f" {name:>10}" for name, _ in columns))
    for fn in rows:
        print(f"{fn:<{width}}" + "".join(cell(col.get(fn, 0)) for _, col in columns))
    print(f"{'total':<{width}}" + "".join(cell(sum(col.values())) for _, col in columns))


if __name__ == "__main__":
    main()
