#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""cached started as memcached is started: with the lines of Debian's
/etc/memcached.conf (through --config, as Debian's start-memcached reads
the file, and on the command line, as its systemd wrapper passes them),
with every option memcached 1.6.18's own t/ files pass, with the options
it refuses (exit 64, one line that names the option), SIGHUP reopening the
log file, and the stats fields memcached's exporters read.  Run one part
with its name as the argument (compat.py debconf)."""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import util

check = util.Checks("compat")
DEBIAN_CONF = "/usr/share/memcached/memcached.conf.default"   # Debian's /etc/memcached.conf


def run(argv, timeout=10):
    """Run cached to its end: (exit status, stdout, stderr)."""
    try:
        r = subprocess.run([util.CACHED] + argv, capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, b"", b"<still running>"
    return r.returncode, r.stdout, r.stderr


def serves(port, host="127.0.0.1", family=socket.AF_INET, path=None):
    """A set and a get of it answered, over TCP or the unix socket path."""
    try:
        if path:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
        else:
            s = socket.socket(family)
            s.connect((host, port))
        s.settimeout(5)
        s.sendall(b"set compat 5 0 3\r\nabc\r\nget compat\r\n")
        want = b"STORED\r\nVALUE compat 5 3\r\nabc\r\nEND\r\n"
        got = b""
        while len(got) < len(want):
            d = s.recv(4096)
            if not d:
                break
            got += d
        s.close()
        return got == want
    except OSError:
        return False


def wait_listen(port, proc=None, path=None, seconds=5.0):
    end = time.time() + seconds
    while time.time() < end:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            if path:
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                s.close()
            else:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


def alive(pid):
    """pid runs (a zombie nobody reaped yet counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid, seconds=5.0):
    end = time.time() + seconds
    while alive(pid) and time.time() < end:
        time.sleep(0.02)
    return not alive(pid)


def debian_lines(port, d, verbose=False):
    """Debian's memcached.conf, its port, log file and pid file moved to
    port and into d; -v uncommented when verbose."""
    text = open(DEBIAN_CONF).read()
    text = text.replace("-p 11211", "-p %d" % port)
    text = text.replace("/var/log/memcached.log", os.path.join(d, "memcached.log"))
    text = text.replace("/var/run/memcached/memcached.pid", os.path.join(d, "memcached.pid"))
    if verbose:
        text = text.replace("# -v\n", "-v\n", 1)
    return text


def conf_options(text):
    """The option words of a conf file, as Debian's wrapper joins them:
    comments, blank lines, -d and directives (logfile) left out."""
    words = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-d") or not line.startswith("-"):
            continue
        words += line.split()
    return words


def tmpdir():
    d = tempfile.mkdtemp()
    os.chmod(d, 0o777)   # -u memcache writes its pid and log files here
    return d


