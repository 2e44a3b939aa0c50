#!/usr/bin/env bash
# The DSP chain against its peers, all measured in this run on the same 30 s inputs (48 kHz
# stereo float: generated music, espeak-ng speech, a 433 Hz tone; 433 because 440 Hz at 48 kHz
# repeats every 1200 samples, which lets a WSOLA splice in phase by luck):
#  1. CPU per second of audio of each time-stretch engine alone at 1×, 1.5×, 2×, 4×, 16×:
#     ours (WSOLA), libsonic and librubberband (R2 "faster" with smooth transients, R3 "finer")
#     in-process through
#     dspbench, SoundTouch through bench/soundtouch_bench.cpp (the same block size and clock);
#     ratios are peer / ours.
#  2. Quality at 0.5×, 1.5×, 2×, 4×, 16×: duration error, pitch error and THD+N of the tone,
#     long-term-spectrum deviation of speech and music (bench/dsp_quality.py).
#  3. The whole chain at 1.5× with the rock EQ and 48 → 44.1 kHz resampling; goal < 2% of a core.
# It reports, it does not gate. DSP_BENCH_OUT=DIR keeps the renders (and spectrograms) there.
set -euo pipefail
cd "$(dirname "$0")/.."
for p in g++ libsoundtouch-dev sox espeak-ng python3-numpy pkg-config; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || \
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$p" >/dev/null; }
done
swift build -c release --product dspbench >/dev/null
BIN=$(swift build -c release --show-bin-path)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
OUT=${DSP_BENCH_OUT:-$TMP/renders}
mkdir -p "$OUT"
g++ -O2 -o "$TMP/soundtouch_bench" bench/soundtouch_bench.cpp $(pkg-config --cflags --libs soundtouch)
F=(-r 48000 -c 2 -e floating-point -b 32)

# Inputs. Music: four chords of plucked arpeggios over a square-wave bass, with noise-burst
# percussion (transients), 8 s looped to 30 s. Speech: espeak-ng, looped to 30 s.
notes=(C4 E4 G4 C5 G4 E4 C4 E4  A3 C4 E4 A4 E4 C4 A3 C4  F3 A3 C4 F4 C4 A3 F3 A3  G3 B3 D4 G4 D4 B3 G3 B3)
bass=(C2 A1 F1 G1)
i=0
for n in "${notes[@]}"; do sox -n "${F[@]}" "$TMP/n$(printf %02d $i).wav" synth 0.25 pluck "$n" gain -8; i=$((i + 1)); done
i=0
for b in "${bass[@]}"; do sox -n "${F[@]}" "$TMP/b$i.wav" synth 2 square "$b" lowpass 800 gain -22 fade 0.01 2 0.05; i=$((i + 1)); done
sox -n "${F[@]}" "$TMP/hit.wav" synth 0.03 whitenoise fade 0 0.03 0.03 gain -14 pad 0 0.47
sox "$TMP"/n*.wav "$TMP/arp.wav"
sox "$TMP"/b?.wav "$TMP/bass.wav"
sox "$TMP/hit.wav" "$TMP/hits.wav" repeat 15
sox -m "$TMP/arp.wav" "$TMP/bass.wav" "$TMP/hits.wav" "$TMP/cycle.wav"
sox "$TMP/cycle.wav" "$TMP/music.wav" repeat 3 trim 0 30
espeak-ng -s 165 -w "$TMP/s.wav" "Listeners of podcasts and audio books often play them faster than they were \
recorded. At one and a half or two times the speed, a voice should still sound like the same person, not \
like a cartoon. This paragraph is read by a speech synthesiser so that the benchmark can make it anywhere."
sox "$TMP/s.wav" "${F[@]}" "$TMP/s48.wav"
sox "$TMP/s48.wav" "$TMP/speech.wav" repeat 5 trim 0 30
sox -n "${F[@]}" "$TMP/tone.wav" synth 30 sine 433 gain -6

