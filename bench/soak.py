#!/usr/bin/env python3
"""The soak run behind bench/soak.sh (see there for the environment variables).

streamd serves the library to 500 churning listeners, 1,000 slowloris connections and a stream
of hostile requests (bench/soak_load.py) while streamplay plays the library track after track
through a fault proxy (bench/soak_proxy.py) and every decode is checked bit-exact against its
reference. RSS, open descriptors and threads of streamd and of the running streamplay are
sampled every 10 s into samples.csv; summary.txt is rewritten at every sample (a partial
summary) and printed at the end."""

import csv
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MINUTES = float(os.environ.get("SOAK_MINUTES", "60"))
OUT = os.environ["SOAK_OUT"]
BIN = os.environ["SOAK_BIN"]
MEDIA = os.environ.get("SOAK_MEDIA", os.path.join(ROOT, "media/out"))
LISTENERS = int(os.environ.get("SOAK_LISTENERS", "500"))
SLOWLORIS = int(os.environ.get("SOAK_SLOWLORIS", "1000"))
WARMUP = min(float(os.environ.get("SOAK_WARMUP_MINUTES", "5")), MINUTES / 3) * 60
PROXY_RATE = int(os.environ.get("SOAK_PROXY_KBYTES", "256")) * 1024
INTERVAL = 10.0
PLAY_TIMEOUT = 300
KEEP_BAD = 5


def proc_sample(pid):
    """(rss_kb, fds, threads) of a live process, or None."""
    if pid is None:
        return None
    try:
        rss = threads = None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        if rss is None or threads is None:
            return None
        return rss, fds, threads
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def cpu_ticks(pid):
    """utime + stime of a process in clock ticks, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def hwm_kb(pid):
    """Peak RSS (VmHWM) of a live process in kB, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def wav_data(path):
    """(format fields, PCM bytes) of a WAV/RF64 file: the data chunk only, so header
    differences (extensible fmt, LIST chunks, placeholder sizes) do not matter."""
    with open(path, "rb") as f:
        b = f.read()
    if len(b) < 12 or b[8:12] != b"WAVE":
        raise ValueError(f"{path}: not a WAV file")
    i, fmt = 12, None
    while i + 8 <= len(b):
        cid = b[i:i + 4]
        size = int.from_bytes(b[i + 4:i + 8], "little")
        if cid == b"fmt ":
            tag = int.from_bytes(b[i + 8:i + 10], "little")
            ch = int.from_bytes(b[i + 10:i + 12], "little")
            rate = int.from_bytes(b[i + 12:i + 16], "little")
            bits = int.from_bytes(b[i + 22:i + 24], "little")
            if tag == 0xFFFE and size >= 26:
                tag = int.from_bytes(b[i + 32:i + 34], "little")
            fmt = (tag, ch, rate, bits)
        if cid == b"data":
            end = len(b) if size in (0, 0xFFFFFFFF) else min(len(b), i + 8 + size)
            return fmt, b[i + 8:end]
        i += 8 + size + (size & 1)
    raise ValueError(f"{path}: no data chunk")


def digest(path):
    fmt, data = wav_data(path)
    return fmt, len(data), hashlib.sha256(data).hexdigest()


