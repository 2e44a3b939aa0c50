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
    out continuously for --frame-seconds: the four views' drawing p95 <= 4 ms a frame; the p95 of
    requestAnimationFrame intervals is printed (<= 16.7 ms required with --strict-frames).
--controls ALBUM,GAIN_ALBUM  queue panel (reorder, play next, remove), shuffle/repeat, keys
    (n, p, space, arrows), Media Session metadata, position across a reload, ReplayGain.
--waveform ALBUM  the seek bar and the next tracks' bars draw /api/waveform's pairs; zoom asks
    for the view's own; a click seeks (needs the /api/waveform route; --screenshot saves the page).
--axe  axe-core (axe-selenium-python): no serious or critical violation; controls in the tab
    order with a focus outline; HTML+JS+CSS under 200 KB; no request to another origin.
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
    wait(driver, "document.getElementById('range').textContent !== ''", 20)


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


def capture_album(driver, base, album, rate, page_rate=None):
    """Plays `album` (an /api/albums item) from its card's play button; returns (samples, first-sound ms, ended).
    With `page_rate` (other than `rate`) the page's context runs at that rate and the capture is of
    the Web Audio output of `rate` (`player.pcmOutput(rate)`), where a queue of that rate plays."""
    driver.execute_async_script("""
        const [source, rate, pageRate, done] = arguments;
        const player = window.streamPage.player;
        if (player.context && player.context.sampleRate !== pageRate) { done('context at ' + player.context.sampleRate); return; }
        player.contextOptions = { latencyHint: 'playback', sampleRate: pageRate };
        player.graph();
        const output = pageRate === rate ? { context: player.context, gain: player.gain } : player.pcmOutput(rate);
        const context = output.context;
        (async () => {
          if (!window.__recorder) {
            const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
            await context.audioWorklet.addModule(url);
            const node = new AudioWorkletNode(context, 'recorder', { numberOfInputs: 1, numberOfOutputs: 0,
                                                                  channelCount: 2, channelCountMode: 'explicit' });
            output.gain.connect(node);
            window.__recorder = node;
            node.port.onmessage = event => window.__captured.push(event.data);
          }
          window.__captured = [];
          done(null);
        })();
        """, RECORDER, rate, page_rate or rate)
    # What the recorder still holds from before (a paused replay) is flushed and dropped.
    driver.execute_script("window.streamPage.player.pause(); window.__recorder.port.postMessage('flush')")
    time.sleep(0.4)
    first = get_json(base, f"/api/albums/{album['id']}")["tracks"][0]["path"]
    # The card's play button: the album opens and plays from one click.
    driver.execute_script("window.__captured = []; document.querySelector(`.album[data-id='%d'] .play-album`).click()" % album["id"])
    started = wait(driver, f"document.body.dataset.playing === {json.dumps(first)} && !window.streamPage.player.ended"
                           " && window.streamPage.player.position > 0", 10)
    check(bool(started), f"{album['title']}: its play button starts it")
    web = driver.execute_script("return window.streamPage.player.webAudio")
    total = album["duration_s"]
    ended = wait(driver, "window.streamPage.player.ended", total + 20, 0.1)
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
    return samples, first_sound, bool(ended), bool(web)


