#!/usr/bin/env python3
"""The measurements of bench/library.sh (see there). usage: library_bench.py STREAMD LIBRARY"""
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

BIN, LIBRARY = sys.argv[1], sys.argv[2]
AUDIO = (".mp3", ".m4a", ".aac", ".wav")


def audio_files():
    out = []
    for root, dirs, files in os.walk(LIBRARY):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        out += [os.path.join(root, f) for f in files if f.endswith(AUDIO)]
    return sorted(out)


def warm_cache(files):
    for path in files:
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass


class Server:
    """streamd on the library with a given database; `listening_ms` is exec → the port line."""

    def __init__(self, db, extra=()):
        started = time.monotonic()
        self.process = subprocess.Popen([BIN, LIBRARY, "--port", "0", "--quiet", "--db", db, *extra],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        self.listening_ms = (time.monotonic() - started) * 1000
        self.started = started
        if not line.startswith("listening on "):
            raise SystemExit("streamd did not start: %r %s" % (line, self.process.stderr.read()[:2000]))
        self.base = line.split()[-1].rstrip("/")

    def status(self):
        with urllib.request.urlopen(self.base + "/api/status", timeout=30) as r:
            return json.load(r)

    def search(self, query):
        with urllib.request.urlopen(self.base + "/api/search?q=" + query, timeout=30) as r:
            return json.load(r)

    def wait_first_scan_searching(self, query, every=0.25):
        """wait_scans(1), asking /api/search every `every` s meanwhile: (status at the end,
        seconds from exec to the first answer that was not empty, tracks listed then)."""
        first = None
        while True:
            s = self.status()
            if s["scans"] >= 1 and not s["scanning"]:
                return s, first
            if first is None and self.search(query):
                first = (time.monotonic() - self.started, self.status()["tracks"])
            time.sleep(every)

    def wait_scans(self, count, timeout=3600):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.status()
            if s["scans"] >= count and not s["scanning"]:
                return s
            time.sleep(0.01)
        raise SystemExit("scan did not finish")

    def peak_rss_kb(self):
        for line in open("/proc/%d/status" % self.process.pid):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def mutagen_one(path):
    import mutagen
    try:
        f = mutagen.File(path, easy=True)
    except Exception:            # mutagen reads ADTS with an ID3 tag as MP3 and gives up: counted as failed
        return None
    if f is None:
        return None
    tags = f.tags or {}
    get = lambda k: (tags.get(k) or [None])[0] if hasattr(tags, "get") else None
    return (get("title"), get("artist"), get("album"), get("tracknumber"), f.info.length if f.info else None)


def mutagen_scan(files, processes):
    started = time.monotonic()
    with multiprocessing.Pool(processes) as pool:
        results = pool.map(mutagen_one, files, chunksize=256)
    return time.monotonic() - started, sum(1 for r in results if r is not None)


def main():
    files = audio_files()
    n = len(files)
    cores = os.cpu_count() or 1
    print("library: %d audio files under %s; %d cores; streamd %s" % (n, LIBRARY, cores, BIN))
    tmp = tempfile.mkdtemp(prefix="library-bench-")
    db = os.path.join(tmp, "catalog.db")
    try:
        warm_cache(files)
        # 1. First full scan, page cache warm.
        server = Server(db)
        s, searching = server.wait_first_scan_searching("amber")
        scan_s = s["last_scan_ms"] / 1000
        print("first scan: %d tracks listed, %d files read in %.2f s = %.0f tracks/s (listening after %.0f ms; %d companion files passed by)"
              % (s["tracks"], s["scan_read"], scan_s, s["tracks"] / scan_s, server.listening_ms, s.get("ignored_count", 0)))
        print("  search (asked every 0.25 s) first answered %s"
              % ("%.2f s after exec, %d tracks listed then" % searching if searching else "only after the scan"))
        print("  streamd peak RSS during the first scan: %.1f MB" % (server.peak_rss_kb() / 1024))
        server.stop()
        workers = s["analyzer_workers"]
        mutagen_s, mutagen_ok = mutagen_scan(files, workers)
        print("mutagen scan (%d processes): %d files in %.2f s = %.0f files/s; streamd/mutagen = %.1fx"
              % (workers, mutagen_ok, mutagen_s, n / mutagen_s, mutagen_s / scan_s))

        # 2. Restart, warm database: exec → listening, and the whole restart's peak RSS.
        times, rss, current = [], [], []
        for _ in range(5):
            server = Server(db)
            times.append(server.listening_ms)
            server.wait_scans(1)
            current.append((time.monotonic() - server.started) * 1000)
            rss.append(server.peak_rss_kb() / 1024)
            server.stop()
        print("restart, warm db: listening after %.1f ms (median of 5: %s); catalog checked against the folder after %.0f ms; peak RSS %.1f MB (max of 5)"
              % (statistics.median(times), " ".join("%.0f" % t for t in times), statistics.median(current), max(rss)))

        # 3. Restart after 100 files changed.
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make-library.py"), LIBRARY,
                        "--tracks", str(n), "--change", "100"], check=True, stdout=subprocess.DEVNULL)
        server = Server(db)
        s = server.wait_scans(1)
        current_ms = (time.monotonic() - server.started) * 1000
        print("restart after 100 files changed: %d read, catalog current %.0f ms after exec (listening after %.0f ms)"
              % (s["scan_read"], current_ms, server.listening_ms))

        # 4. inotify pick-up: a file copied in until /api/status counts it.
        picks = []
        source = files[0]
        folder = os.path.dirname(files[len(files) // 2])
        for i in range(10):
            before = server.status()["tracks"]
            target = os.path.join(folder, "zz-inotify-%d%s" % (i, os.path.splitext(source)[1]))
            started = time.monotonic()
            shutil.copyfile(source, target)
            while server.status()["tracks"] == before:
                if time.monotonic() - started > 10:
                    raise SystemExit("inotify: not picked up in 10 s")
                time.sleep(0.005)
            picks.append((time.monotonic() - started) * 1000)
        for i in range(10):
            os.remove(os.path.join(folder, "zz-inotify-%d%s" % (i, os.path.splitext(source)[1])))
        print("inotify pick-up: median %.0f ms, max %.0f ms (10 files; watch mode %s, %d folders)"
              % (statistics.median(picks), max(picks), server.status()["watch"], server.status()["watched_folders"]))
        server.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