class Soak:
    def __init__(self):
        os.makedirs(OUT, exist_ok=True)
        self.t0 = time.time()
        self.deadline = self.t0 + MINUTES * 60
        self.lock = threading.Lock()
        self.streamd = None
        self.player_pid = None
        self.samples = []             # dicts, one per sample
        self.plays = []               # dicts, one per streamplay run
        self.crashes = []             # strings
        self.baseline = None          # streamd (rss, fds, threads) before the load
        self.after = None             # streamd after the load stopped
        self.last_ticks = None        # (cpu ticks, t) of the previous sample
        self.bad_kept = 0
        self.done = False
        self.stop_sampler = threading.Event()

    def log(self, message):
        line = f"[{time.time() - self.t0:7.1f} s] {message}"
        print(line, flush=True)
        with open(os.path.join(OUT, "soak.log"), "a") as f:
            f.write(line + "\n")

    # MARK: set-up

    def tracks(self):
        found = []
        for folder, dirs, files in os.walk(MEDIA):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith(".") or not name.lower().endswith((".mp3", ".wav", ".aac", ".m4a")):
                    continue
                found.append(os.path.relpath(os.path.join(folder, name), MEDIA))
        return found

    def start_streamd(self):
        self.streamd_err = open(os.path.join(OUT, "streamd.stderr"), "wb")
        self.streamd = subprocess.Popen([os.path.join(BIN, "streamd"), MEDIA, "--host", "127.0.0.1", "--port", "0",
                                         "--quiet"], stdout=subprocess.PIPE, stderr=self.streamd_err)
        line = self.streamd.stdout.readline().decode()
        if not line.startswith("listening on http://127.0.0.1:"):
            raise SystemExit(f"soak: streamd did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1].strip().strip("/"))
        # Keep draining stdout so streamd never blocks on it.
        threading.Thread(target=lambda: self.streamd.stdout.read(), daemon=True).start()
        self.log(f"streamd pid {self.streamd.pid} on port {self.port}")

    def url(self, port, track):
        return f"http://127.0.0.1:{port}/media/" + urllib.parse.quote(track)

    def references(self, tracks):
        """Per track: (format, length, sha256) of the PCM it must decode to."""
        refdir = os.path.join(OUT, "ref")
        os.makedirs(refdir, exist_ok=True)
        refs = {}
        for i, track in enumerate(tracks):
            src = os.path.join(MEDIA, track)
            ext = track.lower().rsplit(".", 1)[-1]
            if ext == "wav":
                how, path = "the file itself", src
            else:
                path = os.path.join(refdir, f"{i}.wav")
                if ext == "mp3":
                    how = "mpg123 -w"
                    cmd = ["mpg123", "-q", "-w", path, src]
                else:
                    how = "first clean streamplay decode"
                    cmd = [os.path.join(BIN, "streamplay"), self.url(self.port, track), "--output", f"wav:{path}"]
                run = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=PLAY_TIMEOUT)
                if run.returncode != 0:
                    raise SystemExit(f"soak: reference for {track} failed ({how}): {run.stderr.decode()[-300:]}")
            refs[track] = digest(path)
            self.log(f"reference {track}: {how}, {refs[track][1]} bytes of PCM")
        return refs

    # MARK: sampling

    def sample(self):
        now = time.time() - self.t0
        d = proc_sample(self.streamd.pid) if self.streamd and self.streamd.poll() is None else None
        ticks = cpu_ticks(self.streamd.pid) if d else None
        cpu = ""
        if ticks is not None and self.last_ticks is not None:
            cpu = round(100 * (ticks - self.last_ticks[0]) / os.sysconf("SC_CLK_TCK") / max(0.1, now - self.last_ticks[1]), 1)
        self.last_ticks = (ticks, now) if ticks is not None else None
        with self.lock:
            p = proc_sample(self.player_pid)
            row = {"t_s": round(now, 1),
                   "streamd_rss_kb": d[0] if d else "", "streamd_fds": d[1] if d else "",
                   "streamd_threads": d[2] if d else "", "streamd_cpu_pct": cpu,
                   "streamplay_pid": self.player_pid if p else "",
                   "streamplay_rss_kb": p[0] if p else "", "streamplay_fds": p[1] if p else "",
                   "streamplay_threads": p[2] if p else "",
                   "tracks_played": len(self.plays),
                   "tracks_bitexact": sum(1 for x in self.plays if x["exact"])}
            self.samples.append(row)
        path = os.path.join(OUT, "samples.csv")
        new = not os.path.exists(path)
        with open(path, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(row.keys()))
            if new:
                w.writeheader()
            w.writerow(row)
        self.write_summary()

    def sampler(self):
        next_at = time.time()
        while not self.stop_sampler.is_set():
            self.sample()
            next_at += INTERVAL
            self.stop_sampler.wait(max(0, next_at - time.time()))

    # MARK: playing

    def play(self, track, ref, cycle):
        out = os.path.join(OUT, "play.wav")
        if os.path.exists(out):
            os.remove(out)
        cmd = [os.path.join(BIN, "streamplay"), self.url(self.proxy_port, track), "--output", f"wav:{out}", "--stats",
               "--stall-timeout", "5", "--retry-for", "60"]
        started = time.time()
        err = open(os.path.join(OUT, "play.stderr"), "wb")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err)
        with self.lock:
            self.player_pid = proc.pid
        stdout = b""
        status = None
        reader = threading.Thread(target=lambda: setattr(self, "_player_out", proc.stdout.read()), daemon=True)
        reader.start()
        peak_kb = None
        while True:
            # VmHWM while it runs: wait4's ru_maxrss would carry this (forking) process's own peak.
            peak_kb = hwm_kb(proc.pid) or peak_kb
            pid, raw, _ = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                status = raw
                break
            if time.time() - started > PLAY_TIMEOUT:
                proc.kill()
                _, status, _ = os.wait4(proc.pid, 0)
                self.crashes.append(f"streamplay hung on {track} (killed after {PLAY_TIMEOUT} s)")
                break
            time.sleep(0.05)
        proc.returncode = 0   # reaped above; keep Popen from waiting again
        reader.join(5)
        err.close()
        stdout = getattr(self, "_player_out", b"") or b""
        with self.lock:
            self.player_pid = None
        signalled = os.WIFSIGNALED(status)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        stats = {}
        lines = stdout.decode(errors="replace").strip().splitlines()
        if lines:
            try:
                stats = json.loads(lines[-1])
            except ValueError:
                pass
        exact, why = False, ""
        if code == 0:
            try:
                got = digest(out)
                exact = got == ref
                if not exact:
                    why = f"got {got[0]} {got[1]} bytes, want {ref[0]} {ref[1]} bytes"
            except (OSError, ValueError) as e:
                why = str(e)
        else:
            with open(os.path.join(OUT, "play.stderr"), "rb") as f:
                why = f"exit {code}: " + f.read().decode(errors="replace").strip()[-300:]
        if signalled or code >= 128:
            self.crashes.append(f"streamplay {track}: {why}")
        if not exact and self.bad_kept < KEEP_BAD and os.path.exists(out):
            self.bad_kept += 1
            os.replace(out, os.path.join(OUT, f"bad-{self.bad_kept}.wav"))
        record = {"t_s": round(started - self.t0, 1), "track": track, "cycle": cycle, "exit": code, "exact": exact,
                  "seconds": round(time.time() - started, 2), "max_rss_kb": peak_kb,
                  "reconnects": stats.get("reconnects"), "why": why}
        with self.lock:
            self.plays.append(record)
        with open(os.path.join(OUT, "plays.jsonl"), "a") as f:
            f.write(json.dumps(record) + "\n")
        if not exact:
            self.log(f"NOT bit-exact: {track}: {why}")

    # MARK: summary

    def write_summary(self):
        with self.lock:
            samples = list(self.samples)
            plays = list(self.plays)
        lines = []
        elapsed = time.time() - self.t0
        lines.append(f"soak {'finished' if self.done else 'PARTIAL (still running)'}: {elapsed / 60:.1f} of {MINUTES:g} min, "
                     f"{LISTENERS} listeners, {SLOWLORIS} slowloris, hostile stream, proxy {PROXY_RATE // 1024} KiB/s")
        lines.append(f"crashes: {len(self.crashes)}" + "".join(f"\n  - {c}" for c in self.crashes))
        exact = sum(1 for p in plays if p["exact"])
        lines.append(f"tracks checked: {len(plays)}, bit-exact: {exact}, failed: {len(plays) - exact}, "
                     f"reconnects: {sum(p['reconnects'] or 0 for p in plays)}")
        for p in [p for p in plays if not p["exact"]][:10]:
            lines.append(f"  - {p['track']} at {p['t_s']} s: {p['why']}")
        d = [s for s in samples if s["streamd_rss_kb"] != ""]
        if d:
            # Growth is judged on the samples taken under load, after the warm-up.
            warm = [s for s in d if WARMUP <= s["t_s"] <= MINUTES * 60]
            lines.append("streamd (rss kB / fds / threads):")
            def row(name, s):
                return f"  {name:<22} {s['streamd_rss_kb']:>8} / {s['streamd_fds']:>5} / {s['streamd_threads']:>3}   (t={s['t_s']} s)"
            if self.baseline:
                lines.append(f"  {'baseline (no load)':<22} {self.baseline[0]:>8} / {self.baseline[1]:>5} / {self.baseline[2]:>3}")
            lines.append(row("first sample", d[0]))
            if warm:
                lines.append(row("after warm-up", warm[0]))
            if warm:
                lines.append(row("last under load", warm[-1]))
            lines.append(row("last sample", d[-1]))
            top = max(d, key=lambda s: s["streamd_rss_kb"])
            lines.append(f"  {'max':<22} {top['streamd_rss_kb']:>8} / {max(s['streamd_fds'] for s in d):>5} / "
                         f"{max(s['streamd_threads'] for s in d):>3}")
            if len(warm) >= 2:
                growth = warm[-1]["streamd_rss_kb"] - warm[0]["streamd_rss_kb"]
                n = min(6, len(warm) // 2)
                smooth = (statistics.median(s["streamd_rss_kb"] for s in warm[-n:])
                          - statistics.median(s["streamd_rss_kb"] for s in warm[:n]))
                lines.append(f"  RSS growth after warm-up ({WARMUP / 60:g} min): {growth:+d} kB last-first, "
                             f"{smooth:+.0f} kB median of the last {n} vs first {n} samples (goal <= 1024 kB)")
            if self.after:
                lines.append(f"  {'after the load stopped':<22} {self.after[0]:>8} / {self.after[1]:>5} / {self.after[2]:>3}")
                if self.baseline:
                    lines.append(f"  fds after load vs baseline: {self.after[1]} vs {self.baseline[1]} "
                                 f"({'back to baseline' if self.after[1] <= self.baseline[1] else 'NOT back'})")
        cpu = [s["streamd_cpu_pct"] for s in samples if s.get("streamd_cpu_pct", "") != ""]
        if cpu:
            lines.append(f"streamd CPU % of one core: median {statistics.median(cpu):.1f}, max {max(cpu):.1f}")
        p = [s for s in samples if s["streamplay_rss_kb"] != ""]
        if p:
            lines.append(f"streamplay samples ({len(p)}, one process per track): rss kB min/max "
                         f"{min(s['streamplay_rss_kb'] for s in p)}/{max(s['streamplay_rss_kb'] for s in p)}, "
                         f"fds max {max(s['streamplay_fds'] for s in p)}, threads max {max(s['streamplay_threads'] for s in p)}")
        # streamplay per track: peak RSS of its first run after warm-up vs its last run.
        deltas = []
        for track in sorted({x["track"] for x in plays}):
            runs = [x for x in plays if x["track"] == track and x["t_s"] >= WARMUP and x["max_rss_kb"]]
            if len(runs) >= 2:
                deltas.append((runs[-1]["max_rss_kb"] - runs[0]["max_rss_kb"], track))
        if deltas:
            worst = max(deltas)
            lines.append(f"streamplay peak RSS, last vs first run after warm-up, same track: worst {worst[0]:+d} kB ({worst[1]})")
        for name in ("load", "hostile", "proxy"):
            path = os.path.join(OUT, f"{name}-stats.json")
            if os.path.exists(path):
                try:
                    with open(path) as f:
                        stats = json.load(f)
                    if name in ("load", "hostile"):
                        stats = {k: v for k, v in stats.items() if k.startswith("hostile_") == (name == "hostile")}
                    if name == "hostile":
                        statuses = stats.pop("hostile_status", {})
                        by_status = {}
                        for key, n in statuses.items():
                            by_status[key.rsplit(":", 1)[1]] = by_status.get(key.rsplit(":", 1)[1], 0) + n
                        stats["hostile_by_status"] = dict(sorted(by_status.items()))
                    lines.append(f"{name}: " + json.dumps(stats))
                except ValueError:
                    pass
        text = "\n".join(lines) + "\n"
        with open(os.path.join(OUT, "summary.txt.tmp"), "w") as f:
            f.write(text)
        os.replace(os.path.join(OUT, "summary.txt.tmp"), os.path.join(OUT, "summary.txt"))
        return text

    # MARK: the run

    def run(self):
        tracks = self.tracks()
        if not tracks:
            raise SystemExit(f"soak: no tracks under {MEDIA} (run make media)")
        self.start_streamd()
        refs = self.references(tracks)
        with open(os.path.join(OUT, "tracks.txt"), "w") as f:
            f.write("\n".join(tracks) + "\n")
        time.sleep(1)
        self.baseline = proc_sample(self.streamd.pid)
        self.log(f"streamd baseline rss {self.baseline[0]} kB, {self.baseline[1]} fds, {self.baseline[2]} threads")
        # The clock starts now: references do not count against the duration.
        self.t0 = time.time()
        self.deadline = self.t0 + MINUTES * 60
        here = os.path.dirname(os.path.abspath(__file__))
        port_file = os.path.join(OUT, "proxy.port")
        proxy = subprocess.Popen([sys.executable, os.path.join(here, "soak_proxy.py"), "--upstream-port", str(self.port),
                                  "--port-file", port_file, "--stats", os.path.join(OUT, "proxy-stats.json"),
                                  "--rate", str(PROXY_RATE), "--deadline", str(self.deadline + 30)])
        load = subprocess.Popen([sys.executable, os.path.join(here, "soak_load.py"), "--port", str(self.port),
                                 "--tracks", os.path.join(OUT, "tracks.txt"), "--listeners", str(LISTENERS),
                                 "--slowloris", str(SLOWLORIS), "--deadline", str(self.deadline),
                                 "--stats", os.path.join(OUT, "load-stats.json")])
        hostile = subprocess.Popen([sys.executable, os.path.join(here, "soak_load.py"), "--port", str(self.port),
                                    "--tracks", os.path.join(OUT, "tracks.txt"), "--hostile-only",
                                    "--deadline", str(self.deadline), "--stats", os.path.join(OUT, "hostile-stats.json")])
        for _ in range(100):
            if os.path.exists(port_file):
                break
            time.sleep(0.1)
        with open(port_file) as f:
            self.proxy_port = int(f.read())
        self.log(f"proxy on port {self.proxy_port}, load pid {load.pid}; playing until the deadline")
        sampler = threading.Thread(target=self.sampler, daemon=True)
        sampler.start()
        cycle = 0
        while time.time() < self.deadline and self.streamd.poll() is None:
            for track in tracks:
                if time.time() >= self.deadline or self.streamd.poll() is not None:
                    break
                self.play(track, refs[track], cycle)
            cycle += 1
        if self.streamd.poll() is not None:
            code = self.streamd.returncode
            self.crashes.append(f"streamd exited with {code} at t={time.time() - self.t0:.0f} s")
            self.log(f"streamd died: {code}")
        # Let the load finish (every loop ends at the deadline), then see the descriptors fall back.
        for helper in (load, hostile):
            try:
                helper.wait(timeout=60)
            except subprocess.TimeoutExpired:
                helper.kill()
        proxy.terminate()
        proxy.wait()
        if self.streamd.poll() is None:
            for _ in range(30):
                self.after = proc_sample(self.streamd.pid)
                if self.after and self.baseline and self.after[1] <= self.baseline[1]:
                    break
                time.sleep(1)
        self.stop_sampler.set()
        sampler.join()
        if self.streamd.poll() is None:
            self.streamd.send_signal(signal.SIGTERM)
            try:
                code = self.streamd.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.streamd.kill()
                code = "killed after 15 s"
                self.crashes.append("streamd did not stop within 15 s of SIGTERM")
            if code != 0:
                self.crashes.append(f"streamd exit status after SIGTERM: {code}")
        self.done = True
        text = self.write_summary()
        print(text, end="")
        ok = (not self.crashes and self.plays and all(p["exact"] for p in self.plays)
              and self.after and self.baseline and self.after[1] <= self.baseline[1])
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(Soak().run())