def seek_pause(driver, base, title):
    """In a queue that plays through Web Audio: pause holds the position, play goes on from it,
    a seek lands where asked, 'n' plays the next track, and the Media Session names the track."""
    albums = get_json(base, "/api/albums?offset=0&limit=1000")
    album = next(a for a in albums if a["title"] == title)
    tracks = get_json(base, f"/api/albums/{album['id']}")["tracks"]
    open_page(driver, base)
    driver.execute_script("document.querySelector(`.album[data-id='%d'] .play-album`).click()" % album["id"])
    check(bool(wait(driver, "window.streamPage.player.webAudio && window.streamPage.player.position > 0.5", 10)),
          f"{title}: plays through Web Audio")
    driver.execute_script("window.streamPage.player.pause()")
    held = driver.execute_script("return window.streamPage.player.position")
    time.sleep(0.4)
    later = driver.execute_script("return [window.streamPage.player.position, window.streamPage.player.paused]")
    check(later[1] and abs(later[0] - held) < 0.01, f"pause holds the position ({held:.3f} s, then {later[0]:.3f} s)")
    driver.execute_script("window.streamPage.player.toggle()")
    check(bool(wait(driver, f"window.streamPage.player.position > {held + 0.2}", 5)), "play goes on from there")
    driver.execute_script("window.streamPage.player.seek(0.25)")
    landed = wait(driver, "window.streamPage.player.position > 0.25 ? window.streamPage.player.position : 0", 5)
    check(bool(landed) and landed < 0.6, f"a seek to 0.25 s plays from {landed or 0:.3f} s")
    driver.execute_script("window.streamPage.player.seek(%f)" % (tracks[0]["duration_s"] - 0.3))
    check(bool(wait(driver, f"document.body.dataset.playing === {json.dumps(tracks[1]['path'])}", 5)),
          "a seek near the end plays on into the next track")
    metadata = driver.execute_script("return navigator.mediaSession.metadata && navigator.mediaSession.metadata.title")
    check(metadata == tracks[1]["title"], f"the Media Session names it: {metadata}")
    driver.find_element(By.TAG_NAME, "body").send_keys("n")
    check(bool(wait(driver, f"document.body.dataset.playing === {json.dumps(tracks[2]['path'])} && window.streamPage.player.position > 0.1", 5)),
          "'n' plays the track after it")
    driver.execute_script("window.streamPage.player.pause()")


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

    if onset + sum(track_frames) + 2 * window > len(samples):
        return None
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


def reference_join_step(library, tracks, frames, rate):
    """The largest sample step around the joins of ffmpeg's decode of the tracks (channel 0),
    each cut to its catalog length after the delay ffmpeg itself trims (LAME tag, MP4 edit)."""
    import subprocess
    parts = []
    for track, count in zip(tracks, frames):
        raw = subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-i", f"{library}/{track['path']}",
                              "-af", "pan=mono|c0=c0", "-ar", str(rate), "-f", "f32le", "-"], capture_output=True, check=True).stdout
        parts.append(np.frombuffer(raw, dtype=np.float32).astype(np.float64)[:count])
    joined = np.abs(np.diff(np.concatenate(parts)))
    window, at, largest = int(rate * 0.02), 0, 0.0
    for count in frames[:-1]:
        at += count
        largest = max(largest, float(joined[max(0, at - window): at + window].max()))
    return largest


