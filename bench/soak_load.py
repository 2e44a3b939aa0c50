#!/usr/bin/env python3
"""Server load for bench/soak.sh, all on loopback against one streamd:

- listeners: N tasks that each connect, GET a track (paced with ?kbps=, a Range, or plain),
  read for 1-15 s or to the end (some read slowly), close (one time in five with an RST),
  and start over;
- slowloris: M tasks that each open a connection and dribble a request head (or nothing)
  until streamd's head timeout closes it, then reconnect;
- hostile: one task sending junk, oversized heads, bad ranges and traversal attempts, one
  every 50 ms, counting the answers' status codes (run as its own process with --hostile-only).

Every loop is bounded by --deadline (a Unix time). Counts go to --stats as JSON every 2 s."""

import argparse
import asyncio
import json
import os
import random
import socket
import struct
import time
import urllib.parse

COUNTS = {
    "listener_connections": 0, "listener_bytes": 0, "listener_errors": 0, "listener_refused": 0,
    "slowloris_connections": 0, "slowloris_closed_by_server": 0, "slowloris_errors": 0,
    "hostile_requests": 0, "hostile_no_answer": 0, "hostile_status": {},
}


def hostile_requests(tracks):
    """The hostile payloads: (name, bytes)."""
    t = urllib.parse.quote(tracks[0])
    many_ranges = ",".join(f"{i}-{i + 10}" for i in range(0, 2000, 5))
    payloads = [
        ("junk", os.urandom(512)),
        ("junk-line", b"\x00\xff\xfe GARBAGE \r\n\r\n"),
        ("no-version", b"GET /\r\n\r\n"),
        ("long-line", b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("big-header", b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 40000 + b"\r\n\r\n"),
        ("many-headers", b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(500)) + b"\r\n"),
        ("bad-range-reversed", f"GET /media/{t} HTTP/1.1\r\nHost: x\r\nRange: bytes=500-100\r\n\r\n".encode()),
        ("bad-range-text", f"GET /media/{t} HTTP/1.1\r\nHost: x\r\nRange: bytes=abc-def\r\n\r\n".encode()),
        ("bad-range-huge", f"GET /media/{t} HTTP/1.1\r\nHost: x\r\nRange: bytes=99999999999999999999999-\r\n\r\n".encode()),
        ("range-overlap", f"GET /media/{t} HTTP/1.1\r\nHost: x\r\nRange: bytes={many_ranges}\r\n\r\n".encode()),
        ("range-past-end", f"GET /media/{t} HTTP/1.1\r\nHost: x\r\nRange: bytes=999999999-\r\n\r\n".encode()),
        ("traversal", b"GET /media/../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("traversal-encoded", b"GET /media/%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("traversal-nul", b"GET /media/a%00.mp3 HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("traversal-backslash", b"GET /media/..%5c..%5cetc%5cpasswd HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("index-traversal", b"GET /api/index/../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("hls-traversal", b"GET /hls/../../etc/passwd/index.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("bad-method", b"BREW /coffee HTTP/1.1\r\nHost: x\r\n\r\n"),
        ("post-body", b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"),
        ("chunked-body", b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
        ("bad-content-length", b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"),
        ("http2-version", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n"),
        ("http9-version", b"GET / HTTP/9.9\r\nHost: x\r\n\r\n"),
        ("bare-lf", b"GET / HTTP/1.1\nHost: x\n\n"),
        ("kbps-text", f"GET /media/{t}?kbps=abc HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
        ("kbps-zero", f"GET /media/{t}?kbps=0 HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
        ("kbps-negative", f"GET /media/{t}?kbps=-5 HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
        ("pipelined-junk", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 3 + os.urandom(64)),
        ("half-close", b"GET /api/tracks HTTP/1.1\r\nHost: x\r\n\r\n"),
    ]
    if os.environ.get("SOAK_OVERFLOW_REQUESTS", "1") == "1":
        # Numbers that overflow naive arithmetic (issue 12: ?kbps= once trapped the server).
        payloads += [
            ("kbps-overflow", f"GET /media/{t}?kbps=9999999999999999 HTTP/1.1\r\nHost: x\r\n\r\n".encode()),
            ("content-length-overflow", b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
        ]
    return payloads


async def listener(port, tracks, deadline, rng):
    while time.time() < deadline:
        track = rng.choice(tracks)
        path = "/media/" + urllib.parse.quote(track)
        kind = rng.random()
        headers = "Host: x\r\n"
        if kind < 0.6:
            path += "?kbps=%d" % rng.choice([64, 128, 256, 512])
        elif kind < 0.8:
            start = rng.randrange(0, 200000)
            headers += "Range: bytes=%d-\r\n" % start
            path += "?kbps=256"
        writer = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            COUNTS["listener_connections"] += 1
            writer.write(f"GET {path} HTTP/1.1\r\n{headers}\r\n".encode())
            await writer.drain()
            stop_at = time.time() + rng.uniform(1, 15)
            slow = rng.random() < 0.2
            while time.time() < min(stop_at, deadline):
                try:
                    data = await asyncio.wait_for(reader.read(4096 if slow else 65536), timeout=1)
                except asyncio.TimeoutError:
                    continue
                if not data:
                    break
                COUNTS["listener_bytes"] += len(data)
                # Slow readers fill streamd's socket buffers (blocked writes); the rest read at
                # most ~1 MB/s each, so 500 of them do not starve the machine.
                await asyncio.sleep(0.5 if slow else 0.05)
            if rng.random() < 0.2:
                sock = writer.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except ConnectionRefusedError:
            COUNTS["listener_refused"] += 1
            await asyncio.sleep(1)
        except OSError:
            COUNTS["listener_errors"] += 1
        finally:
            if writer is not None:
                writer.close()
        await asyncio.sleep(rng.uniform(0, 0.5))


async def slowloris(port, deadline, rng):
    # Start spread over the first 10 s so reconnects do not come in one wave.
    await asyncio.sleep(rng.uniform(0, 10))
    while time.time() < deadline:
        writer = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            COUNTS["slowloris_connections"] += 1
            silent = rng.random() < 0.3
            if not silent:
                writer.write(b"GET /media/x.mp3 HTTP/1.1\r\nHost: x\r\n")
                await writer.drain()
            while time.time() < deadline:
                try:
                    data = await asyncio.wait_for(reader.read(4096), timeout=rng.uniform(1, 3))
                    if not data:
                        COUNTS["slowloris_closed_by_server"] += 1
                        break
                    continue   # the 408 answer; the close follows
                except asyncio.TimeoutError:
                    pass
                if not silent:
                    writer.write(b"X-a: b\r\n")
                    await writer.drain()
        except OSError:
            COUNTS["slowloris_errors"] += 1
            await asyncio.sleep(1)
        finally:
            if writer is not None:
                writer.close()


async def hostile(port, tracks, deadline, rng):
    payloads = hostile_requests(tracks)
    while time.time() < deadline:
        name, payload = rng.choice(payloads)
        writer = None
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(payload)
            if name == "half-close":
                writer.write_eof()
            await writer.drain()
            head = await asyncio.wait_for(reader.read(256), timeout=5)
            COUNTS["hostile_requests"] += 1
            status = head.split(b" ")[1].decode("ascii", "replace") if head.startswith(b"HTTP/") else "none"
            if status == "none":
                COUNTS["hostile_no_answer"] += 1
            key = f"{name}:{status}"
            COUNTS["hostile_status"][key] = COUNTS["hostile_status"].get(key, 0) + 1
        except (OSError, asyncio.TimeoutError):
            COUNTS["hostile_requests"] += 1
            COUNTS["hostile_no_answer"] += 1
            key = f"{name}:error"
            COUNTS["hostile_status"][key] = COUNTS["hostile_status"].get(key, 0) + 1
        finally:
            if writer is not None:
                writer.close()
        await asyncio.sleep(0.05)


async def report(path, deadline):
    while True:
        with open(path + ".tmp", "w") as f:
            json.dump(COUNTS, f)
        os.replace(path + ".tmp", path)
        if time.time() >= deadline:
            return
        await asyncio.sleep(2)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--tracks", required=True, help="file with one track path (relative to the library) per line")
    ap.add_argument("--listeners", type=int, default=500)
    ap.add_argument("--slowloris", type=int, default=1000)
    ap.add_argument("--deadline", type=float, required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--hostile-only", action="store_true",
                    help="only the hostile stream (its own process, so a busy event loop cannot starve it)")
    args = ap.parse_args()
    with open(args.tracks) as f:
        tracks = [line.rstrip("\n") for line in f if line.strip()]
    rng = random.Random(args.seed)
    if args.hostile_only:
        tasks = [hostile(args.port, tracks, args.deadline, random.Random(rng.random()))]
    else:
        tasks = [listener(args.port, tracks, args.deadline, random.Random(rng.random())) for _ in range(args.listeners)]
        tasks += [slowloris(args.port, args.deadline, random.Random(rng.random())) for _ in range(args.slowloris)]
    tasks.append(report(args.stats, args.deadline))
    await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main())
