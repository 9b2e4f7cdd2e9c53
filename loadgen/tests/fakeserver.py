#!/usr/bin/env python3
"""fakeserver.py - a small memcached text-protocol server that misbehaves
on purpose, for loadgen's tests.

It stores what clients set and returns it on get (so it never needs the
value formula), and can:
  --corrupt N   flip one byte in every Nth value it returns
  --garbage     answer the first request it sees with a malformed line
  --drop N      close each connection after N requests
  --stall S --stall-at T   stop answering for S seconds, once, T seconds
                after the first request
  --delay S     send every reply S seconds after its request arrived
It listens on 127.0.0.1 on a free port and prints the port on stdout.
"""
import argparse
import asyncio
import sys
import time

store = {}
state = {"values": 0, "garbage_done": False, "first": None, "stalled": False}


class Conn(asyncio.Protocol):
    def __init__(self, args):
        self.args = args
        self.buf = b""
        self.requests = 0

    def connection_made(self, transport):
        self.t = transport

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
            if self.args.garbage and not state["garbage_done"]:
                state["garbage_done"] = True
                reply = b"HELLO THERE\r\n"
            now = time.monotonic()
            if state["first"] is None:
                state["first"] = now
            if (self.args.stall and not state["stalled"]
                    and now - state["first"] >= self.args.stall_at):
                state["stalled"] = True
                time.sleep(self.args.stall)   # the whole server stalls
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


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--corrupt", type=int, default=0)
    p.add_argument("--garbage", action="store_true")
    p.add_argument("--drop", type=int, default=0)
    p.add_argument("--stall", type=float, default=0)
    p.add_argument("--stall-at", type=float, default=0.5)
    p.add_argument("--delay", type=float, default=0)
    args = p.parse_args()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Conn(args), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    sys.stdout.close()
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