def gapless(driver, base, titles, args):
    albums = get_json(base, "/api/albums?offset=0&limit=1000")
    rate = args.rate
    open_page(driver, base)
    for title in titles:
        album = next((a for a in albums if a["title"] == title), None)
        if not check(album is not None, f"album '{title}' in the catalog"):
            continue
        detail = get_json(base, f"/api/albums/{album['id']}")
        # In samples of the capture (the context's rate: --rate, the tracks' rate by default).
        frames = [round(t["duration_s"] * (rate or t["sample_rate"])) for t in detail["tracks"]]
        # The track items carry the gapless values /api/index has (the first play needs no index).
        for t in detail["tracks"]:
            index = get_json(base, "/api/index/" + t["url"][len("/media/"):])
            item_frames = t.get("total_samples", 0) - t.get("encoder_delay", 0) - t.get("encoder_padding", 0)
            check(t.get("encoder_delay") == index["encoder_delay"] and t.get("first_frame_offset") == index["first_frame_offset"]
                  and abs(item_frames - index["duration_s"] * index["sample_rate"]) < 1,
                  f"{title}: {t['path']} item's gapless values (delay {t.get('encoder_delay')}, {item_frames} samples, "
                  f"audio at {t.get('first_frame_offset')}) are /api/index's ({index['encoder_delay']}, "
                  f"{index['duration_s'] * index['sample_rate']:.1f}, {index['first_frame_offset']})")
        samples, first_sound, ended, web = capture_album(driver, base, album, rate, args.page_rate)
        check(web == args.web_audio, f"{title}: plays through {'Web Audio' if web else 'MSE'}")
        notes = driver.execute_script("return window.streamPage.player.notes.splice(0)")
        if notes:
            print(f"info {title}: player notes {notes}")
        check(ended, f"{title}: the element played to its end ({len(samples)} samples captured)")
        result = analyze(samples, rate, frames, args.tone_hz, args.tone_amp)
        if not check(result is not None, f"{title}: the capture holds the tone"):
            continue
        expected = sum(frames)
        slack = int(rate * 0.001) * (len(frames) - 1) + 2
        check(abs(result["length"] - expected) <= slack,
              f"{title}: sound lasts {result['length']} samples, tracks sum to {expected} (diff {result['length'] - expected}, "
              f"allowed {slack})")
        gaps = [round(float(g), 1) for g in result["gaps"]]
        check(all(abs(g) <= rate * 0.001 for g in result["gaps"]), f"{title}: join gaps in samples {gaps} (goal 0, within 1 ms)")
        print(f"figure gapless {title} join_gaps_samples={gaps}")
        # A lossy codec's own transients at a cut (each track was encoded alone) are in any
        # decoder's output: the bound is ffmpeg's decode of the same tracks joined at the same
        # samples, or the tone's own step where that decode has none larger (FLAC).
        reference = reference_join_step(args.library, detail["tracks"], frames, rate) if args.library else 0.0
        bound = max(result["step_elsewhere"], reference) * 1.05 + 1e-4
        check(result["step_joins"] <= bound,
              f"{title}: largest sample step at the joins {result['step_joins']:.4f}; elsewhere {result['step_elsewhere']:.4f}, "
              f"ffmpeg's joined decode at the joins {reference:.4f} (no click)")
        # The first play of a track in streamd's run waits for its exact seek index (/api/index,
        # built once by a worker: 0.1-0.4 s, more on a loaded machine): a figure. The budget is
        # for a click once the server knows the tracks, as it does after any earlier play.
        print(f"figure first_sound_ms {title} first_play_of_the_run={first_sound}")
        driver.execute_script("delete document.body.dataset.firstSoundMs;"
                              "document.querySelector(`.album[data-id='%d'] .play-album`).click()" % album["id"])
        warm = wait(driver, "Number(document.body.dataset.firstSoundMs || 0)", 10)
        driver.execute_script("window.streamPage.player.pause()")
        print(f"figure first_sound_ms {title} again={warm}")
        check(bool(warm) and 0 < warm <= args.first_sound_ms,
              f"{title}: first sound {warm} ms after the click on the album's play button (budget {args.first_sound_ms} ms; "
              f"{first_sound} ms the first time in the server's run)")
        if args.save:
            samples.astype(np.float32).tofile(f"{args.save}-{title.replace(' ', '_')}.f32")
        driver.execute_script("window.streamPage.player.pause()")


def peer(driver, base, titles, args):
    """The peer for the join figures: the page's former player, one <audio> per track switched at
    `ended`, captured the same way (its own AudioContext and recorder in the page)."""
    albums = get_json(base, "/api/albums?offset=0&limit=1000")
    open_page(driver, base)
    for title in titles:
        album = next((a for a in albums if a["title"] == title), None)
        if album is None:
            continue
        tracks = get_json(base, f"/api/albums/{album['id']}")["tracks"]
        frames = [round(t["duration_s"] * t["sample_rate"]) for t in tracks]
        encoded = driver.execute_async_script("""
            const [urls, rate, source, total, done] = arguments;
            (async () => {
              const context = new AudioContext({ sampleRate: rate, latencyHint: 'playback' });
              await context.audioWorklet.addModule(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
              const audio = new Audio();
              const node = new AudioWorkletNode(context, 'recorder', { numberOfInputs: 1, numberOfOutputs: 0,
                                                                    channelCount: 2, channelCountMode: 'explicit' });
              context.createMediaElementSource(audio).connect(node);
              const parts = [];
              node.port.onmessage = event => parts.push(event.data);
              let i = 0;
              audio.addEventListener('ended', () => {
                if (++i < urls.length) { audio.src = urls[i]; audio.play(); return; }
                setTimeout(() => { node.port.postMessage('flush'); setTimeout(() => {
                  const length = parts.reduce((n, p) => n + p.length, 0), all = new Float32Array(length); let at = 0;
                  for (const p of parts) { all.set(p, at); at += p.length; }
                  const bytes = new Uint8Array(all.buffer); let text = '';
                  for (let k = 0; k < bytes.length; k += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(k, k + 0x8000));
                  context.close(); done(btoa(text)); }, 300); }, 300);
              });
              audio.src = urls[0]; audio.play();
            })();
            """, [t["url"] for t in tracks], args.rate, RECORDER, album["duration_s"])
        samples = np.frombuffer(base64.b64decode(encoded), dtype=np.float32).astype(np.float64)
        result = analyze(samples, args.rate, frames, args.tone_hz, args.tone_amp)
        if result is None:
            print(f"figure peer {title} no sound captured")
            continue
        extra = result["length"] - sum(frames)
        print(f"figure peer_one_audio_per_track {title} sound_length_minus_tracks={extra} samples over {len(frames) - 1} joins "
              f"({extra / max(1, len(frames) - 1) / args.rate * 1000:.1f} ms a join)")


