#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""check-docs.py - what the documents name exists, and every source file
states its licence.

usage: scripts/check-docs.py [--root DIR] [-v]
       scripts/check-docs.py [--root DIR] --add-spdx PATH...

Checks, over README.md and every docs/**/*.md of the clone (or of DIR):
  (a) spdx     every source file of the clone (C, headers, Python, shell,
               Makefiles, awk, gnuplot, scenario and config fragments, the
               guest's scripts) has an SPDX-License-Identifier line at its
               top: the first line, or the second after a #! line.
               Exempt: kernel/patches/*.patch (patch mails: the files they
               add carry their own line), documents and data.
  (b) commit   every commit a document names exists in the repository
               (git cat-file -e X^{commit}): a hash of 7 to 40 hex digits
               alone in a code span, after "commit" or "commits" (and the
               "X, Y and Z" that follow), or, outside code blocks, any word
               of 7 to 12 hex digits with a digit and a letter in it (how
               the documents name commits in passing: "at 78237e1", "the
               daemon of 4e7016a"); not 0x numbers, not 1e10000 figures.
  (c) target   every make target a document names in a code span or a
               code block ("make NAME", "make -C DIR NAME", "cd DIR &&
               make NAME") is a rule of that Makefile: the top one, or the
               named folder's; docs/NAME.md may also name the targets of
               NAME/Makefile without -C (docs/cached.md and cached/).
  (d) path     every path of the repository a document names (scripts/...,
               docs/..., kernel/..., cached/..., image/..., loadgen/...,
               .ci/..., and the targets of [text](links), relative to the
               document) exists; a glob must match something.  Not
               checked: paths git ignores (build outputs), and the few
               paths of the Linux tree the documents name as such.
  (e) command  the cached and loadgen command lines quoted in code blocks
               would be parsed by the programs' own option parsers; neither
               program has an option that parses without running, so these
               are counted and skipped.

It prints one TAP line per failure ("not ok N - (d) FILE:LINE: ..."), one
per skip, a comment line per check, and ends with "N passed, N failed,
N skipped" (one test per file, commit, target, path or command line, per
document that names it); exit status 1 on any failure.  -v prints the
passes too.

--add-spdx PATH...: add "SPDX-License-Identifier: GPL-2.0-only" in the
file's comment syntax to every source file under PATH that has none, as
the first line (the second after a #! line), and print their names.
Python 3 standard library and git only.
"""

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

SPDX_ID = "GPL-2.0-only"
# Licence identifiers a file may state: the project's, and those of the
# files derived from Linux and its uapi headers (GPL-2.0 is the SPDX alias
# of GPL-2.0-only that Linux uses).
ALLOWED_LICENSES = {"GPL-2.0-only", "GPL-2.0", "GPL-2.0-or-later", "GPL-2.0+",
                    "MIT", "BSD-2-Clause", "BSD-3-Clause", "LGPL-2.1",
                    "LGPL-2.1-only", "LGPL-2.1-or-later", "Linux-syscall-note"}

# What counts as source, by the end of the name; files without one count
# when they start with #! or are named here.
SOURCE_SUFFIXES = (".c", ".h", ".S", ".py", ".sh", ".bash", ".awk", ".sed",
                   ".gp", ".plt", ".mk", ".pl", ".conf", ".config", ".tab",
                   ".yml", ".yaml", ".yml.in", ".yaml.in", ".in")
SOURCE_NAMES = {"Makefile", "GNUmakefile", "Kbuild", "Kconfig", "VERSION"}
# Exempt: patch mails, and the fuzzers' seed inputs (data).
EXEMPT = [re.compile(r"^kernel/patches/.*\.patch$"),
          re.compile(r"(^|/)fuzz-corpus/")]

SPDX_RE = re.compile(
    r"^\s*(?:#|//|/\*|--|;|%|\*)\s*SPDX-License-Identifier:\s*(.+?)\s*(?:\*/)?\s*$")

