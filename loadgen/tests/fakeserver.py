#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""fakeserver.py - a small memcached text-protocol server that misbehaves
on purpose, for loadgen's tests.

It stores what clients set and returns it on get (so it never needs the
value formula), and can:
  --corrupt N   flip one byte in every Nth value it returns
  --garbage     answer the first request it sees with a malformed line
  --drop N      close each connection after N requests
  --stall S --stall-at T   stop answering for S seconds, once, T seconds
                after the first request
  --reset       with --stall: when the stall ends, reset every connection
                (RST) instead of answering
  --errors N    answer every Nth request with an error: a set with
                NOT_STORED, EXISTS and SERVER_ERROR in turn, anything else
                with SERVER_ERROR
  --delay S     send every reply S seconds after its request arrived
  --purge N     meta gets: every Nth hit is purged instead: the value is
                dropped and the reply is "EN P" (a miss caused by a purge)
  --rebuild N   meta gets: every Nth hit is answered "VA .. P" (a value
                rebuilt after a purge)
  --log FILE    one line per command: "TIME CMD KEY REPLY" (TIME in
                seconds, monotonic), for set " bytes=N" (the value's
                length) after it, and for set and touch " exptime=N"
                last, written when the server exits
  --no-meta     answer ERROR to every mg, as a server without the meta
                protocol does
  --unix PATH   listen on a unix socket at PATH instead (and print PATH)
  --queue-full  listen with a backlog of 0 and put a connection of its own
                in the queue, so that the kernel turns clients away: a TCP
                client's SYN is dropped (it sends it again after 1 s), a
                unix connect fails with EAGAIN.  Serve nobody, until:
  --serve-after-syn N   with --queue-full: start serving once N clients
                wait in SYN-SENT for the port (/proc/net/tcp)
