"""reportlib.py - what the experiment's report and the fleet's report share.

scripts/report.py (make demo) and scripts/fleet/report.py (make fleet) both
read the same kinds of files that the guests and the host leave behind
(VAR=value files, the daemon's "STAT name value" replies, JSON lines) and
write the same kinds of tables (Markdown, HTML, plain text).  They import
this module instead of keeping copies that drift apart.  Python standard
library only.
"""
import html
import json
import re


def num(s):
    """s as an int, else a float, else s unchanged."""
    try:
        return int(s)
    except (TypeError, ValueError):
        try:
            return float(s)
        except (TypeError, ValueError):
            return s


def to_float(s):
    """s as a float, else s unchanged."""
    try:
        return float(s)
    except (TypeError, ValueError):
        return s


def read_text(path, default=""):
    """The file's text, or default when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def read_env(path):
    """VAR=value lines (shell style, optional quotes) as a dict of strings."""
    env = {}
    for line in read_text(path).splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        k, v = line.split("=", 1)
        v = v.strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
            v = v[1:-1]
        env[k.strip()] = v
    return env


def read_stats(path, conv=num):
    """The daemon's 'stats' reply ("STAT name value" lines) as a dict; each
    value goes through conv (num: int or float; to_float: always a float)."""
    st = {}
    for line in read_text(path).splitlines():
        p = line.split()
        if len(p) >= 3 and p[0] == "STAT":
            st[p[1]] = conv(p[2])
    return st


def read_kv(path):
    """"name value" or "name: value" lines (vmstat, meminfo) as a dict."""
    d = {}
    for line in read_text(path).splitlines():
        p = line.split()
        if len(p) >= 2:
            d[p[0].rstrip(":")] = num(p[1])
    return d


def read_jsonl(path):
    """Every line of the file that is a JSON object; other lines are skipped."""
    rows = []
    for line in read_text(path).splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass
    return rows


def pct(a, b):
    """a as a percentage of b, or None when b is 0."""
    return 100.0 * a / b if b else None


def median(values):
    """The median of values, or None for none."""
    v = sorted(values)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def gq(s):
    """s quoted for a single-quoted gnuplot string."""
    return s.replace("'", "''")


def md_table(heads, rows):
    """A Markdown table; a '|' inside a cell becomes '/'."""
    cell = lambda c: str(c).replace("|", "/")
    out = ["| " + " | ".join(cell(h) for h in heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def html_table(heads, rows):
    """An HTML table, every cell escaped."""
    out = ["<table><thead><tr>" + "".join("<th>%s</th>" % html.escape(str(h)) for h in heads) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % html.escape(str(c)) for c in r) + "</tr>")
    return "\n".join(out + ["</tbody></table>"])


def text_table(heads, rows):
    """A plain-text table: first column left-aligned, the others right-aligned;
    no trailing newline."""
    w = [max(len(str(x)) for x in col) for col in zip(heads, *rows)]

    def line(r):
        return "  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(r)).rstrip()
    return "\n".join([line(heads)] + [line(r) for r in rows])


def md_inline(s):
    """One line of Markdown (**bold**, `code`) as escaped HTML."""
    s = html.escape(s)
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", s)


def inline_svg(path):
    """The <svg> element of an SVG file, for inlining into HTML ("" if none)."""
    text = read_text(path)
    i = text.find("<svg")
    return text[i:] if i >= 0 else ""