def debconf():
    """Debian's /etc/memcached.conf: through --config (it says -d: the
    command returns once the daemon serves, the pid file names it, the
    log file exists, SIGTERM stops it and the pid file goes) and its option
    lines on the command line, in the foreground as Debian's systemd
    wrapper runs memcached, and with -d."""
    d = tmpdir()
    try:
        port = util.free_port()
        conf = os.path.join(d, "memcached.conf")
        text = debian_lines(port, d)
        with open(conf, "w") as f:
            f.write(text)
        pidfile = os.path.join(d, "memcached.pid")
        rc, out, err = run(["--config", conf])
        check(rc == 0 and err == b"", "--config %s: exit %s, %r" % (DEBIAN_CONF, rc, err))
        pid = int(open(pidfile).read()) if os.path.exists(pidfile) else 0
        check(pid > 0 and alive(pid), "the pid file names the daemon: %d" % pid)
        check(serves(port), "the daemon of --config serves a get")
        st = util.stats(port)
        check(st.get("pid") == str(pid), "stats pid %s, the pid file %d" % (st.get("pid"), pid))
        check(st.get("limit_maxbytes") == str(64 << 20), "-m 64: %s" % st.get("limit_maxbytes"))
        check(os.path.exists(os.path.join(d, "memcached.log")), "logfile: the log file is there")
        owner = os.stat("/proc/%d" % pid).st_uid if alive(pid) else -1
        check(owner == pwd.getpwnam("memcache").pw_uid,
              "-u memcache: the daemon runs as memcache (uid %d)" % owner)
        if pid:
            os.kill(pid, signal.SIGTERM)
            check(wait_gone(pid), "SIGTERM stops the daemon")
            check(not os.path.exists(pidfile), "the daemon removed its pid file")

        # the option lines on the command line, in the foreground
        words = conf_options(text)
        check(words == ["-m", "64", "-p", str(port), "-u", "memcache", "-l", "127.0.0.1",
                        "-P", pidfile], "the conf's option words: %r" % words)
        proc = subprocess.Popen([util.CACHED] + words, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        check(wait_listen(port, proc) and serves(port), "%s serves a get" % " ".join(words))
        pid = int(open(pidfile).read()) if os.path.exists(pidfile) else 0
        check(pid == proc.pid, "-P without -d writes the pid file (as memcached): %d" % pid)
        check(util.stop(proc) == 0, "SIGTERM: exit 0")

        # and with -d: back at once, the daemon serving
        rc, out, err = run(["-d"] + words)
        check(rc == 0, "-d %s: exit %s %r" % (" ".join(words), rc, err))
        pid = int(open(pidfile).read()) if os.path.exists(pidfile) else 0
        check(pid > 0 and serves(port), "the daemon of -d serves a get")
        # a second one on the same port: the start fails, and -d says so
        rc, out, err = run(["-d"] + words)
        check(rc not in (None, 0) and b"cannot listen" in err,
              "-d on a port in use: exit %s, %r" % (rc, err))
        if pid:
            os.kill(pid, signal.SIGTERM)
            check(wait_gone(pid), "SIGTERM stops the daemon of -d")
    finally:
        shutil.rmtree(d)


def sighup():
    """SIGHUP reopens the log file (logrotate renames it, then signals):
    the lines after it go to a new file of the same name, the old file
    keeps the old ones, and the daemon lives on.  Without a log file SIGHUP
    changes nothing.  It used to stop the daemon."""
    d = tmpdir()
    try:
        port = util.free_port()
        conf = os.path.join(d, "memcached.conf")
        with open(conf, "w") as f:
            f.write(debian_lines(port, d, verbose=True))
        log = os.path.join(d, "memcached.log")
        rc, out, err = run(["--config", conf])
        check(rc == 0, "--config with -v: exit %s %r" % (rc, err))
        pidfile = os.path.join(d, "memcached.pid")
        pid = int(open(pidfile).read()) if os.path.exists(pidfile) else 0
        check(pid > 0 and serves(port), "the daemon serves")
        first = open(log).read() if os.path.exists(log) else ""
        check("listening" in first, "the log file has the start-up line: %r" % first)
        os.rename(log, log + ".1")
        os.kill(pid, signal.SIGHUP)
        end = time.time() + 5
        while not os.path.exists(log) and time.time() < end:
            time.sleep(0.02)
        check(os.path.exists(log), "SIGHUP: a new log file")
        check(alive(pid) and serves(port), "SIGHUP: the daemon lives on and serves")
        os.kill(pid, signal.SIGTERM)
        check(wait_gone(pid), "SIGTERM stops it")
        new = open(log).read() if os.path.exists(log) else ""
        old = open(log + ".1").read()
        check("reopened" in new and "stopped" in new, "the new lines in the new file: %r" % new)
        check(old == first, "the old file keeps the old lines only: %r" % old)

        # in the foreground, without a log file
        proc, port = util.start_cached()
        proc.send_signal(signal.SIGHUP)
        time.sleep(0.2)
        check(proc.poll() is None and serves(port), "SIGHUP without a log file: still serving")
        check(util.stop(proc) == 0, "then SIGTERM: exit 0")
    finally:
        shutil.rmtree(d)


# The option sets memcached 1.6.18's t/*.t start memcached with (beside
# -u root, -p PORT, -o relaxed_privileges that its test library adds), and
# what cached does with each: "serve" (starts and serves a get), "refuse"
# (exit 64, one line naming the option given as the third field), "fail"
# (memcached fails to start too), or "either" (serve or refuse).
T_OPTIONS = [
    ("", "serve"),
    ("-l fooble", "fail"),
    ("-l 127.0.0.1", "serve"),
    ("-C", "refuse", "-C"),
    ("-b 8675", "serve"),
    ("-B auto", "serve"),
    ("-B ascii", "serve"),
    ("-B binary", "refuse", "-B binary"),
    ("-vv -B auto", "serve"),
    ("-vv -B ascii", "serve"),
    ("-vv -B binary", "refuse", "-B binary"),
    ("-B http", "fail"),
    ("-c 0", "fail"),
    ("-c -1", "fail"),
    ("-t 0", "fail"),
    ("-m 4098 -M", "refuse", "-M"),
    ("-Y /tmp/authfile -U 0", "refuse", "-Y"),
    ("-S", "refuse", "-S"),
    ("-S -B auto", "refuse", "-S"),
    ("-S -B ascii", "refuse", "-S"),
    ("-B binary -U 0 -S -l 127.0.0.1", "refuse", "-B binary"),
    ("-o no_modern", "serve"),
    ("-o no_modern,slab_chunk_max=4096", "serve"),
    ("-m 48 -o slab_chunk_max=16384", "serve"),
    ("-o read_buf_mem_limit=1 -t 32 -R 500", "either", "read_buf_mem_limit"),
    ("-M -m 2", "refuse", "-M"),
    ("-m 3 -o modern,slab_automove_window=3", "serve"),
    ("-m 64 -I 4m -U 0 -o ext_page_size=8,ext_wbuf_size=8,ext_threads=1,ext_io_depth=2,"
     "ext_item_size=512,ext_item_age=2,ext_recache_rate=10000,ext_max_frag=0.9,"
     "ext_path=/tmp/extstore:64m,slab_automove=0,ext_compact_under=1,ext_max_sleep=100000",
     "refuse", "ext_page_size"),
    ("-o ext_path=/tmp/extstore:64m", "refuse", "ext_path"),
    ("-m 3", "serve"),
    ("-F", "serve"),
    ("-m 128", "serve"),
    ("-o idle_timeout=3 -l 127.0.0.1", "either", "idle_timeout"),
    ("-R 1", "serve"),
    ("-I 1000", "fail"),
    ("-I 256m", "fail"),
    ("-I 1024 -o slab_chunk_max=1024", "serve"),
    ("-I 2097152", "serve"),
    ("-I 512k -o slab_chunk_max=16384", "serve"),
    ("-m 256 -I 32m", "serve"),
    ("-m 32 -o no_modern", "serve"),
    ("-m 32 -o no_modern,lru_crawler", "serve"),
    ("-m 3 -o lru_maintainer,lru_crawler -l 127.0.0.1", "serve"),
    ("-m 2 -o lru_maintainer,lru_crawler,temporary_ttl=61", "serve"),
    ("-o drop_privileges", "refuse", "drop_privileges"),
    ("-o proxy_config=./t/startfile.lua -l 127.0.0.1", "refuse", "proxy_config"),
    ("-m 6", "serve"),
    ("-e /tmp/mc_restart", "refuse", "-e"),
    ("-m 128 -e /tmp/mc_restart -I 2m", "refuse", "-e"),
    ("-A", "serve"),
    ("-m 16 -o modern", "serve"),
    ("-m 60 -o slab_reassign,slab_automove,lru_crawler,lru_maintainer,slab_chunk_max=4096", "serve"),
    ("-m 60 -o slab_reassign,slab_automove,lru_crawler,lru_maintainer,slab_automove_window=3", "serve"),
    ("-o slab_reassign -m 4", "serve"),
    ("-o ssl_ca_cert=/tmp/ca -o ssl_chain_cert=/tmp/c -o ssl_key=/tmp/k", "refuse", "ssl_ca_cert"),
    ("-o ssl_min_version=3", "refuse", "ssl_min_version"),
    ("-o ssl_session_cache", "refuse", "ssl_session_cache"),
    ("-o ssl_wbuf_size=64", "refuse", "ssl_wbuf_size"),
    ("-Z", "refuse", "-Z"),
    ("-l 0.0.0.0", "serve"),
    ("-I 1024 -o slab_chunk_max=1024,no_lru_crawler,no_lru_maintainer", "serve"),
    ("-m 60 -o watcher_logbuf_size=8", "serve"),
    ("-W", "serve"),
    ("-U 0", "serve"),
    ("-U 11222", "refuse", "-U 11222"),
    ("-p 11232 -U 11233", "refuse", "-U 11233"),
]


def t_options():
    """Each option set of memcached's t/ files, as T_OPTIONS says.  cached
    refused every option it did not know (-U 0, -o, -b, -B ...) with
    'unknown option'."""
    d = tempfile.mkdtemp()
    try:
        for entry in T_OPTIONS:
            args, want = entry[0].split(), entry[1]
            names = entry[2] if len(entry) > 2 else None
            argv = [util.CACHED, "-u", "root", "-o", "relaxed_privileges"] + args
            sock = None
            port = util.free_port()
            if "-l" in args or "-p" in args:
                if "-p" not in args:
                    argv += ["-p", str(port)]
                else:
                    port = int(args[args.index("-p") + 1])
            else:
                sock = os.path.join(d, "sock")   # as memcached's test library
                argv += ["-s", sock]
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL)
            up = wait_listen(port, proc, path=sock)
            ok_serve = up and serves(port, path=sock)
            if up:
                util.stop(proc)
            else:
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    util.stop(proc)
            err = proc.stderr.read().decode(errors="replace")
            proc.stderr.close()
            refused = (not up and proc.returncode == 64 and err.count("\n") == 1 and
                       names is not None and names in err)
            if want == "serve":
                check(ok_serve, "%r serves: exit %s %r" % (entry[0], proc.returncode, err))
            elif want == "refuse":
                check(refused, "%r refused naming %r: exit %s %r" % (entry[0], names,
                                                                    proc.returncode, err))
            elif want == "fail":
                check(not up and proc.returncode not in (None, 0),
                      "%r does not start: exit %s %r" % (entry[0], proc.returncode, err))
            else:
                check(ok_serve or refused, "%r serves or is refused naming %r: exit %s %r"
                      % (entry[0], names, proc.returncode, err))
            if sock and os.path.exists(sock):
                os.unlink(sock)
    finally:
        shutil.rmtree(d)