def frames(driver, base, counts, seconds, strict):
    open_page(driver, base)
    for count in counts:
        # Synthetic pairs for a one-hour track: the test measures drawing, the server's data
        # comes from /api/waveform (tested by the waveform route's own tests).
        stats = driver.execute_async_script("""
            const [count, seconds, done] = arguments;
            const waves = window.streamPage.waves;
            const duration = 3600, width = waves[0].width();
            const pairs = count * 16, data = new Int16Array(pairs * 2);
            for (let i = 0; i < pairs; i++) { const v = Math.round(20000 * Math.abs(Math.sin(i / 50)) * (0.5 + 0.5 * Math.sin(i / 3000)));
                                              data[2 * i] = -v; data[2 * i + 1] = v; }
            const response = { from: 0, to: duration, sample_rate: 44100, samples_per_pair: 256, complete: true, data };
            waves.forEach((view, i) => {
              view.canvas.hidden = false;
              view.setTrack({ id: 'synthetic-' + i, title: 'synthetic', duration_s: duration });
              view.generation++;     // no request for the synthetic track
              view.setData('overview', response);
              view.setView(0, duration / 16);
              view.setPosition(duration / 32);
            });
            const intervals = [], visible = [], work = [], busy = [];
            // The main thread's whole part of a frame: from the frame's callback to the first task
            // after it, which runs once the frame's style, layout, paint and canvas flush are done.
            const channel = new MessageChannel();
            let frameStart = 0;
            channel.port1.onmessage = () => busy.push(performance.now() - frameStart);
            // The drawing's own time each frame, beside the frame intervals.
            const draws = waves.map(view => view.draw);
            waves.forEach((view, i) => { view.draw = function () { const t0 = performance.now(); draws[i].call(view);
                                                                   work.push(performance.now() - t0); }; });
            let last = performance.now(), start = last, zoomIn = true, factor = 1.0;
            function frame(now) {
              intervals.push(now - last); last = now;
              frameStart = performance.now(); channel.port2.postMessage(0);
              // Continuous zoom: in to a quarter of the view and back, around the middle.
              factor = zoomIn ? 1.02 : 1 / 1.02;
              waves.forEach(view => view.zoom(factor));
              const span = waves[0].to - waves[0].from;
              if (span <= duration / 16) zoomIn = false; else if (span >= duration / 8) zoomIn = true;
              visible.push(waves.reduce((n, v) => n + (v.visiblePairs || 0), 0) / waves.length);
              if (now - start < seconds * 1000) requestAnimationFrame(frame);
              else { waves.forEach((view, i) => { view.draw = draws[i]; }); done({ intervals: intervals.slice(3), visible, work, busy: busy.slice(3) }); }
            }
            requestAnimationFrame(frame);
            """, count, seconds)
        intervals = np.array(stats["intervals"])
        visible = np.array(stats["visible"])
        p95 = float(np.percentile(intervals, 95))
        work = np.array(stats["work"]) * 4     # four views drawn a frame
        work_p95 = float(np.percentile(work, 95)) if len(work) else -1
        busy = np.array(stats["busy"])
        busy_p95 = float(np.percentile(busy, 95)) if len(busy) else -1
        shown = driver.execute_script("return window.streamPage.waves.filter(v => !v.canvas.hidden && v.canvas.clientHeight > 0).length")
        check(shown == 4, f"{shown} waveforms on screen")
        print(f"figure frame_p95_ms visible_pairs~{count} p95={p95:.2f} median={float(np.median(intervals)):.2f} "
              f"frames={len(intervals)} visible_pairs_median={float(np.median(visible)):.0f} min={float(visible.min()):.0f} "
              f"max={float(visible.max()):.0f} draw_4_views_p95_ms={work_p95:.2f} main_thread_frame_p95_ms={busy_p95:.2f}")
        # The page's part of a frame: drawing the four views, under a quarter of the 16.7 ms budget.
        check(0 <= work_p95 <= 4.0, f"zoom with {float(visible.min()):.0f}-{float(visible.max()):.0f} visible pairs a waveform: "
                                    f"p95 drawing time of the four views {work_p95:.2f} ms a frame (<= 4 ms)")
        # performance.now() is coarsened to 0.1 ms (no cross-origin isolation): a 16.67 ms frame
        # reads 16.6 to 16.8, a dropped one 33.3. On a machine shared with other builds a frame is
        # dropped when the renderer is not scheduled, whatever the page draws: the interval is a
        # figure, and a check only with --strict-frames (bench/page.sh, on a quiet machine).
        if strict:
            check(p95 <= 16.7 + 0.15, f"zoom with {float(visible.min()):.0f}-{float(visible.max()):.0f} visible pairs a waveform: "
                                      f"p95 frame interval {p95:.2f} ms (<= 16.7 ms)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--gapless")
    parser.add_argument("--rate", type=int, default=44100)
    parser.add_argument("--tone-hz", type=float, default=210.0)
    parser.add_argument("--tone-amp", type=float, default=0.5)
    parser.add_argument("--first-sound-ms", type=float, default=300)
    parser.add_argument("--save")
    parser.add_argument("--library", help="the music folder, for ffmpeg's reference decode of the tracks")
    parser.add_argument("--peer", help="ALBUM,...: the joins of one <audio> per track switched at 'ended' (figures only)")
    parser.add_argument("--frames")
    parser.add_argument("--frame-seconds", type=float, default=10)
    parser.add_argument("--strict-frames", action="store_true", help="also require the p95 frame interval <= 16.7 ms")
    parser.add_argument("--page-rate", type=int, help="the page's AudioContext rate when it is not --rate (Web Audio albums)")
    parser.add_argument("--web-audio", action="store_true", help="the --gapless albums must play through Web Audio (else MSE)")
    parser.add_argument("--seek-pause", help="ALBUM: pause, play, seek and next in a Web Audio queue")
    parser.add_argument("--controls", help="ALBUM,GAIN_ALBUM: an album of 3 tracks, an album whose track has ReplayGain tags")
    parser.add_argument("--axe", action="store_true")
    parser.add_argument("--waveform", help="ALBUM: the seek bar draws /api/waveform (with the waveform route)")
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    base = args.base.rstrip("/")
    driver = browser()
    try:
        if args.gapless:
            gapless(driver, base, args.gapless.split(","), args)
        if args.peer:
            peer(driver, base, args.peer.split(","), args)
        if args.frames:
            frames(driver, base, [int(n) for n in args.frames.split(",")], args.frame_seconds, args.strict_frames)
        if args.seek_pause:
            seek_pause(driver, base, args.seek_pause)
        if args.controls:
            controls(driver, base, *args.controls.split(","))
        if args.axe:
            axe(driver, base)
        if args.waveform:
            waveform(driver, base, args.waveform, args.screenshot)
        elif args.screenshot:
            driver.save_screenshot(args.screenshot)
    finally:
        driver.quit()
    print(f"{PASSED[0]} passed, {FAILED[0]} failed")
    return 0 if FAILED[0] == 0 else 1