It also answers delete, touch and mg KEY v f (the meta get).
It listens on 127.0.0.1 on a free port and prints the port on stdout.
"""
import os
import argparse
import asyncio
import signal
import socket
import struct
import sys
import time

store = {}
state = {"values": 0, "garbage_done": False, "first": None, "stalled": False,
         "meta_hits": 0, "requests": 0, "errors": 0}
log = []
conns = set()


class Conn(asyncio.Protocol):
    def __init__(self, args):
        self.args = args
        self.buf = b""
        self.requests = 0

    def connection_made(self, transport):
        self.t = transport
        conns.add(self)

    def connection_lost(self, exc):
        conns.discard(self)

    def data_received(self, data):
        self.buf += data
        out = []
        while True:
            nl = self.buf.find(b"\r\n")
            if nl < 0:
                break
            line = self.buf[:nl]
            parts = line.split()
            if not parts:
                self.buf = self.buf[nl + 2:]
                out.append(b"ERROR\r\n")
                continue
            cmd = parts[0]
            if cmd == b"set":
                if len(parts) < 5:
                    self.buf = self.buf[nl + 2:]
                    out.append(b"CLIENT_ERROR bad command line format\r\n")
                    continue
                n = int(parts[4])
                if len(self.buf) < nl + 2 + n + 2:
                    break
                data = self.buf[nl + 2:nl + 2 + n]
                self.buf = self.buf[nl + 2 + n + 2:]
                store[parts[1]] = (int(parts[2]), data)
                reply = b"STORED\r\n"
            elif cmd in (b"delete", b"touch") and len(parts) >= 2:
                self.buf = self.buf[nl + 2:]
                k = parts[1]
                if k in store:
                    if cmd == b"delete":
                        del store[k]
                    reply = b"DELETED\r\n" if cmd == b"delete" else b"TOUCHED\r\n"
                else:
                    reply = b"NOT_FOUND\r\n"
            elif cmd == b"mg" and self.args.no_meta:
                self.buf = self.buf[nl + 2:]
                reply = b"ERROR\r\n"
            elif cmd == b"mg" and len(parts) >= 2:
                self.buf = self.buf[nl + 2:]
                k = parts[1]
                if k in store:
                    flags, data = store[k]
                    state["meta_hits"] += 1
                    n = state["meta_hits"]
                    if self.args.purge and n % self.args.purge == 0:
                        del store[k]
                        reply = b"EN P\r\n"
                    elif self.args.rebuild and n % self.args.rebuild == 0:
                        reply = b"VA %d f%d P\r\n%s\r\n" % (len(data), flags, data)
                    else:
                        reply = b"VA %d f%d\r\n%s\r\n" % (len(data), flags, data)
                else:
                    reply = b"EN\r\n"
            elif cmd in (b"get", b"gets"):
                self.buf = self.buf[nl + 2:]
                reply = b""
                for k in parts[1:]:
                    if k in store:
                        flags, data = store[k]
                        state["values"] += 1
                        if self.args.corrupt and state["values"] % self.args.corrupt == 0:
                            i = state["values"] % len(data)
                            data = data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]
                        reply += b"VALUE %s %d %d\r\n%s\r\n" % (k, flags, len(data), data)
                reply += b"END\r\n"
            else:
                self.buf = self.buf[nl + 2:]
                reply = b"ERROR\r\n"
            state["requests"] += 1
            if self.args.errors and state["requests"] % self.args.errors == 0:
                if cmd == b"set":
                    reply = (b"NOT_STORED\r\n", b"EXISTS\r\n",
                             b"SERVER_ERROR out of memory\r\n")[state["errors"] % 3]
                    state["errors"] += 1
                else:
                    reply = b"SERVER_ERROR out of memory\r\n"
            if self.args.garbage and not state["garbage_done"]:
                state["garbage_done"] = True
                reply = b"HELLO THERE\r\n"
            now = time.monotonic()
            if self.args.log:
                keys = b",".join(parts[1:]) if cmd in (b"get", b"gets") else \
                    (parts[1] if len(parts) > 1 else b"-")
                line = b"%.6f %s %s %s" % (now, cmd, keys, reply.split(b"\r\n")[0])
                if cmd == b"set" and len(parts) >= 5:
                    line += b" bytes=" + parts[4]
                if cmd in (b"set", b"touch") and len(parts) >= (4 if cmd == b"set" else 3):
                    line += b" exptime=" + parts[3 if cmd == b"set" else 2]
                log.append(line)
            if state["first"] is None:
                state["first"] = now
            if (self.args.stall and not state["stalled"]
                    and now - state["first"] >= self.args.stall_at):
                state["stalled"] = True
                time.sleep(self.args.stall)   # the whole server stalls
                if self.args.reset:
                    for c in list(conns):
                        sock = c.t.get_extra_info("socket")
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        struct.pack("ii", 1, 0))
                        c.t.abort()
                    return
            out.append(reply)
            self.requests += 1
            if self.args.drop and self.requests >= self.args.drop:
                self.t.write(b"".join(out))
                self.t.close()
                return
        if out:
            if self.args.delay:
                asyncio.get_running_loop().call_later(
                    self.args.delay, self.write_later, b"".join(out))
            else:
                self.t.write(b"".join(out))

    def write_later(self, data):
        if not self.t.is_closing():
            self.t.write(data)


def syn_sent(port):
    """How many sockets wait in SYN-SENT for 127.0.0.1:port."""
    want = "0100007F:%04X" % port
    with open("/proc/net/tcp") as f:
        return sum(1 for line in f
                   if line.split()[2:4] == [want, "02"])


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corrupt", type=int, default=0)
    p.add_argument("--garbage", action="store_true")
    p.add_argument("--drop", type=int, default=0)
    p.add_argument("--stall", type=float, default=0)
    p.add_argument("--stall-at", type=float, default=0.5)
    p.add_argument("--reset", action="store_true")
    p.add_argument("--errors", type=int, default=0)
    p.add_argument("--delay", type=float, default=0)
    p.add_argument("--purge", type=int, default=0)
    p.add_argument("--rebuild", type=int, default=0)
    p.add_argument("--log")
    p.add_argument("--no-meta", action="store_true")
    p.add_argument("--unix")
    p.add_argument("--queue-full", action="store_true")
    p.add_argument("--serve-after-syn", type=int, default=0)
    args = p.parse_args()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    if args.unix:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(args.unix)
    else:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
    sock.listen(0 if args.queue_full else 100)
    if args.queue_full:
        own = socket.socket(sock.family)
        own.connect(sock.getsockname())
    print(args.unix or sock.getsockname()[1], flush=True)
    sys.stdout.close()
    try:
        if args.queue_full:
            while not stop.is_set() and not (
                    args.serve_after_syn and not args.unix and
                    syn_sent(sock.getsockname()[1]) >= args.serve_after_syn):
                await asyncio.sleep(0.01)
            own.close()
        if not stop.is_set():
            # create_server listens again, with its default backlog
            server = await loop.create_server(lambda: Conn(args), sock=sock)
            async with server:
                await stop.wait()
    finally:
        if args.unix:
            os.unlink(args.unix)
        if args.log:
            with open(args.log, "wb") as f:
                f.write(b"".join(line + b"\n" for line in log))


if __name__ == "__main__":
    asyncio.run(main())