def options():
    """What the options that cached maps do: -b sets the listen backlog
    (stats settings tcp_backlog), -o takes memcached's hashpower and
    cached's own long options, -l takes a list of addresses with ports,
    -a the unix socket's mode, -F and -X turn flush_all and the dumps off,
    -A turns shutdown on; -h and -V exit 0."""
    proc, port = util.start_cached("-b", "8675", "-o", "hashpower=20,mode=pinned,idle=30")
    st = util.stats(port, "settings")
    check(st.get("tcp_backlog") == "8675", "-b 8675: tcp_backlog %s" % st.get("tcp_backlog"))
    check(st.get("mode") == "pinned" and st.get("idle") == "30",
          "-o mode=pinned,idle=30: %s %s" % (st.get("mode"), st.get("idle")))
    check(util.stats(port).get("hash_power_level") == "20", "-o hashpower=20")
    util.stop(proc)

    p1, p2 = util.free_port(), util.free_port()
    proc = subprocess.Popen([util.CACHED, "-u", "root", "-p", str(p1), "-l",
                             "127.0.0.1,[::1],127.0.0.1:%d" % p2],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    check(wait_listen(p1, proc) and serves(p1), "-l a,b: the first address serves")
    check(serves(p1, "::1", socket.AF_INET6), "-l a,[::1]: the second address serves")
    check(serves(p2), "-l a,b,a:port: the third, on its own port")
    util.stop(proc)
    proc = subprocess.Popen([util.CACHED, "-u", "root", "-p", str(p1), "-l", "127.0.0.1",
                             "-l", "::1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    check(wait_listen(p1, proc) and serves(p1, "::1", socket.AF_INET6),
          "-l a -l b: both, as memcached adds them up")
    util.stop(proc)

    d = tempfile.mkdtemp()
    try:
        path = os.path.join(d, "s")
        proc = subprocess.Popen([util.CACHED, "-u", "root", "-s", path, "-a", "755"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        check(wait_listen(0, proc, path=path), "-s with -a 755")
        mode = os.stat(path).st_mode & 0o777 if os.path.exists(path) else 0
        check(mode == 0o755, "-a 755: the socket's mode is %o" % mode)
        util.stop(proc)
    finally:
        shutil.rmtree(d)

    proc, port = util.start_cached("-F", "-X")
    got = util.command(port, b"flush_all\r\nstats cachedump 1 0\r\nlru_crawler metadump all\r\n")
    check(got == b"CLIENT_ERROR flush_all not allowed\r\n"
          b"CLIENT_ERROR stats cachedump not allowed\r\nERROR metadump not allowed\r\n",
          "-F -X refuse as memcached: %r" % got)
    st = util.stats(port, "settings")
    check(st.get("flush_enabled") == "no" and st.get("dump_enabled") == "no",
          "-F -X in stats settings: %s %s" % (st.get("flush_enabled"), st.get("dump_enabled")))
    util.stop(proc)

    proc, port = util.start_cached("-A")
    got = util.command(port, b"shutdown foo\r\n")
    check(got.startswith(b"CLIENT_ERROR"), "-A: shutdown foo refused: %r" % got)
    util.command(port, b"shutdown\r\n")
    try:
        rc = proc.wait(5)
    except subprocess.TimeoutExpired:
        rc = util.stop(proc) and None
    check(rc == 0, "-A: shutdown stops the daemon: %s" % rc)

    proc, port = util.start_cached("-k", "-v")
    check(serves(port) and util.stats(port, "settings").get("mode") == "pinned",
          "-k: locked memory, pinned mode")
    util.stop(proc)

    for flag in ("-h", "-V", "-i"):
        rc, out, err = run([flag])
        check(rc == 0 and out and not err, "%s: exit %s" % (flag, rc))
    rc, out, err = run(["-h"])
    # memcached's test library reads -h for what a server supports
    check(b"unix-socket" in out and b"sasl" not in out.lower() and b"enable-ssl" not in out,
          "-h names the unix socket and no SASL or TLS support")


def refused():
    """Options cached cannot honour, and wrong values: exit 64, one line."""
    d = tempfile.mkdtemp()
    try:
        conf = os.path.join(d, "c.conf")
        with open(conf, "w") as f:
            f.write("-m 64\n-U 11211\n")
        for argv, names in (
                (["-U", "11211"], "-U 11211"),
                (["--udp-port=11211"], "-U 11211"),
                (["-o", "no_maxconns_fast"], "no_maxconns_fast"),
                (["-o", "track_sizes"], "track_sizes"),
                (["-o", "bogus"], "bogus"),
                (["-o", "hashpower=99"], "hashpower"),
                (["-o", "mode=nonsense"], "--mode"),
                (["--enable-sasl"], "-S"),
                (["-N", "8"], "-N"),
                (["--config", conf], "-U 11211"),
                (["--config", os.path.join(d, "none")], "--config"),
                (["-k", "--mode", "volatile"], "-k"),
                (["-q"], "-q")):
            rc, out, err = run(["-u", "root"] + argv)
            check(rc == 64 and err.count(b"\n") == 1 and names.encode() in err,
                  "%s: exit %s %r" % (" ".join(argv), rc, err))
    finally:
        shutil.rmtree(d)


def fields():
    """stats has the fields memcached's exporters read, with memcached's
    meaning: accepting_conns 1, connection_structures at least the open
    connections and listeners, reclaimed and expired_unfetched for a store
    over a dead item, evicted_unfetched for evicted items never read."""
    proc, port = util.start_cached("-m", "8")
    conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    time.sleep(0.1)
    st = util.stats(port)
    for name in ("accepting_conns", "connection_structures", "reclaimed", "evicted_unfetched",
                 "expired_unfetched", "libevent", "time_in_listen_disabled_us"):
        check(name in st, "stats has %s" % name)
    check(st.get("accepting_conns") == "1", "accepting_conns %s" % st.get("accepting_conns"))
    cs, cur = int(st.get("connection_structures", 0)), int(st["curr_connections"])
    check(cur >= 4 and cs >= cur + 1, "connection_structures %d, curr_connections %d" % (cs, cur))
    for c in conns:
        c.close()
    # a store over an expired item never read, then over one that was read
    util.command(port, b"set a 0 1 1\r\n1\r\nset b 0 1 1\r\n1\r\nget b\r\n")
    time.sleep(2.1)
    util.command(port, b"set a 0 0 1\r\n2\r\nset b 0 0 1\r\n2\r\n")
    st = util.stats(port)
    check(st.get("reclaimed") == "2" and st.get("expired_unfetched") == "1",
          "reclaimed %s expired_unfetched %s (2 and 1)" % (st.get("reclaimed"),
                                                          st.get("expired_unfetched")))
    items = util.stats(port, "items")
    per_class = sum(int(v) for k, v in items.items() if k.endswith(":reclaimed"))
    check(per_class == 2, "the classes' reclaimed add up: %d" % per_class)
    util.command(port, b"get a b\r\n")   # read: not counted when evicted
    # evictions of values read once each: none unfetched
    val = b"x" * 4000
    for lo in range(0, 6000, 200):
        util.command(port, b"".join(b"set f%d 0 0 4000 noreply\r\n%s\r\nget f%d\r\n" % (i, val, i)
                                    for i in range(lo, lo + 200)), timeout=10)
    st = util.stats(port)
    ev, evu = int(st["evictions"]), int(st.get("evicted_unfetched", -1))
    check(ev > 0 and evu == 0, "fetched values evicted: evictions %d evicted_unfetched %d" % (ev, evu))
    for lo in range(0, 6000, 200):
        util.command(port, b"".join(b"set u%d 0 0 4000 noreply\r\n%s\r\n" % (i, val)
                                    for i in range(lo, lo + 200)) + b"mn\r\n", timeout=10)
    st = util.stats(port)
    ev2, evu = int(st["evictions"]), int(st.get("evicted_unfetched", -1))
    check(evu > 0 and evu <= ev2 - ev, "values never read evicted: evicted_unfetched %d of %d"
          % (evu, ev2 - ev))
    util.stop(proc)


PARTS = {
    "debconf": debconf,
    "sighup": sighup,
    "t_options": t_options,
    "options": options,
    "refused": refused,
    "fields": fields,
}


def main():
    names = sys.argv[1:] or list(PARTS)
    for n in names:
        try:
            PARTS[n]()
        except Exception as e:   # a part that breaks off fails, the others run
            check(False, "%s: %s: %s" % (n, type(e).__name__, e))
    sys.exit(check.finish())


if __name__ == "__main__":
    main()
