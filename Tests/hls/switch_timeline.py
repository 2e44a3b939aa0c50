#!/usr/bin/env python3
"""Where in the source each stretch of a player's output comes from, and which variant's decode
it matches: the measurement behind HLSVariantSwitchTests.

usage: switch_timeline.py SOURCE.wav OUT.wav [REFERENCE.wav ...]

The output is cut into windows of 1,200 frames (25 ms at 48 kHz); each window is found in the
source by cross-correlation within 5 s of its own place (the source is noise, so the peak is
unique), giving its shift (source frame = output frame + shift). Consecutive windows with one
shift make a run; a window whose best match is poor (under 3 dB against the source) is counted
as unmatched, a quiet one as silent. Each window is also compared, at its shift, with every
REFERENCE (decodes placed like the source), and runs of windows whose best reference is the same
are listed. Prints one JSON object."""
import json, struct, sys
import numpy as np

WINDOW, REACH = 1200, 240_000

def load(path):
    data = open(path, "rb").read()
    at, fmt, body = 12, None, b""
    while at + 8 <= len(data):
        chunk, size = data[at:at + 4], struct.unpack("<I", data[at + 4:at + 8])[0]
        if chunk == b"fmt ":
            fmt = data[at + 8:at + 8 + size]
        elif chunk == b"data":
            # mpv's --ao=pcm and a killed writer can leave a wrong size: take what is there.
            body = data[at + 8:]
            break
        at += 8 + size + (size & 1)
    tag, channels = struct.unpack("<HH", fmt[:4])
    if tag == 0xFFFE:
        tag = struct.unpack("<H", fmt[24:26])[0]
    if tag == 3:
        samples = np.frombuffer(body[:len(body) // 4 * 4], "<f4").astype(np.float64)
    else:
        samples = np.frombuffer(body[:len(body) // 2 * 2], "<i2") / 32768.0
    return samples[:len(samples) // channels * channels].reshape(-1, channels)[:, 0]

def snr(reference, test):
    noise = np.sum((reference - test) ** 2)
    return 99.0 if noise == 0 else float(10 * np.log10(max(np.sum(reference ** 2), 1e-20) / noise))

source, out = load(sys.argv[1]), load(sys.argv[2])
references = [load(path) for path in sys.argv[3:]]
windows = []
previous = None
for start in range(0, len(out) - WINDOW + 1, WINDOW):
    piece = out[start:start + WINDOW]
    if np.sqrt(np.mean(piece ** 2)) < 1e-3:
        windows.append({"start": start, "kind": "silent"})
        continue
    # The last window's shift first (the common case, and cheap); a search only where it fails.
    at = start + previous if previous is not None else -1
    quality = snr(source[at:at + WINDOW], piece) if 0 <= at <= len(source) - WINDOW else -99.0
    if quality < 3:
        low, high = max(0, start - REACH), min(len(source), start + WINDOW + REACH)
        span = source[low:high]
        if len(span) < WINDOW:
            windows.append({"start": start, "kind": "unmatched"})
            continue
        size = 1 << int(np.ceil(np.log2(len(span) + WINDOW)))
        correlation = np.fft.irfft(np.fft.rfft(span, size) * np.conj(np.fft.rfft(piece, size)), size)[:len(span) - WINDOW + 1]
        at = low + int(np.argmax(correlation))
        quality = snr(source[at:at + WINDOW], piece)
    if quality < 3:
        windows.append({"start": start, "kind": "unmatched"})
        continue
    shift = at - start
    previous = shift
    scores = []
    for reference in references:
        part = reference[at:at + WINDOW]
        scores.append(snr(part, piece) if len(part) == WINDOW else -99.0)
    windows.append({"start": start, "kind": "matched", "shift": shift, "scores": scores})

runs, reference_runs, silent, unmatched = [], [], [], []
for window in windows:
    if window["kind"] == "silent":
        silent.append(window["start"]); continue
    if window["kind"] == "unmatched":
        unmatched.append(window["start"]); continue
    end = window["start"] + WINDOW
    if runs and runs[-1]["shift"] == window["shift"] and runs[-1]["end"] == window["start"]:
        runs[-1]["end"] = end
    else:
        runs.append({"start": window["start"], "end": end, "shift": window["shift"]})
    if window["scores"]:
        best = int(np.argmax(window["scores"]))
        score = window["scores"][best]
        if reference_runs and reference_runs[-1]["reference"] == best:
            reference_runs[-1]["end"] = end
            reference_runs[-1]["scores"].append(score)
        else:
            reference_runs.append({"start": window["start"], "end": end, "reference": best, "scores": [score]})
for run in reference_runs:
    scores = run.pop("scores")
    run["windows"], run["median_snr"] = len(scores), float(np.median(scores))
# Where each change of shift happens, to the frame: the split of the windows around it that
# leaves the least error, the output before it at the old shift and after it at the new one.
joins = []
for before, after in zip(runs, runs[1:]):
    low, high = max(0, before["end"] - WINDOW), min(len(out), after["start"] + WINDOW)
    def error(shift):
        lo, hi = low + shift, high + shift
        if lo < 0 or hi > len(source):
            return None
        return np.concatenate([[0.0], np.cumsum((out[low:high] - source[lo:hi]) ** 2)])
    old, new = error(before["shift"]), error(after["shift"])
    if old is None or new is None:
        continue
    at = low + int(np.argmin(old + (new[-1] - new)))
    joins.append({"at": at, "source": at + after["shift"]})
print(json.dumps({"frames": len(out), "source_frames": len(source), "window": WINDOW, "runs": runs,
                  "reference_runs": reference_runs, "silent": silent, "unmatched": unmatched, "joins": joins}))