def playing(driver):
    return driver.execute_script("return document.body.dataset.playing || null")


def queue_paths(driver):
    return driver.execute_script("return Array.from(document.querySelectorAll('#queue .queued')).map(li => li.dataset.path)")


def controls(driver, base, album_title, gain_title):
    """The queue panel, keys, shuffle/repeat, Media Session, ReplayGain and the position across a reload."""
    albums = get_json(base, "/api/albums?offset=0&limit=1000")
    album = next(a for a in albums if a["title"] == album_title)
    tracks = get_json(base, f"/api/albums/{album['id']}")["tracks"]
    paths = [t["path"] for t in tracks]
    open_page(driver, base)
    driver.execute_script("document.querySelector(`.album[data-id='%d']`).click()" % album["id"])
    wait(driver, "!document.getElementById('play-all').disabled", 10)
    driver.find_element(By.ID, "play-all").click()
    check(wait(driver, f"document.body.dataset.playing === {json.dumps(paths[0])} && !window.streamPage.player.paused", 10),
          f"'Play all' plays {paths[0]}")
    check(queue_paths(driver) == paths, f"the queue panel lists the album in order: {queue_paths(driver)}")
    session = driver.execute_script("""const m = navigator.mediaSession.metadata;
        return m ? {title: m.title, artist: m.artist, album: m.album, artwork: m.artwork.map(a => a.src)} : null""")
    want = tracks[0]
    check(session is not None and session["title"] == want["title"] and session["artist"] == want["artist"]
          and session["album"] == want["album"]
          and [src.split("/api/cover/", 1)[-1] for src in session["artwork"]] == [f"{want['album_id']}?size={n}" for n in (96, 256, 512)],
          f"Media Session metadata: {session}")
    body = driver.find_element(By.TAG_NAME, "body")
    body.send_keys("n")
    check(wait(driver, f"document.body.dataset.playing === {json.dumps(paths[1])}", 5), f"'n' plays the next track: {playing(driver)}")
    body.send_keys("p")
    check(wait(driver, f"document.body.dataset.playing === {json.dumps(paths[0])}", 5), f"'p' plays the previous track: {playing(driver)}")
    body.send_keys(" ")
    check(wait(driver, "window.streamPage.player.paused", 5), "space pauses")
    body.send_keys(" ")
    check(wait(driver, "!window.streamPage.player.paused", 5), "space plays again")
    wait(driver, "window.streamPage.player.position > 0.6", 5)
    body.send_keys(Keys.ARROW_LEFT)
    check(wait(driver, "window.streamPage.player.position < 0.5", 5),
          f"left arrow seeks back: {driver.execute_script('return window.streamPage.player.position'):.2f} s")
    # Queue edits: the last track up one, then "play next", then removed.
    driver.execute_script("document.querySelectorAll('#queue .queued')[2].querySelector('[aria-label^=\"Move up\"]').click()")
    check(queue_paths(driver) == [paths[0], paths[2], paths[1]], f"move up reorders the queue: {queue_paths(driver)}")
    driver.execute_script("document.querySelectorAll('#queue .queued')[2].querySelector('[aria-label^=\"Play next\"]').click()")
    check(queue_paths(driver) == [paths[0], paths[1], paths[2]], f"play next puts it after the playing track: {queue_paths(driver)}")
    driver.execute_script("document.querySelectorAll('#queue .queued')[1].querySelector('[aria-label^=\"Remove\"]').click()")
    check(queue_paths(driver) == [paths[0], paths[2]], f"remove takes it out: {queue_paths(driver)}")
    # After the edits the next track to play is the queue's, not the one appended before them.
    body.send_keys("n")
    check(wait(driver, f"document.body.dataset.playing === {json.dumps(paths[2])}", 5), f"next after the edits: {playing(driver)}")
    driver.find_element(By.ID, "shuffle").click()
    check(driver.find_element(By.ID, "shuffle").get_attribute("aria-pressed") == "true"
          and sorted(queue_paths(driver)) == sorted([paths[0], paths[2]]), "shuffle on: the same tracks, pressed")
    driver.find_element(By.ID, "shuffle").click()
    driver.find_element(By.ID, "repeat").click()
    check(driver.execute_script("return window.streamPage.player.repeat") == "all", "repeat cycles to 'all'")
    driver.find_element(By.ID, "repeat").click()
    driver.find_element(By.ID, "repeat").click()
    # The position survives a reload.
    wait(driver, "window.streamPage.player.position > 0.5", 5)
    driver.execute_script("window.streamPage.player.pause(); window.streamPage.save()")
    before = driver.execute_script("return [document.body.dataset.playing, window.streamPage.player.position]")
    driver.refresh()
    wait(driver, "document.querySelectorAll('#queue .queued').length > 0", 10)
    after = driver.execute_script("return [window.streamPage.player.track && window.streamPage.player.track.path, window.streamPage.player.position]")
    check(after[0] == before[0] and abs(after[1] - before[1]) < 0.3, f"after a reload the queue is back at {after} (saved {before})")
    driver.find_element(By.ID, "toggle").click()
    resumed = wait(driver, "!window.streamPage.player.paused && window.streamPage.player.position > 0 ? window.streamPage.player.position : 0", 10)
    check(bool(resumed) and resumed >= before[1] - 0.3, f"play resumes at {resumed or 0:.2f} s (saved {before[1]:.2f} s)")
    # ReplayGain: the album's gain from the catalog, under 1/peak.
    gain_album = next(a for a in albums if a["title"] == gain_title)
    gain_track = get_json(base, f"/api/albums/{gain_album['id']}")["tracks"][0]
    driver.execute_script("document.querySelector(`.album[data-id='%d']`).click()" % gain_album["id"])
    wait(driver, f"document.getElementById('heading').textContent.startsWith({json.dumps(gain_title)})", 10)
    driver.find_element(By.ID, "play-all").click()
    wait(driver, f"document.body.dataset.playing === {json.dumps(gain_track['path'])}", 10)
    expected = min(10 ** (gain_track["rg_album_gain"] / 20), 1 / gain_track["rg_album_peak"])
    value = wait(driver, "window.streamPage.player.gain && Math.abs(window.streamPage.player.gain.gain.value - %f) < 0.001 "
                         "? window.streamPage.player.gain.gain.value : 0" % expected, 5)
    check(bool(value), f"ReplayGain: album gain {gain_track['rg_album_gain']} dB, peak {gain_track['rg_album_peak']}: "
                       f"gain node at {value or 0:.4f} (expected {expected:.4f})")
    driver.execute_script("window.streamPage.player.pause()")