# (d): the folders of the repository whose paths the documents name.
REPO_DIRS = ("scripts", "docs", "kernel", "cached", "image", "loadgen", ".ci")
PATH_RE = re.compile(
    r"(?<![\w./$~@-])((?:%s)/[\w.*?\[\]{},+/-]*)" % "|".join(re.escape(d) for d in REPO_DIRS))
# Paths of the Linux tree (build/linux) that the documents name as the
# tree's own, not this repository's.
LINUX_TREE_PATHS = {"scripts/checkpatch.pl", "scripts/spdxcheck.py"}

LINK_RE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SPAN_RE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
HEX = r"[0-9a-f]{7,40}"
SPAN_COMMIT_RE = re.compile(r"^(%s)$" % HEX)
COMMIT_PHRASE_RE = re.compile(
    r"\bcommits?\s+(%s)\b((?:\s*(?:,|,?\s+and|,?\s+or)\s+%s\b)*)" % (HEX, HEX), re.I)
BARE_HASH_RE = re.compile(r"(?<![\w.+/#-])([0-9a-f]{7,12})(?![\w+-])")

PROGRAMS = {"cached", "loadgen"}


def git(root, *args, inp=None, check=False):
    r = subprocess.run(["git", "-C", root] + list(args), input=inp,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


# ------------------------------------------------------------------ files

def repo_files(root):
    """The clone's files: tracked ones and new ones git does not ignore."""
    r = git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", check=True)
    seen, out = set(), []
    for f in r.stdout.split("\0"):
        if f and f not in seen and os.path.isfile(os.path.join(root, f)):
            seen.add(f)
            out.append(f)
    return sorted(out)


def read_head(path, n=2):
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError:
        return []
    if b"\0" in data:
        return None
    return data.decode("utf-8", "replace").splitlines()[:n]


def is_source(root, rel):
    if any(e.search(rel) for e in EXEMPT):
        return False
    base = os.path.basename(rel)
    if base in SOURCE_NAMES or base.endswith(SOURCE_SUFFIXES):
        return read_head(os.path.join(root, rel)) is not None
    if "." in base.lstrip("."):
        return False
    head = read_head(os.path.join(root, rel), 1)
    return bool(head) and head[0].startswith("#!")


def spdx_of(root, rel):
    """The licence expression of the file's SPDX line, or None."""
    head = read_head(os.path.join(root, rel), 2) or []
    lines = head[:1]
    if head and head[0].startswith("#!"):
        lines = head[1:2]
    for line in lines:
        m = SPDX_RE.match(line)
        if m:
            return m.group(1)
    return None


def spdx_line(rel):
    if rel.endswith(".c"):
        return "// SPDX-License-Identifier: %s\n" % SPDX_ID
    if rel.endswith((".h", ".S")):
        return "/* SPDX-License-Identifier: %s */\n" % SPDX_ID
    return "# SPDX-License-Identifier: %s\n" % SPDX_ID


def add_spdx(root, paths):
    files = repo_files(root)
    changed = 0
    for p in paths:
        p = os.path.relpath(os.path.realpath(p), os.path.realpath(root))
        for rel in files:
            if not (rel == p or p == "." or rel.startswith(p.rstrip("/") + "/")):
                continue
            if not is_source(root, rel) or spdx_of(root, rel) is not None:
                continue
            path = os.path.join(root, rel)
            with open(path, "rb") as f:
                data = f.read()
            line = spdx_line(rel).encode()
            if data.startswith(b"#!"):
                nl = data.find(b"\n")
                if nl < 0:
                    data += b"\n"
                    nl = len(data) - 1
                data = data[:nl + 1] + line + data[nl + 1:]
            else:
                data = line + data
            with open(path, "wb") as f:   # in place: the mode stays
                f.write(data)
            print(rel)
            changed += 1
    return changed


# ------------------------------------------------------------------ documents

class Doc:
    """A markdown document cut into code-block lines, code spans, prose and
    link targets, each with its line number."""

    def __init__(self, root, rel):
        self.rel = rel
        self.dir = os.path.dirname(rel)
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        self.code = []      # (line, text), continuation lines joined
        self.spans = []     # (line, text)
        self.prose = []     # (line, text), spans blanked out
        self.links = []     # (line, target)
        fence = None
        para, para_start = [], 0
        prev_blank, in_indented = True, False
        pending, pending_line = "", 0

        def flush_para():
            if para:
                self._paragraph(para_start, "\n".join(para))
            para.clear()

        for i, line in enumerate(lines, 1):
            stripped = line.strip()
            if fence:
                if stripped.startswith(fence):
                    fence = None
                else:
                    pending, pending_line = self._code_line(i, line, pending, pending_line)
                continue
            m = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
            if m:
                flush_para()
                fence = m.group(1)
                continue
            indented = (line.startswith("    ") or line.startswith("\t")) and stripped
            if indented and (prev_blank or in_indented):
                flush_para()
                in_indented = True
                pending, pending_line = self._code_line(i, line, pending, pending_line)
                prev_blank = False
                continue
            if stripped or not in_indented:
                in_indented = False
            if not stripped:
                flush_para()
                prev_blank = True
                continue
            if not para:
                para_start = i
            para.append(line)
            prev_blank = False
        flush_para()
        if pending:
            self.code.append((pending_line, pending))

    def _code_line(self, i, line, pending, pending_line):
        if not pending:
            pending_line = i
        text = line.rstrip()
        if text.endswith("\\"):
            return pending + text[:-1] + " ", pending_line
        self.code.append((pending_line, pending + text))
        return "", 0

    def _paragraph(self, start, text):
        def lineno(off):
            return start + text.count("\n", 0, off)

        blank = list(text)
        for m in SPAN_RE.finditer(text):
            self.spans.append((lineno(m.start(2)), m.group(2)))
            for k in range(m.start(), m.end()):
                if blank[k] != "\n":
                    blank[k] = " "
        prose = "".join(blank)
        for m in LINK_RE.finditer(prose):
            self.links.append((lineno(m.start()), m.group(1)))
        self.prose.append((start, prose))

    def prose_lines(self):
        for start, text in self.prose:
            for k, line in enumerate(text.split("\n")):
                yield start + k, line


def doc_files(root):
    out = []
    if os.path.isfile(os.path.join(root, "README.md")):
        out.append("README.md")
    for p in sorted(glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True)):
        out.append(os.path.relpath(p, root))
    return out


