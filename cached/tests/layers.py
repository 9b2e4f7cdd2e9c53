#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""layers.py - the daemon's files form layers: nothing reaches up, no circle.

Every file of cached/ (a module is X.c with X.h) belongs to one layer of
LAYERS below, listed from the bottom.  Two graphs are checked against it:

  includes  every `#include "..."` line of cached/*.c and *.h;
  symbols   which module defines each function or global another module
            uses, from `nm` of each file compiled alone (so a global that a
            low header declares but main.c defines is still seen).

A module may use its own layer and the layers below; an edge to a higher
layer fails, and so does a file that no layer names (a new file must be
placed).  Headers of lib/ (what the daemon shares with the load generator)
are below every layer.  Inside a layer, modules may use each other, but
no module may reach itself again: the strongly connected components of
the include graph, of the symbol graph and of both together are single
modules, and a circle fails with its path printed.  The edges inside a
layer are printed so they stay visible.

For the include graph to show who uses whom, a header is implemented by
its own module: every function a header of cached/ declares `extern` is
defined in the .c of the same name (from gcc's -aux-info of each file),
so `#include "x.h"` means "uses x.c".

usage: tests/layers.py [--picture] [--no-symbols]
Prints one "ok"/"not ok" line per rule, then "N passed, N failed".
--picture prints the layers and the edges between them instead (the
figure of docs/architecture.md); --no-symbols checks the include lines
only (no compiler, no nm).
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
    ("conn", ["conn", "worker"],
     "a connection and its buffers, output, references; a worker's base and posted calls"),
    ("origin links", ["upstream", "fetch"],
     "the memcache origin's link per worker; the fetch pool for gen and dir"),
    ("protocol", ["proto", "proto_admin", "proto_meta", "proto_text"],
     "shared parsing and origin paths; admin, meta, text commands and dispatch"),
    ("workers", ["thread", "listen"],
     "worker threads running connections; accept"),
    ("main", ["main", "options"], "options, start-up, timers, signals, shutdown"),
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


def compile_all():
    """nm output and -aux-info declarations of each .c compiled alone."""
    cflags = ["-std=gnu11", "-O0", "-I" + CACHED, "-I" + INCLUDE_DIRS[1]]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for f in sources():
            if not f.endswith(".c"):
                continue
            obj = os.path.join(tmp, module(f) + ".o")
            aux = os.path.join(tmp, module(f) + ".aux")
            subprocess.run(["cc"] + cflags + ["-aux-info", aux, "-c", "-o",
                                              obj, os.path.join(CACHED, f)],
                           check=True)
            nm = subprocess.run(["nm", obj], check=True, text=True,
                                capture_output=True).stdout
            out[module(f)] = (nm, open(aux, encoding="utf-8").read())
    return out


def definitions(objs):
    """symbol -> defining module, and module -> symbols it uses."""
    defs, uses = {}, {}
    for m, (nm, _) in objs.items():
        for line in nm.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRC":
                defs[p[2]] = m
            elif len(p) == 2 and p[0] == "U":
                uses.setdefault(m, set()).add(p[1])
    return defs, uses


def symbol_edges(objs):
    """(user module, defining module, symbol) from nm of each .c alone."""
    defs, uses = definitions(objs)
    return [(m, defs[s], s) for m, syms in sorted(uses.items())
            for s in sorted(syms) if s in defs and defs[s] != m]


AUX_RE = re.compile(r"^/\* ([^:*]+):\d+:\w+ \*/ extern .*?\b(\w+) \(", re.M)


def misplaced_declarations(objs):
    """(header, function, defining module) where the two differ."""
    defs, _ = definitions(objs)
    bad = set()
    for _, aux in objs.values():
        for hdr, fn in AUX_RE.findall(aux):
            hdr = os.path.normpath(os.path.join(CACHED, hdr))
            if os.path.dirname(hdr) != CACHED or not hdr.endswith(".h"):
                continue        # lib/, system headers, .c files
            hdr = os.path.basename(hdr)
            if fn in defs and defs[fn] != module(hdr):
                bad.add((hdr, fn, defs[fn]))
    return sorted(bad)


def circles(edges):
    """The strongly connected components of more than one module, each
    with one circle through it as a list of (from, to, what) edges."""
    succ = {}
    for a, b, x in edges:
        if b is not None and a != b:
            succ.setdefault(a, {}).setdefault(b, x)

    def reach(a):
        seen, todo = {a}, [a]
        while todo:
            for b in succ.get(todo.pop(), {}):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    nodes = sorted(set(succ) | {b for v in succ.values() for b in v})
    r = {a: reach(a) for a in nodes}
    found, done = [], set()
    for a in nodes:
        if a in done:
            continue
        comp = sorted(b for b in r[a] if a in r[b])
        done.update(comp)
        if len(comp) < 2:
            continue
        # shortest way back to a, inside the component (breadth first)
        prev, todo = {a: None}, [a]
        while todo and a not in [b for t in todo for b in succ.get(t, {})]:
            nxt = []
            for t in todo:
                for b in succ.get(t, {}):
                    if b in comp and b not in prev:
                        prev[b] = t
                        nxt.append(b)
            todo = nxt
        last = next(t for t in todo if a in succ.get(t, {}))
        path = [(last, a, succ[last][a])]
        while prev[last] is not None:
            path.insert(0, (prev[last], last, succ[prev[last]][last]))
            last = prev[last]
        found.append((comp, path))
    return found


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
    verify_circles(kind, edges)


def verify_circles(kind, edges):
    found = circles(edges)
    check(not found, "%s: no circle between modules" % kind)
    for comp, path in found:
        print("#   circle among %s:" % " ".join(comp))
        print("#     " + " -> ".join([path[0][0]] + [
            "%s (%s)" % (b, x) for _, b, x in path]))


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
    objs = {} if "--no-symbols" in args else compile_all()
    sym = symbol_edges(objs) if objs else []
    if "--picture" in args:
        picture(inc, sym)
        return 0
    check(not unknown, "every file of cached/ is in a layer" +
          ("" if not unknown else " (not placed: %s)" % ", ".join(unknown)))
    check(not missing, "every quoted include is in cached/ or lib/" +
          ("" if not missing else " (not found: %s)" % "; ".join(missing)))
    verify("includes", inc)
    if objs:
        verify("symbols", sym)
        verify_circles("includes and symbols", inc + sym)
        bad = misplaced_declarations(objs)
        check(not bad, "every header's functions are defined in its own module")
        for hdr, fn, m in bad:
            print("#   %s declares %s, defined in %s.c" % (hdr, fn, m))
    failed = results.count(False)
    print("%d passed, %d failed" % (len(results) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