def waveform(driver, base, album_title, screenshot):
    """The seek bar draws /api/waveform's pairs for the playing track and the queue's next ones;
    zooming asks for the view's own pairs; a click seeks."""
    albums = get_json(base, "/api/albums?offset=0&limit=1000")
    album = next(a for a in albums if a["title"] == album_title)
    tracks = get_json(base, f"/api/albums/{album['id']}")["tracks"]
    open_page(driver, base)
    driver.execute_script("""
        window.__waveformAnswers = [];
        const fetched = window.fetch;
        window.fetch = async (...args) => {
          const response = await fetched(...args);
          if (String(args[0]).startsWith('/api/waveform/'))
            response.clone().json().then(b => window.__waveformAnswers.push([String(args[0]), response.status, b.complete, (b.data || []).length / 2]))
                            .catch(() => window.__waveformAnswers.push([String(args[0]), response.status, null, 0]));
          return response;
        };""")
    driver.execute_script("document.querySelector(`.album[data-id='%d']`).click()" % album["id"])
    wait(driver, "!document.getElementById('play-all').disabled", 10)
    driver.find_element(By.ID, "play-all").click()
    drawn = wait(driver, "window.streamPage.waves[0].visiblePairs > 0 && window.streamPage.waves[0].overview.complete !== false"
                         " ? window.streamPage.waves[0].visiblePairs : 0", 20)
    answers = driver.execute_script("return window.__waveformAnswers")
    check(bool(drawn), f"the seek bar draws {drawn or 0} pairs of track {tracks[0]['id']} ({len(answers)} answers: {answers[:4]})")
    print(f"info partial answers while computing: {sum(1 for a in answers if a[2] is False)}")
    if len(tracks) > 1:
        nexts = wait(driver, "window.streamPage.waves[1].visiblePairs > 0 ? window.streamPage.waves[1].visiblePairs : 0", 10)
        check(bool(nexts), f"the next track's waveform draws {nexts or 0} pairs")
    driver.execute_script("window.streamPage.player.pause()")
    driver.find_element(By.TAG_NAME, "body").send_keys("+")
    driver.find_element(By.TAG_NAME, "body").send_keys("+")
    detail = wait(driver, "window.streamPage.waves[0].detail ? [window.streamPage.waves[0].detail.from, window.streamPage.waves[0].detail.to,"
                          " window.streamPage.waves[0].visiblePairs] : null", 5)
    view = driver.execute_script("return [window.streamPage.waves[0].from, window.streamPage.waves[0].to]")
    check(bool(detail) and view[1] - view[0] < tracks[0]["duration_s"] * 0.5,
          f"zoomed to {view[0]:.2f}-{view[1]:.2f} s: the view's own pairs were asked for ({detail})")
    driver.find_element(By.ID, "zoom-out").click(); driver.find_element(By.ID, "zoom-out").click()
    driver.find_element(By.ID, "zoom-out").click()
    driver.execute_script("""const view = window.streamPage.waves[0]; view.setView(0, view.duration);""")
    canvas = driver.find_element(By.CSS_SELECTOR, "canvas.wave")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(driver).move_to_element_with_offset(canvas, 0, 0).click().perform()
    position = wait(driver, "Math.abs(window.streamPage.player.position - window.streamPage.player.track.duration_s / 2) < 0.3"
                            " ? window.streamPage.player.position : 0", 10)
    check(bool(position), f"a click in the middle of the seek bar seeks to {position or 0:.2f} s of {tracks[0]['duration_s']:.2f} s")
    if screenshot:
        driver.execute_script("window.streamPage.player.resume()")
        time.sleep(1.5)
        driver.save_screenshot(screenshot)