# ------------------------------------------------------------------ commands

SEPARATORS = {"&&", "||", ";", "|", "(", ")", "&", ";;"}
REDIRECTS = {">", ">>", "<", "<<", ">&", "<&", "&>", ">|"}
WRAPPERS = {"$", "sudo", "time", "exec", "command"}


def tokens(text):
    try:
        lex = shlex.shlex(text, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        return list(lex)
    except ValueError:
        return text.split()


def segments(text):
    """The simple commands of a command line, as token lists."""
    seg = []
    for t in tokens(text):
        if t in SEPARATORS:
            if seg:
                yield seg
            seg = []
        else:
            seg.append(t)
    if seg:
        yield seg


def command_words(seg):
    """(program, args) of a simple command: leading VAR=value assignments,
    nice/sudo/time/env wrappers dropped."""
    i = 0
    while i < len(seg):
        t = seg[i]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):
            i += 1
        elif t in WRAPPERS:
            i += 1
        elif t == "env":
            i += 1
        elif t == "nice":
            i += 1
            if i < len(seg) and seg[i] == "-n":
                i += 2
            elif i < len(seg) and re.match(r"^-n?\d+$", seg[i]):
                i += 1
        else:
            break
    if i >= len(seg):
        return None, []
    return seg[i], seg[i + 1:]


def placeholder(word):
    return bool(re.match(r"^[A-Z][A-Z0-9_]*$", word)) or any(c in word for c in "<>$`") or "..." in word