engines=(wsola sonic soundtouch rubberband rubberband-r3)
render() { # engine rate in out → JSON line
  if [ "$1" = soundtouch ]; then "$TMP/soundtouch_bench" "$2" "$3" "$4"; else "$BIN/dspbench" stretch "$1" "$2" "$3" "$4"; fi
}
ms() { python3 -c "import json,sys; print('%.2f' % json.loads(sys.argv[1])['cpu_ms_per_audio_s'])" "$1"; }

echo "1. CPU per second of 48 kHz stereo music, engine alone (ms of CPU; % of one core in brackets; ratio = engine / ours)"
printf '%-14s' "engine"; for r in 1 1.5 2 4 16; do printf '%22s' "${r}x"; done; echo
declare -A CPU
for e in "${engines[@]}"; do
  for r in 1 1.5 2 4 16; do
    CPU[$e,$r]=$(ms "$(DSPBENCH_REPEATS=3 render "$e" "$r" "$TMP/music.wav" "$TMP/cpu.wav")")
  done
done
for e in "${engines[@]}"; do
  printf '%-14s' "$e"
  for r in 1 1.5 2 4 16; do
    printf '%22s' "$(python3 -c "a,b=$(echo "${CPU[$e,$r]}"),$(echo "${CPU[wsola,$r]}"); print('%.2f (%.2f%%) %sx' % (a, a/10, ('%.1f' % (a/b)) if b > 0.005 else 'n/a'))")"
  done
  echo
done

echo
echo "2. Quality (tone: pitch error in cents / THD+N dB; speech, music: long-term spectrum deviation dB; duration error % worst of the three)"
printf '%-14s' "engine"; for r in 0.5 1.5 2 4 16; do printf '%34s' "${r}x"; done; echo
for e in "${engines[@]}"; do
  printf '%-14s' "$e"
  for r in 0.5 1.5 2 4 16; do
    cell=""
    worst=0
    for kind in tone speech music; do
      DSPBENCH_REPEATS=1 render "$e" "$r" "$TMP/$kind.wav" "$OUT/$kind-$e-$r.wav" >/dev/null
      q=$(python3 bench/dsp_quality.py "$TMP/$kind.wav" "$OUT/$kind-$e-$r.wav" "$r" "$([ "$kind" = tone ] && echo tone:433 || echo "$kind")")
      if [ "$kind" = tone ]; then
        cell=$(python3 -c "import json,sys; q=json.loads(sys.argv[1]); print('%+.1fc/%.0f' % (q['pitch_err_cents'], q['thdn_db']))" "$q")
      else
        cell="$cell $(python3 -c "import json,sys; print('%.1f' % json.loads(sys.argv[1])['ltas_dev_db'])" "$q")"
      fi
      worst=$(python3 -c "import json,sys; print(max(abs(float(sys.argv[2])), abs(json.loads(sys.argv[1])['duration_err_pct'])))" "$q" "$worst")
    done
    printf '%34s' "$cell d$(printf '%.1f' "$worst")%"
  done
  echo
done

echo
echo "3. Whole chain (WSOLA 1.5x, rock EQ + limiter, libsoxr 48 -> 44.1 kHz) on the music"
chain=$(DSPBENCH_REPEATS=3 "$BIN/dspbench" chain 1.5 rock 44100 "$TMP/music.wav" "$OUT/chain-1.5-rock-44k.wav")
python3 -c "
import json, sys
c = json.loads(sys.argv[1])
ms = c['cpu_ms_per_audio_s']
print('%.2f ms CPU per second of audio = %.2f%% of one core in real time (goal < 2%%); %.1fx the WSOLA engine alone at 1.5x' % (ms, ms / 10, ms / float(sys.argv[2])))
" "$chain" "${CPU[wsola,1.5]}"
if [ -n "${DSP_BENCH_OUT:-}" ]; then
  for f in "$OUT"/speech-*-1.5.wav "$OUT"/music-*-2.wav; do sox "$f" -n spectrogram -x 1200 -y 400 -o "${f%.wav}.png" 2>/dev/null || true; done
  echo "renders and spectrograms in $OUT"
fi
