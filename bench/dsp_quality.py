#!/usr/bin/env python3
"""Objective quality figures for a time-stretched render, for bench/dsp.sh.

usage: dsp_quality.py INPUT.wav OUTPUT.wav RATE KIND   (KIND: tone:HZ, speech, music)
prints one JSON object:
  duration_err_pct  output length against input / rate
  pitch_err_cents   (tone) dominant frequency of the output against the tone's
  thdn_db           (tone) everything but the tone against the tone (Kaiser window): splice
                    clicks, modulation and noise all show up here
  ripple_db         (tone) spread of the 10 ms RMS envelope (0 for a perfect stretch; WSOLA
                    splices out of phase, phasiness and transient smearing all raise it)
  ltas_dev_db       RMS difference of the long-term average spectrum (1/3 octaves,
                    50 Hz-16 kHz, bands the input fills) between input and output:
                    colouring and added noise
"""
import json
import sys

import numpy as np


def read(path):
    with open(path, 'rb') as f:
        data = f.read()
    # Walk RIFF chunks (the float WAVs here are WAVE_FORMAT_IEEE_FLOAT, which `wave` refuses).
    pos, fmt, samples = 12, None, None
    while pos + 8 <= len(data):
        cid, size = data[pos:pos + 4], int.from_bytes(data[pos + 4:pos + 8], 'little')
        body = data[pos + 8:pos + 8 + size]
        if cid == b'fmt ':
            tag = int.from_bytes(body[0:2], 'little')
            channels = int.from_bytes(body[2:4], 'little')
            rate = int.from_bytes(body[4:8], 'little')
            bits = int.from_bytes(body[14:16], 'little')
            if tag == 0xFFFE:
                tag = int.from_bytes(body[24:26], 'little')
            fmt = (tag, channels, rate, bits)
        elif cid == b'data':
            samples = body
        pos += 8 + size + (size & 1)
    tag, channels, rate, bits = fmt
    if tag == 3 and bits == 32:
        x = np.frombuffer(samples[:len(samples) // 4 * 4], dtype='<f4').astype(np.float64)
    elif bits == 16:
        x = np.frombuffer(samples[:len(samples) // 2 * 2], dtype='<i2').astype(np.float64) / 32768
    else:
        raise SystemExit(f'{path}: unsupported WAV ({tag}, {bits} bits)')
    return x[:len(x) // channels * channels].reshape(-1, channels).mean(axis=1), rate


def dominant(x, rate):
    n = 1 << int(np.log2(min(len(x), 1 << 18)))
    seg = x[(len(x) - n) // 2:(len(x) - n) // 2 + n] * np.hanning(n)
    p = np.abs(np.fft.rfft(seg)) ** 2
    k = int(np.argmax(p[1:-1])) + 1
    a, b, c = np.log(p[k - 1:k + 2] + 1e-300)
    return (k + 0.5 * (a - c) / (a - 2 * b + c)) * rate / n


def ltas(x, rate):
    n = 8192
    frames = len(x) // n
    if frames < 2:
        return None
    w = np.hanning(n)
    spec = np.mean([np.abs(np.fft.rfft(x[i * n:(i + 1) * n] * w)) ** 2 for i in range(frames)], axis=0)
    freqs = np.fft.rfftfreq(n, 1 / rate)
    centres = 50 * 2 ** (np.arange(0, 28) / 3)
    bands = []
    for f in centres[centres < 16000]:
        sel = (freqs >= f / 2 ** (1 / 6)) & (freqs < f * 2 ** (1 / 6))
        bands.append(10 * np.log10(spec[sel].mean() + 1e-20))
    return np.array(bands)


def main():
    src, out, rate, kind = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    x, sr = read(src)
    y, sr2 = read(out)
    result = {'duration_err_pct': round((len(y) / sr2) / ((len(x) / sr) / rate) * 100 - 100, 3)}
    if kind.startswith('tone'):
        hz = float(kind.split(':')[1]) if ':' in kind else 440.0
        f = dominant(y, sr2)
        result['pitch_err_cents'] = round(1200 * np.log2(f / hz), 2)
        n = 1 << int(np.log2(min(len(y), 1 << 18)))
        seg = y[(len(y) - n) // 2:(len(y) - n) // 2 + n] * np.kaiser(n, 20)
        p = np.abs(np.fft.rfft(seg)) ** 2
        k = int(round(f * n / sr2))
        tone = p[max(0, k - 20):k + 21].sum()
        result['thdn_db'] = round(float(10 * np.log10((p.sum() - tone) / tone + 1e-30)), 1)
        body = y[int(0.1 * len(y)):int(0.9 * len(y))]
        hop = sr2 // 100
        env = np.sqrt([np.mean(body[i:i + hop] ** 2) for i in range(0, len(body) - hop, hop)])
        env = env[env > 0]
        result['ripple_db'] = round(float(20 * np.log10(env.max() / env.min())), 2) if len(env) else None
    a, b = ltas(x, sr), ltas(y, sr2)
    if not kind.startswith('tone') and a is not None and b is not None:
        # Only bands the input fills (within 60 dB of its loudest): espeak-ng's 22 kHz speech
        # has nothing above 11 kHz, and noise-floor differences there would swamp the figure.
        live = a > a.max() - 60
        a, b = a[live], b[live]
        d = (b - b.mean()) - (a - a.mean())
        result['ltas_dev_db'] = round(float(np.sqrt(np.mean(d ** 2))), 2)
    print(json.dumps(result))


if __name__ == '__main__':
    main()