def make_calls(text):
    """(dir or None, [targets], has -f) for every make command in a command
    line, following a 'cd DIR' before it."""
    cwd = None
    for seg in segments(text):
        prog, args = command_words(seg)
        if prog == "cd":
            cwd = args[0] if args else None
            continue
        if prog != "make":
            continue
        d, targets, other_file, i = cwd, [], False, 0
        while i < len(args):
            t = args[i]
            if t == "-C" and i + 1 < len(args):
                d = os.path.join(d, args[i + 1]) if d else args[i + 1]
                i += 2
                continue
            if t.startswith("--directory="):
                d = t.split("=", 1)[1]
            elif t.startswith("-C") and len(t) > 2:
                d = t[2:]
            elif t in ("-f", "--file", "--makefile"):
                other_file = True
                i += 1
            elif t in ("-j", "-l") and i + 1 < len(args) and args[i + 1].isdigit():
                i += 1
            elif t in REDIRECTS:
                i += 1
            elif t.startswith("-") or "=" in t or t.startswith("#"):
                pass
            else:
                targets.append(t)
            i += 1
        yield d, targets, other_file


def makefile_targets(path):
    """The rule names of a Makefile (its explicit rules and .PHONY)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = re.sub(r"\\\n", " ", f.read())
    names = set()
    for line in text.split("\n"):
        if line.startswith("\t") or line.lstrip().startswith("#"):
            continue
        line = line.split("#", 1)[0]
        m = re.match(r"^([^:=\s][^:=]*?)\s*::?(?!=)(.*)$", line)
        if not m:
            continue
        for n in m.group(1).split():
            if n == ".PHONY":
                names.update(m.group(2).split())
            elif "%" not in n and "$" not in n:
                names.add(n)
    return names


# ------------------------------------------------------------------ checker

class Checker:
    def __init__(self, root, verbose):
        self.root = root
        self.verbose = verbose
        self.n = self.passed = self.failed = self.skipped = 0
        self.ignored_cache = {}

    def ok(self, name):
        self.n += 1
        self.passed += 1
        if self.verbose:
            print("ok %d - %s" % (self.n, name))

    def not_ok(self, name, why):
        self.n += 1
        self.failed += 1
        print("not ok %d - %s  # %s" % (self.n, name, why))

    def skip(self, name, why):
        self.n += 1
        self.skipped += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, why))

    def exists(self, rel):
        return os.path.lexists(os.path.join(self.root, rel))

    def ignored(self, rels):
        """The paths of rels that git ignores (build outputs)."""
        todo = [r for r in rels if r not in self.ignored_cache]
        if todo:
            r = git(self.root, "check-ignore", "--stdin", inp="\n".join(todo) + "\n")
            hits = set(r.stdout.split("\n"))
            for t in todo:
                self.ignored_cache[t] = t in hits or t.rstrip("/") in hits
        return {r for r in rels if self.ignored_cache[r]}

    # (a)
    def check_spdx(self):
        files = [f for f in repo_files(self.root) if is_source(self.root, f)]
        bad = 0
        for rel in files:
            lic = spdx_of(self.root, rel)
            name = "(a) %s" % rel
            if lic is None:
                self.not_ok(name, "no SPDX-License-Identifier line at its top")
                bad += 1
                continue
            ids = [t for t in re.split(r"[\s()]+|\bOR\b|\bAND\b|\bWITH\b", lic) if t]
            unknown = [t for t in ids if t not in ALLOWED_LICENSES]
            if unknown:
                self.not_ok(name, "licence %s is not one of the project's" % " ".join(unknown))
                bad += 1
            else:
                self.ok(name)
        print("# (a) spdx: %d source files, %d without a good SPDX line" % (len(files), bad))

    # (b)
    def check_commits(self, docs):
        refs = {}   # (doc, hash) -> the lines that name it
        for d in docs:
            found = []
            for ln, text in d.spans:
                m = SPAN_COMMIT_RE.match(text.strip())
                if m:
                    found.append((ln, m.group(1)))
            texts = d.spans + d.code + list(d.prose_lines())
            for ln, text in texts:
                for m in COMMIT_PHRASE_RE.finditer(text):
                    found.append((line_at(ln, text, m.start(1)), m.group(1)))
                    found.extend((line_at(ln, text, m.start(2)), h) for h in re.findall(HEX, m.group(2)))
            for ln, text in list(d.prose_lines()) + d.spans:
                for m in BARE_HASH_RE.finditer(text):
                    h = m.group(1)
                    if not re.search(r"[0-9]", h) or not re.search(r"[a-f]", h):
                        continue
                    if re.match(r"^\d+e\d+$", h):
                        continue
                    found.append((line_at(ln, text, m.start(1)), h))
            for ln, h in found:
                refs.setdefault((d.rel, h), set()).add(ln)
        shallow = git(self.root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        hashes = sorted({h for _, h in refs})
        r = git(self.root, "cat-file", "--batch-check",
                inp="".join("%s^{commit}\n" % h for h in hashes))
        answer = dict(zip(hashes, r.stdout.split("\n")))
        bad = 0
        for (rel, h), lns in sorted(refs.items()):
            a = answer.get(h, "")
            name = "(b) %s:%s: commit %s" % (rel, lines_of(lns), h)
            if re.match(r"^[0-9a-f]{40} commit ", a):
                self.ok(name)
            elif shallow and "ambiguous" not in a:
                self.skip(name, "not in this shallow clone")
            else:
                self.not_ok(name, "ambiguous in this repository" if "ambiguous" in a
                            else "no such commit in this repository")
                bad += 1
        print("# (b) commit: %d commits named (%d references), %d not found" % (len(hashes), len(refs), bad))

    # (c)
    def check_targets(self, docs):
        cache = {}

        def targets_of(d):
            mk = os.path.join(self.root, d, "Makefile")
            if mk not in cache:
                cache[mk] = makefile_targets(mk) if os.path.isfile(mk) else None
            return cache[mk]

        seen, bad, count = set(), 0, 0
        for d in docs:
            component = None
            stem = os.path.splitext(os.path.basename(d.rel))[0]
            if d.dir == "docs" and os.path.isfile(os.path.join(self.root, stem, "Makefile")):
                component = stem
            for ln, text in d.spans + d.code:
                for mdir, targets, other_file in make_calls(text):
                    if other_file or (mdir and placeholder(mdir)):
                        continue
                    if mdir:
                        cands = [os.path.normpath(mdir)]
                        if component:
                            cands.append(os.path.normpath(os.path.join(component, mdir)))
                        dirs = [c for c in cands if os.path.isfile(os.path.join(self.root, c, "Makefile"))][:1]
                        if not dirs:
                            if self.ignored([cands[0] + "/"]) or cands[0].startswith(".."):
                                continue   # a build tree (build/linux)
                            key = (d.rel, mdir, "")
                            if key not in seen:
                                seen.add(key)
                                count += 1
                                bad += 1
                                self.not_ok("(c) %s:%d: make -C %s" % (d.rel, ln, mdir),
                                            "no Makefile in %s" % mdir)
                            continue
                        label = "make -C %s" % mdir
                    else:
                        dirs = ["."] + ([component] if component else [])
                        label = "make"
                    for t in targets:
                        if placeholder(t):
                            continue
                        key = (d.rel, label, t)
                        if key in seen:
                            continue
                        seen.add(key)
                        count += 1
                        name = "(c) %s:%d: %s %s" % (d.rel, ln, label, t)
                        if any(t in (targets_of(x) or ()) for x in dirs):
                            self.ok(name)
                        else:
                            where = " or ".join(os.path.normpath(os.path.join(x, "Makefile")) for x in dirs)
                            self.not_ok(name, "no target '%s' in %s" % (t, where))
                            bad += 1
        print("# (c) target: %d make targets named, %d missing" % (count, bad))

    # (d)
    def check_paths(self, docs):
        items = {}   # (doc, path) -> (line, kind)
        for d in docs:
            for kind, texts in (("span", d.spans), ("code", d.code), ("prose", list(d.prose_lines()))):
                for ln, text in texts:
                    for m in PATH_RE.finditer(text):
                        p = clean_path(m.group(1), kind == "prose")
                        if not p or p in LINUX_TREE_PATHS or placeholder_path(p):
                            continue
                        if kind == "prose" and not path_like(p):
                            continue
                        items.setdefault((d.rel, p), set()).add(line_at(ln, text, m.start(1)))
            for ln, target in d.links:
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                    continue
                t = target.split("#", 1)[0].split("?", 1)[0]
                if not t:
                    continue
                p = os.path.normpath(os.path.join(d.dir, t))
                items.setdefault((d.rel, p), set()).add(ln)
        ign = self.ignored(sorted({p for _, p in items}))
        bad = count = 0
        for (rel, p), lns in sorted(items.items()):
            if p in ign:
                continue
            count += 1
            name = "(d) %s:%s: %s" % (rel, lines_of(lns), p)
            hits = [x for q in expand_braces(p) for x in
                    (glob.glob(os.path.join(self.root, q)) if any(c in q for c in "*?[") else
                     ([q] if self.exists(q) else []))]
            if p.startswith("..") or os.path.isabs(p):
                self.not_ok(name, "points outside the repository")
                bad += 1
            elif hits:
                self.ok(name)
            else:
                self.not_ok(name, "no such file in the repository" if not any(c in p for c in "*?[")
                            else "matches no file in the repository")
                bad += 1
        print("# (d) path: %d paths named, %d missing" % (count, bad))

    # (e)
    def check_commands(self, docs):
        lines = []
        for d in docs:
            for ln, text in d.code:
                for seg in segments(text):
                    prog, args = command_words(seg)
                    if prog and os.path.basename(prog) in PROGRAMS and any(a.startswith("-") for a in args):
                        lines.append("%s:%d" % (d.rel, ln))
        print("# (e) command: %d command lines of cached and loadgen in code blocks" % len(lines))
        self.skip("(e) the cached and loadgen command lines of the documents parse",
                  "neither program can parse its options without running (no --check-args)")


def lines_of(lns):
    return ",".join(str(x) for x in sorted(lns))


def line_at(ln, text, off):
    """The line of offset off in text, which starts on line ln."""
    return ln + text.count("\n", 0, off)


def clean_path(p, prose=False):
    """A path as named, without the punctuation after it (and, in running
    text, markdown's emphasis: **loadgen/cached**)."""
    if prose:
        p = p.rstrip("*_")
    p = p.rstrip(".,:;!?'\"")
    for o, c in ("()", "[]", "{}"):
        while p.endswith(c) and p.count(c) > p.count(o):
            p = p[:-1].rstrip(".,:;!?'\"")
    return p


def placeholder_path(p):
    return any(c in p for c in "<>$") or "..." in p


def path_like(p):
    """In running text a path must look like one: 'loadgen/cached' and
    'loadgen/memcaslap' are pairs of programs, not paths."""
    last = p.rstrip("/").split("/")[-1]
    return p.endswith("/") or "." in last or p.count("/") >= 2 or any(c in p for c in "*?[")


def expand_braces(p):
    m = re.search(r"\{([^{}]*,[^{}]*)\}", p)
    if not m:
        return [p]
    out = []
    for alt in m.group(1).split(","):
        out.extend(expand_braces(p[:m.start()] + alt + p[m.end():]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", help="the clone to check (default: this script's)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the passes too")
    ap.add_argument("--add-spdx", nargs="+", metavar="PATH",
                    help="add the SPDX line to the source files under PATH that lack it")
    a = ap.parse_args()
    root = a.root or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    top = git(root, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        print("check-docs.py: %s is not a git clone" % root, file=sys.stderr)
        return 2
    root = top.stdout.strip()
    if a.add_spdx:
        add_spdx(root, a.add_spdx)
        return 0
    c = Checker(root, a.verbose)
    docs = [Doc(root, rel) for rel in doc_files(root)]
    print("# %d documents: %s" % (len(docs), " ".join(d.rel for d in docs)))
    c.check_spdx()
    c.check_commits(docs)
    c.check_targets(docs)
    c.check_paths(docs)
    c.check_commands(docs)
    print("%d passed, %d failed, %d skipped" % (c.passed, c.failed, c.skipped))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
