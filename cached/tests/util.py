# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for the host tests: start servers on free loopback ports."""
import os
import select
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHED = os.environ.get("CACHED_BIN", os.path.join(HERE, "..", "cached"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("server did not listen on %d" % port)


def start(argv, port):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(port, proc)
    return proc


def start_cached(*extra):
    port = free_port()
    argv = [CACHED, "-u", "root", "-p", str(port), "-t", "2"] + list(extra)
    return start(argv, port), port


def start_memcached(*extra):
    port = free_port()
    argv = ["memcached", "-u", "root", "-l", "127.0.0.1", "-p", str(port), "-t", "2", "-U", "0"] + list(extra)
    return start(argv, port), port


def stop(proc):
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode


def recv_until(sock, timeout, done=lambda got: False):
    """Read from sock until done(bytes so far), the server closes, or
    timeout seconds pass with nothing to read; return what came."""
    sock.settimeout(timeout)
    got = b""
    try:
        while not done(got):
            d = sock.recv(1 << 20)
            if not d:
                break
            got += d
    except socket.timeout:
        pass
    return got


def command(port, data, timeout=2.0, pieces=None):
    """Send data, half-close, return everything the server says.  Reads
    while it sends, so a server that stops reading (or closes) early does
    not stall the sender.  With pieces (a random.Random), data goes out in
    random pieces of 1 to 5,000 bytes, some after a short pause."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    out, pos, wdone = b"", 0, False
    end = time.time() + timeout
    while True:
        if time.time() > end:
            out += b"<TIMEOUT>"
            break
        rl, wl, _ = select.select([s], [] if wdone else [s], [], 0.1)
        if wl:
            n = 65536
            if pieces:
                n = pieces.choice([1, 2, 7, 100, 1000, 5000])
                if pieces.random() < 0.3:
                    time.sleep(0.0005)
            try:
                pos += s.send(data[pos:pos + n])
                if pos >= len(data):
                    s.shutdown(socket.SHUT_WR)
                    wdone = True
            except OSError:
                wdone = True   # the server closed; read what it sent
        if rl:
            try:
                d = s.recv(65536)
            except ConnectionResetError:
                out += b"<RESET>"
                break
            if not d:
                break
            out += d
            end = time.time() + timeout
    s.close()
    return out


def stats(port, group=None):
    out = command(port, ("stats %s\r\n" % group if group else "stats\r\n").encode()).decode()
    res = {}
    for line in out.splitlines():
        p = line.split(" ", 2)
        if len(p) == 3 and p[0] == "STAT":
            res[p[1]] = p[2]
    return res


class Checks:
    """Counts a suite's checks and failures; check(cond, what) prints a
    failure at once, finish() prints the suite's line and returns the exit
    status (1 if anything failed)."""

    def __init__(self, name):
        self.name = name
        self.nchecks = 0
        self.fails = 0

    def __call__(self, cond, what):
        self.nchecks += 1
        if not cond:
            self.fails += 1
            print("  FAILED: " + what)

    def finish(self):
        print("%s: %d checks, %d failures" % (self.name, self.nchecks, self.fails))
        return 1 if self.fails else 0


def fake_meminfo(path, free_mb):
    """Write a /proc/meminfo look-alike (CACHED_MEMINFO) of 1 GiB with
    free_mb MiB free and available, atomically."""
    with open(path + ".new", "w") as f:
        f.write("MemTotal:        1048576 kB\nMemFree:          %d kB\nMemAvailable:     %d kB\n"
                % (free_mb * 1024, free_mb * 1024))
    os.rename(path + ".new", path)


def wait_stats(port, cond, seconds=5.0, pause=0.0):
    """Poll stats until cond(stats) holds or seconds pass; the last stats."""
    end = time.time() + seconds
    while True:
        st = stats(port)
        if cond(st) or time.time() > end:
            return st
        if pause:
            time.sleep(pause)
