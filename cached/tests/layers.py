#!/usr/bin/python3
"""layers.py - the daemon's files form layers, and nothing reaches up.

Every file of cached/ (a module is X.c with X.h) belongs to one layer of
LAYERS below, listed from the bottom.  Two graphs are checked against it:

  includes  every `#include "..."` line of cached/*.c and *.h;
  symbols   which module defines each function or global another module
            uses, from `nm` of each file compiled alone (so a global that a
            low header declares but main.c defines is still seen).

A module may use its own layer and the layers below; an edge to a higher
layer closes a circle through the layers and fails, and so does a file
that no layer names (a new file must be placed).  Headers of lib/ (what
the daemon shares with the load generator) are below every layer.  Inside a
layer, modules may use each other: the connection layer is a worker's
connections, their protocol parsers and their upstream link, which call
back and forth by design; the script prints those edges so they stay
visible.

usage: tests/layers.py [--picture] [--no-symbols]
Prints one "ok"/"not ok" line per rule, then "N passed, N failed".
--picture prints the layers and the edges between them instead (the
figure of docs/architecture.md).
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CACHED = os.path.dirname(HERE)

# Bottom first: (layer name, modules, what it is).
LAYERS = [
    ("shared", ["daemon"], "settings, counters, cache_lock, clock, logmsg"),
    ("index", ["index"], "keys and metadata in ordinary memory"),
    ("store", ["madvfree", "store"],
     "values in one memfd (or, in madvfree mode, anonymous memory): segments, volatility"),
    ("cache", ["cache", "origin", "psi"],
     "item semantics; where lost values come from; the PSI policy"),
    ("stats", ["stats"], "the stats replies, read from the layers below"),
    ("connections", ["listen", "thread", "proto", "proto_text", "proto_meta",
                     "proto_admin", "upstream", "fetch"],
     "accept, workers, connections, protocols, upstream origin, fetch pool"),
    ("main", ["main"], "options, start-up, timers, signals, shutdown"),
]
LAYER_OF = {m: i for i, (_, mods, _) in enumerate(LAYERS) for m in mods}
INCLUDE_DIRS = [CACHED, os.path.join(CACHED, "lib")]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

results = []


def check(ok, what):
    results.append(ok)
    print(("ok - " if ok else "not ok - ") + what)


def module(path):
    return os.path.splitext(os.path.basename(path))[0]


def sources():
    return sorted(f for f in os.listdir(CACHED)
                  if f.endswith((".c", ".h")))


def include_edges():
    """(from module, to module or None for outside cached/, header)."""
    edges, missing = [], []
    for f in sources():
        text = open(os.path.join(CACHED, f), encoding="utf-8").read()
        for hdr in INCLUDE_RE.findall(text):
            where = [d for d in INCLUDE_DIRS
                     if os.path.exists(os.path.join(d, hdr))]
            if not where:
                missing.append("%s: \"%s\"" % (f, hdr))
            inside = where and where[0] == CACHED
            edges.append((module(f), module(hdr) if inside else None, hdr))
    return edges, missing


def symbol_edges():
    """(user module, defining module, symbol) from nm of each .c alone."""
    cflags = ["-std=gnu11", "-O0", "-I" + CACHED, "-I" + INCLUDE_DIRS[1]]
    defs, uses = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for f in sources():
            if not f.endswith(".c"):
                continue
            obj = os.path.join(tmp, module(f) + ".o")
            subprocess.run(["cc"] + cflags + ["-c", "-o", obj,
                                              os.path.join(CACHED, f)],
                           check=True)
            nm = subprocess.run(["nm", obj], check=True, text=True,
                                capture_output=True).stdout
            for line in nm.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBRC":
                    defs[p[2]] = module(f)
                elif len(p) == 2 and p[0] == "U":
                    uses.setdefault(module(f), set()).add(p[1])
    return [(m, defs[s], s) for m, syms in sorted(uses.items())
            for s in sorted(syms) if s in defs and defs[s] != m]


def verify(kind, edges):
    up = [(a, b, x) for a, b, x in edges
          if b is not None and a in LAYER_OF and b in LAYER_OF
          and LAYER_OF[b] > LAYER_OF[a]]
    check(not up, "%s: no module uses a higher layer" % kind)
    for a, b, x in up:
        print("#   %s (%s) -> %s (%s): %s" % (
            a, LAYERS[LAYER_OF[a]][0], b, LAYERS[LAYER_OF[b]][0], x))
    within = sorted({(a, b) for a, b, _ in edges
                     if b is not None and a in LAYER_OF and b in LAYER_OF
                     and a != b and LAYER_OF[a] == LAYER_OF[b]})
    for a, b in within:
        print("#   %s: %s -> %s (same layer)" % (kind, a, b))


def picture(inc, sym):
    uses = {}
    for a, b, _ in inc + sym:
        if b is not None and LAYER_OF.get(a) != LAYER_OF.get(b):
            uses.setdefault(LAYER_OF[a], set()).add(LAYER_OF[b])
    width = max(len(" ".join(m)) for _, m, _ in LAYERS) + 2
    rule = "  +" + "-" * width + "+"
    for i in reversed(range(len(LAYERS))):
        name, mods, what = LAYERS[i]
        below = ", ".join(LAYERS[j][0] for j in sorted(uses.get(i, ())))
        print(rule)
        print("  | %s |  %s: %s" % (" ".join(mods).ljust(width - 2), name, what))
        print("  | %s |  uses %s" % ("".ljust(width - 2), below or "lib/ only"))
    print(rule)
    print("  lib/ (gen, volatile_fadvise.h), libevent, libc: below every layer")


def main():
    args = sys.argv[1:]
    names = set(module(f) for f in sources())
    unknown = sorted(names - set(LAYER_OF))
    inc, missing = include_edges()
    sym = [] if "--no-symbols" in args else symbol_edges()
    if "--picture" in args:
        picture(inc, sym)
        return 0
    check(not unknown, "every file of cached/ is in a layer" +
          ("" if not unknown else " (not placed: %s)" % ", ".join(unknown)))
    check(not missing, "every quoted include is in cached/ or lib/" +
          ("" if not missing else " (not found: %s)" % "; ".join(missing)))
    verify("includes", inc)
    if sym:
        verify("symbols", sym)
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