def axe(driver, base):
    """axe-core on the page with an album open and the queue filled: no serious or critical violation."""
    from axe_selenium_python import Axe
    open_page(driver, base)
    driver.execute_script("document.querySelector('.album').click()")
    wait(driver, "document.querySelectorAll('#rows .track').length > 0", 10)
    driver.find_element(By.ID, "queue-all").click()
    wait(driver, "document.querySelectorAll('#queue .queued').length > 0", 5)
    page = Axe(driver)
    page.inject()
    results = page.run()
    bad = [v for v in results["violations"] if v.get("impact") in ("serious", "critical")]
    for violation in results["violations"]:
        print(f"info axe {violation['impact']}: {violation['id']} ({len(violation['nodes'])} nodes): {violation['help']}: "
              f"{[n['target'] for n in violation['nodes'][:3]]}")
    check(not bad, f"axe-core: {len(results['violations'])} violations, {len(bad)} serious or critical "
                   f"({', '.join(v['id'] for v in bad)}); {len(results['passes'])} rules pass")
    # Every control is reachable with Tab and shows a focus ring.
    unreachable = driver.execute_script("""
        return Array.from(document.querySelectorAll('button:not([disabled]):not([hidden]), select, input, [role=button], canvas[tabindex="0"]'))
          .filter(el => el.offsetParent !== null && el.tabIndex < 0).map(el => el.id || el.textContent)""")
    check(not unreachable, f"every visible control is in the tab order ({unreachable})")
    driver.execute_script("document.getElementById('q').focus()")
    outlines = []
    for _ in range(6):
        driver.switch_to.active_element.send_keys(Keys.TAB)
        outlines.append(driver.execute_script("""const e = document.activeElement, s = getComputedStyle(e);
            return [e.id || e.className || e.tagName, s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2]"""))
    check(all(ok for _, ok in outlines), f"each control reached with Tab shows an outline of at least 2 px: {outlines}")
    sizes = {}
    for name in ("/", "/web/app.js", "/web/player.js", "/web/waveform.js", "/web/style.css"):
        sizes[name] = len(urllib.request.urlopen(base + name, timeout=30).read())
    total = sum(sizes.values())
    check(total < 200 * 1024, f"HTML+JS+CSS {total} bytes uncompressed (limit 200 KB): {sizes}")
    foreign = driver.execute_script("""
        return performance.getEntriesByType('resource').map(e => e.name).filter(u => !u.startsWith(location.origin))""")
    check(not foreign, f"no request to another origin ({foreign})")


if __name__ == "__main__":
    sys.exit(main())
