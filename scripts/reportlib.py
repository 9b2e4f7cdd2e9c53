# SPDX-License-Identifier: GPL-2.0-only
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
import math
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



# Student's t, 97.5% quantile, by degrees of freedom (two-sided 95%).
_T975 = [None, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    """The 97.5% quantile of Student's t with df degrees of freedom (df >= 1);
    past 30 the table steps to 40, 60, 120 and the normal 1.960."""
    if df < 1:
        raise ValueError("t975 needs df >= 1")
    if df < len(_T975):
        return _T975[df]
    return 2.021 if df < 60 else 2.000 if df < 120 else 1.980 if df < 1000 else 1.960


def mean_ci(values):
    """{"mean", "stddev", "ci95": [lo, hi], "n"} of the values that are numbers;
    ci95 is the mean's 95% confidence interval (Student's t), None for fewer
    than two values; mean and stddev are None for none."""
    vals = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v]
    n = len(vals)
    if not n:
        return {"mean": None, "stddev": None, "ci95": None, "n": 0}
    m = sum(vals) / n
    if n == 1:
        return {"mean": m, "stddev": None, "ci95": None, "n": 1}
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (n - 1))
    h = t975(n - 1) * sd / math.sqrt(n)
    return {"mean": m, "stddev": sd, "ci95": [m - h, m + h], "n": n}


# The Okabe-Ito palette: told apart with every common colour-vision deficiency.
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
             "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7"}


def fmt_value(v, unit=""):
    """The report's one number format: None as "n/a"; percentages with one
    decimal; microseconds as us, ms or s with three significant digits;
    other numbers with thousands separators, one decimal below 100."""
    if v is None:
        return "n/a"
    if unit == "%":
        return "%.1f%%" % v
    if unit == "us":
        if v >= 1e6:
            return "%.3g s" % (v / 1e6)
        if v >= 1000:
            return "%.3g ms" % (v / 1000)
        return "%.3g us" % v
    if isinstance(v, float) and abs(v) < 100 and v != int(v):
        return "%.1f" % v
    return "{:,}".format(int(round(v)))
