#!/usr/bin/env python3
"""Fault proxy for bench/soak.sh: forwards loopback TCP to streamd and breaks it on purpose.

Every 10-60 s (random) it cuts every open connection (a FIN, or an RST one time in three);
independently, every 10-60 s it stalls every open connection for 1-8 s (no byte moves either
way). Responses are paced to --rate bytes/s per connection so a transfer lasts long enough to
be cut. Counts go to --stats as JSON every few seconds. Loopback only; stops by itself at
--deadline (a Unix time)."""

import argparse
import asyncio
import json
import random
import socket
import struct
import time


class Proxy:
    def __init__(self, upstream_port, rate, seed):
        self.upstream_port = upstream_port
        self.rate = rate
        self.rng = random.Random(seed)
        self.conns = set()          # (client_writer, upstream_writer) pairs open now
        self.stalled_until = 0.0
        self.counts = {"connections": 0, "cuts": 0, "connections_cut": 0, "stalls": 0,
                       "stall_seconds": 0.0, "bytes_down": 0}

    async def handle(self, client_reader, client_writer):
        self.counts["connections"] += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.close()
            return
        pair = (client_writer, up_writer)
        self.conns.add(pair)
        try:
            await asyncio.gather(self.pump(client_reader, up_writer, paced=False),
                                 self.pump(up_reader, client_writer, paced=True),
                                 return_exceptions=True)
        finally:
            self.conns.discard(pair)
            for w in pair:
                w.close()

    async def pump(self, reader, writer, paced):
        while True:
            data = await reader.read(16384 if paced else 65536)
            if not data:
                if writer.can_write_eof():
                    try:
                        writer.write_eof()
                    except OSError:
                        pass
                return
            while time.time() < self.stalled_until:
                await asyncio.sleep(0.05)
            writer.write(data)
            await writer.drain()
            if paced:
                self.counts["bytes_down"] += len(data)
                await asyncio.sleep(len(data) / self.rate)

    def cut_all(self):
        self.counts["cuts"] += 1
        for client_writer, up_writer in list(self.conns):
            self.counts["connections_cut"] += 1
            if self.rng.random() < 1 / 3:
                # An RST: SO_LINGER with a zero timeout, then close.
                sock = client_writer.get_extra_info("socket")
                if sock is not None:
                    try:
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    except OSError:
                        pass
            client_writer.close()
            up_writer.close()
        self.conns.clear()

    async def faults(self, deadline):
        next_cut = time.time() + self.rng.uniform(10, 60)
        next_stall = time.time() + self.rng.uniform(10, 60)
        while time.time() < deadline:
            now = time.time()
            if now >= next_cut:
                self.cut_all()
                next_cut = now + self.rng.uniform(10, 60)
            if now >= next_stall:
                length = self.rng.uniform(1, 8)
                self.stalled_until = now + length
                self.counts["stalls"] += 1
                self.counts["stall_seconds"] += length
                next_stall = now + self.rng.uniform(10, 60)
            await asyncio.sleep(0.2)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream-port", type=int, required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--rate", type=int, default=256 * 1024)
    ap.add_argument("--deadline", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    proxy = Proxy(args.upstream_port, args.rate, args.seed)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(port))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    faults = asyncio.create_task(proxy.faults(args.deadline))
    while time.time() < args.deadline:
        with open(args.stats + ".tmp", "w") as f:
            json.dump(proxy.counts, f)
        os.replace(args.stats + ".tmp", args.stats)
        await asyncio.sleep(2)
    faults.cancel()
    server.close()


if __name__ == "__main__":
    asyncio.run(main())
