#!/usr/bin/env bash
# Generates the test music library deterministically from Debian tools only
# (sox, espeak-ng, lame, ffmpeg; `make deps` installs them).
#
#   media/make-media.sh OUTDIR        the library: 13 tracks of 20-52 s (about 18 MB)
#   media/make-media.sh --long DIR    DIR/long-4h-48k.mp3, a 4-hour 48 kHz CBR MP3 for benchmarks
#   media/make-media.sh --lossless DIR  FLAC, AIFF and ALAC files of 2-5 s (about 4 MB) for streamplay's
#                                     lossless tests (a folder of their own: the catalog does not read them yet)
#   media/make-media.sh --ogg DIR     Ogg Opus and Vorbis files of a few seconds (opusenc, oggenc):
#                                     kept out of the library until the catalog reads Ogg
#
# Same script, same bytes: sox runs with -R (fixed dither/noise seeds), ffmpeg with bit-exact
# flags and no copied metadata, lame writes no dates. OUTDIR/.stamp holds the script's SHA-256:
# when it matches and every file is there, the run exits at once. Otherwise the files are made
# in a staging folder beside OUTDIR and swapped in at the end, so an interrupted run never
# leaves half a library behind.
set -euo pipefail
# lame turns --tt/--ta/--tl into UTF-16 through the locale's character set: under C or POSIX (a
# bare cron or CI shell) it stops at the first non-ASCII byte, "Bände & Chœur" becomes "B".
export LC_ALL=C.UTF-8

SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")
STAMP_VALUE=$(sha256sum "$SCRIPT" | cut -d' ' -f1)
RATE=44100
WORK="" STAGING="" OLD="" OUT="" # set by main; the EXIT trap cleans them up

LIBRARY_FILES=(
  cbr-128k-44k.mp3
  vbr-v2.mp3
  mono-48k.mp3
  adts.aac
  track.m4a
  pcm16.wav
  "Album Ünïcode/01 Ça va — chanson.mp3"
  speech-22k.mp3
  cbr-no-tag.mp3
  adts-8k-mono.aac
  moov-at-end.m4a
  pcm24-96k.wav
  float32.wav
  fragmented.m4a
)
LONG_FILES=(long-4h-48k.mp3 long-1h-48k.aac long-1h-48k.m4a)
LOSSLESS_FILES=(
  flac16-44k.flac flac24-96k.flac flac-mono.flac flac-5.1.flac flac-id3.flac
  aiff16.aiff aifc-sowt.aifc alac16.m4a alac24.m4a alac-5.1.m4a
)
OGG_FILES=(
  opus-stereo-48k.opus
  opus-from-44k.opus
  opus-mono.opus
  opus-5.1.opus
  vorbis-stereo-44k.ogg
  vorbis-mono-22k.ogg
  chained-opus.opus
  opus-20s.opus
  vorbis-5.1.ogg
)

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
BITEXACT=(-fflags +bitexact -flags:a +bitexact -map_metadata -1)
ARTIST="streamd test band"
ALBUM="Generated Library"

up_to_date() { # dir files...
  local dir=$1 f
  shift
  [ -f "$dir/.stamp" ] && [ "$(cat "$dir/.stamp")" = "$STAMP_VALUE" ] || return 1
  for f in "$@"; do [ -s "$dir/$f" ] || return 1; done
}

# Fails the run when ffprobe does not read back exactly the text that was written.
check_tags() { # file key=value...
  local file=$1 pair got
  shift
  for pair in "$@"; do
    got=$(ffprobe -v error -show_entries "format_tags=${pair%%=*}" -of default=nw=1:nk=1 "$file")
    if [ "$got" != "${pair#*=}" ]; then
      echo "make-media: $(basename "$file"): ${pair%%=*} is '$got', not '${pair#*=}' (is C.UTF-8 installed?)" >&2
      exit 1
    fi
  done
}

# --- sound sources (44.1 kHz stereo WAV files in $WORK) ------------------------------------------

# A chord progression of plucked strings, four voices spread over the two channels.
chords() { # out.wav bar-seconds bars "chord" "chord"...   (a chord is four notes)
  local out=$1 bar=$2 bars=$3
  shift 3
  local progression=("$@") parts=() i f
  for ((i = 0; i < ${#progression[@]}; i++)); do
    f="$WORK/bar-$bar-${progression[$i]// /_}.wav"
    # shellcheck disable=SC2086  # the chord is four words
    set -- ${progression[$i]}
    [ -f "$f" ] || sox -q -R -r $RATE -c 4 -n -c 2 "$f" synth "$bar" pluck "$1" pluck "$2" pluck "$3" pluck "$4" \
      remix 1,2,3 2,3,4 gain -n -8 fade 0 "$bar" 0.05
  done
  for ((i = 0; i < bars; i++)); do
    parts+=("$WORK/bar-$bar-${progression[$((i % ${#progression[@]}))]// /_}.wav")
  done
  sox -q -R "${parts[@]}" "$out"
}

# A line of single notes (R is a rest), looped to `count` notes; each distinct note is made once.
line() { # out.wav voice note-seconds gain-dB pan(left-gain) count notes...
  local out=$1 voice=$2 step=$3 gain=$4 pan=$5 count=$6
  shift 6
  local notes=("$@") parts=() i n f
  for ((i = 0; i < count; i++)); do
    n=${notes[$((i % ${#notes[@]}))]}
    f="$WORK/note-$voice-$step-$gain-$pan-$n.wav"
    if [ ! -f "$f" ]; then
      if [ "$n" = R ]; then
        sox -q -R -r $RATE -c 2 -n "$f" trim 0 "$step"
      else
        sox -q -R -r $RATE -c 1 -n -c 2 "$f" synth "$step" "$voice" "$n" remix 1v"$pan" 1v1 \
          gain -n "$gain" fade 0.01 "$step" 0.04
      fi
    fi
    parts+=("$f")
  done
  sox -q -R "${parts[@]}" "$out"
}

# Speech from espeak-ng, resampled to 44.1 kHz stereo.
speech() { # out.wav voice text
  espeak-ng -v "$2" -s 150 -w "$WORK/speech-raw.wav" "$3"
  sox -q -R "$WORK/speech-raw.wav" -r $RATE -c 2 "$1" gain -n -3
}

# Mixes the inputs (the shorter ones padded with silence), trims to `seconds`, normalises to
# -1 dBFS and fades out over the last half second.
mix() { # out.wav seconds in...
  local out=$1 seconds=$2
  shift 2
  sox -q -R -m "$@" "$WORK/mix.wav"
  sox -q -R "$WORK/mix.wav" "$out" trim 0 "$seconds" gain -n -1 fade 0 "$seconds" 0.5
}

# The music shared by the library and the long file: about 60 s of each part.
make_sources() {
  # C - Am - F - G, 2 s a bar, and its bass line (half-second notes, root and fifth).
  chords "$WORK/chords-a.wav" 2 30 "C3 E3 G3 C4" "A2 E3 A3 C4" "F2 A3 C4 F4" "G2 D3 G3 B3"
  line "$WORK/bass-a.wav" sine 0.5 -10 0.9 120 \
    C2 C2 G2 C2 A1 A1 E2 A1 F1 F1 C2 F1 G1 G1 D2 G1
  # A pentatonic tune over it, triangle wave, 8 notes a bar.
  line "$WORK/melody-a.wav" triangle 0.25 -14 1 240 \
    E4 G4 A4 C5 D5 C5 A4 G4 A4 C5 E5 D5 C5 A4 G4 E4 F4 A4 C5 A4 F4 A4 C5 F5 D5 B4 G4 B4 D5 R G4 R
  # D minor - Bb - F - C, 1.5 s a bar, with a slower square-wave tune that has rests.
  chords "$WORK/chords-b.wav" 1.5 40 "D3 F3 A3 D4" "A#2 D3 F3 A#3" "F2 A3 C4 F4" "C3 E3 G3 C4"
  line "$WORK/melody-b.wav" square 0.375 -20 0.6 160 \
    D5 R A4 F4 D5 E5 F5 R D5 R A#4 F4 D5 C5 A#4 R A4 R F4 A4 C5 A4 F4 R E4 G4 C5 R E5 D5 C5 R
}

make_library() {
  local out=$1
  make_sources
  speech "$WORK/speech.wav" en "This is streamd, a streaming server for your music folder. \
It serves every track over plain HTTP, with ranges, a catalog and a seek index, and it plays them back \
through a bounded throttle, a parser, a converter and an output."
  speech "$WORK/count.wav" en "One. Two. Three. Four. Five. Six. Seven. Eight. Nine. Ten. Eleven. Twelve."
  speech "$WORK/french.wav" fr "Ça va? Ça va très bien, merci. Voici une petite chanson, à écouter en boucle."

  mix "$WORK/song-a.wav" 34 "$WORK/chords-a.wav" "$WORK/bass-a.wav" "$WORK/melody-a.wav"
  mix "$WORK/song-b.wav" 27 "$WORK/chords-b.wav" "$WORK/speech.wav"
  mix "$WORK/song-c.wav" 41 "$WORK/melody-a.wav" "$WORK/count.wav" "$WORK/chords-a.wav"
  mix "$WORK/song-d.wav" 23 "$WORK/speech.wav" "$WORK/melody-b.wav" "$WORK/chords-b.wav"
  mix "$WORK/song-e.wav" 52 "$WORK/chords-a.wav" "$WORK/bass-a.wav" "$WORK/melody-a.wav" "$WORK/speech.wav"
  mix "$WORK/song-f.wav" 30 "$WORK/count.wav" "$WORK/chords-b.wav" "$WORK/melody-b.wav"
  mix "$WORK/song-g.wav" 21 "$WORK/chords-a.wav" "$WORK/count.wav"
  mix "$WORK/song-h.wav" 25 "$WORK/french.wav" "$WORK/chords-b.wav" "$WORK/melody-b.wav"
  # Speech alone: the long sentence, a pause, the counting; mono 22.05 kHz.
  sox -q -R "$WORK/speech.wav" "$WORK/count.wav" -r 22050 -c 1 "$WORK/song-i.wav" pad 0 1 gain -n -1

  # Cover art: a small deterministic JPEG (one frame of ffmpeg's test pattern).
  "${FF[@]}" -f lavfi -i "testsrc2=size=160x160:rate=1" -frames:v 1 -fflags +bitexact -flags +bitexact \
    -map_metadata -1 "$WORK/cover.jpg"

  local tags=(--ta "$ARTIST" --tl "$ALBUM")
  # 1. CBR 128k with ID3v2.3 (and ID3v1) tags and LAME's Info frame.
  lame --quiet -b 128 --cbr --tt "Chords and Melody" --tn 1 "${tags[@]}" "$WORK/song-a.wav" "$out/cbr-128k-44k.mp3"
  # 2. VBR -V 2 with a Xing/LAME header and ID3v2.3 tags with cover art (APIC).
  lame --quiet -V 2 --id3v2-only --tt "Spoken Chords" --tn 2/9 "${tags[@]}" --ti "$WORK/cover.jpg" \
    "$WORK/song-b.wav" "$out/vbr-v2.mp3"
  # 3. 48 kHz mono CBR 96k.
  sox -q -R "$WORK/song-c.wav" -r 48000 -c 1 "$WORK/song-c-48k-mono.wav"
  lame --quiet -b 96 --cbr -m m --tt "Counting in Mono" --ta "$ARTIST" "$WORK/song-c-48k-mono.wav" "$out/mono-48k.mp3"
  # 4. AAC-LC in ADTS, no tags.
  # PNS (noise substitution) is off: its noise is random per decoder, which would make
  # decoders disagree by design; without it libfaad2 and ffmpeg agree to ~100 dB.
  "${FF[@]}" -i "$WORK/song-d.wav" "${BITEXACT[@]}" -c:a aac -aac_pns 0 -b:a 128k -f adts "$out/adts.aac"
  # 5. AAC-LC in MP4 with iTunes-style tags, moov first.
  "${FF[@]}" -i "$WORK/song-e.wav" "${BITEXACT[@]}" -c:a aac -aac_pns 0 -b:a 128k -movflags +faststart \
    -metadata title="Long Mix" -metadata artist="$ARTIST" -metadata album="$ALBUM" -metadata track=5 \
    "$out/track.m4a"
  # 6. PCM 16-bit WAV with a LIST/INFO chunk (INAM, IART).
  "${FF[@]}" -i "$WORK/song-g.wav" "${BITEXACT[@]}" -c:a pcm_s16le \
    -metadata title="Counting over Chords" -metadata artist="$ARTIST" "$out/pcm16.wav"
  # 7. A UTF-8 folder and file name, UTF-16 ID3v2 text.
  mkdir -p "$out/Album Ünïcode"
  lame --quiet -b 160 --cbr --id3v2-utf16 --tt "Ça va — chanson" --tn 1 --ta "Bände & Chœur" \
    --tl "Album Ünïcode" "$WORK/song-h.wav" "$out/Album Ünïcode/01 Ça va — chanson.mp3"
  check_tags "$out/Album Ünïcode/01 Ça va — chanson.mp3" "title=Ça va — chanson" "artist=Bände & Chœur" \
    "album=Album Ünïcode"
  # 8. MPEG-2 layer III (22.05 kHz, 576-sample frames), mono; 64k is the smallest CBR rate whose
  #    first frame has room for LAME's Info frame.
  lame --quiet -b 64 --cbr -m m --tt "Speech at 22 kHz" --ta "$ARTIST" "$WORK/song-i.wav" "$out/speech-22k.mp3"
  # 9. CBR 192k, no ID3v2 and no Info frame, an ID3v1 tag at the end.
  lame --quiet -b 192 --cbr -t --id3v1-only --tt "Bare CBR" --ta "$ARTIST" --tl "$ALBUM" --tn 9 \
    "$WORK/song-f.wav" "$out/cbr-no-tag.mp3"
  # 10. AAC-LC in ADTS at 8 kHz mono (speech).
  sox -q -R "$WORK/song-i.wav" -r 8000 -c 1 "$WORK/speech-8k.wav"
  "${FF[@]}" -i "$WORK/speech-8k.wav" "${BITEXACT[@]}" -c:a aac -aac_pns 0 -b:a 24k -f adts "$out/adts-8k-mono.aac"
  # 11. The M4A of item 5 with its moov box after mdat (ffmpeg's default layout).
  "${FF[@]}" -i "$out/track.m4a" "${BITEXACT[@]}" -c copy "$out/moov-at-end.m4a"
  # 12. 24-bit 96 kHz mono WAV, 20 s.
  sox -q -R "$WORK/song-g.wav" -r 96000 -c 1 -b 24 "$out/pcm24-96k.wav" trim 0 20
  # 13. 32-bit float WAV, 44.1 kHz mono, 20 s.
  sox -q -R "$WORK/song-g.wav" -c 1 -e floating-point -b 32 "$out/float32.wav" trim 0 20
  # 14. The M4A of item 5 as fragmented MP4: an empty moov with mvex, then a moof + mdat every
  #     2 s (tfdt, default-base-is-moof) and an mfra random-access table at the end.
  "${FF[@]}" -i "$out/track.m4a" "${BITEXACT[@]}" -c copy -metadata title="Fragments" \
    -movflags +frag_keyframe+empty_moov+default_base_moof -frag_duration 2000000 "$out/fragmented.m4a"
}

make_long() {
  local out=$1
  make_sources
  # Four minutes of music encoded once as a bare CBR stream (no ID3, no Info frame, no bit
  # reservoir: every frame stands alone), then the frames repeated 60 times. At 48 kHz,
  # 128 kbit/s every frame is exactly 384 bytes, so the copies join into one valid stream.
  mix "$WORK/minute.wav" 60 "$WORK/chords-a.wav" "$WORK/bass-a.wav" "$WORK/melody-a.wav"
  mix "$WORK/minute-b.wav" 60 "$WORK/chords-b.wav" "$WORK/melody-b.wav"
  sox -q -R "$WORK/minute.wav" "$WORK/minute-b.wav" "$WORK/minute.wav" "$WORK/minute-b.wav" -r 48000 "$WORK/four48.wav"
  lame --quiet -b 128 --cbr -t --nores "$WORK/four48.wav" "$WORK/four.mp3"
  local i
  for ((i = 0; i < 60; i++)); do cat "$WORK/four.mp3"; done >"$out/long-4h-48k.mp3"
  # One hour of AAC-LC 128k at 48 kHz: the same four minutes encoded once as ADTS and the
  # frames repeated 15 times, then remuxed into an M4A (moov first) for the AAC benchmarks.
  "${FF[@]}" -i "$WORK/four48.wav" "${BITEXACT[@]}" -c:a aac -aac_pns 0 -b:a 128k -f adts "$WORK/four.aac"
  for ((i = 0; i < 15; i++)); do cat "$WORK/four.aac"; done >"$out/long-1h-48k.aac"
  "${FF[@]}" -i "$out/long-1h-48k.aac" "${BITEXACT[@]}" -c copy -movflags +faststart "$out/long-1h-48k.m4a"
}

make_lossless() {
  local out=$1
  command -v flac >/dev/null || { echo "make-media: flac is missing (make deps installs it)" >&2; exit 1; }
  # Sources: a sweep and pink noise (every sample differs, so an offset or a lost frame shows),
  # one synth per channel; sox -R keeps the noise the same from run to run.
  sox -q -R -n -r 44100 -c 2 -b 16 "$WORK/s16.wav" synth 5 sine 200-2000 pinknoise gain -4
  sox -q -R -n -r 96000 -c 2 -b 24 "$WORK/s24.wav" synth 2 sine 300-9000 pinknoise gain -8
  sox -q -R -n -r 22050 -c 1 -b 16 "$WORK/mono.wav" synth 3 sine 100-3000 gain -3
  sox -q -R -n -r 48000 -c 6 -b 16 "$WORK/six.wav" synth 2 sine 220 sine 330 sine 440 sine 55 pinknoise brownnoise gain -6
  # flac warns about sox's 'fact' chunk in WAVE_FORMAT_EXTENSIBLE files: it reads them as raw PCM.
  sox -q "$WORK/s24.wav" -t raw "$WORK/s24.raw"
  sox -q "$WORK/six.wav" -t raw "$WORK/six.raw"
  local F=(flac --silent --force --no-utf8-convert) RAW=(--force-raw-format --endian=little --sign=signed)
  # 16/44.1 stereo with a seek point every 0.5 s (a seek is one Range request from a point).
  "${F[@]}" -5 -S 0.5s -T "TITLE=Lossless Sweep" -T "ARTIST=$ARTIST" -o "$out/flac16-44k.flac" "$WORK/s16.wav"
  # 24/96 stereo without a seek table (seeks scan frames).
  "${F[@]}" "${RAW[@]}" --channels=2 --bps=24 --sample-rate=96000 -8 --no-seektable -o "$out/flac24-96k.flac" "$WORK/s24.raw"
  "${F[@]}" -5 -o "$out/flac-mono.flac" "$WORK/mono.wav"
  # 5.1 in FLAC's (= WAV's) order: FL FR FC LFE BL BR.
  "${F[@]}" "${RAW[@]}" --channels=6 --bps=16 --sample-rate=48000 -5 -o "$out/flac-5.1.flac" "$WORK/six.raw"
  # An ID3v2.3 tag (TIT2 "ID3 in front") before "fLaC", as some taggers write (jellyfin #14219).
  # ID3v2.3 header (size 23, syncsafe), then TIT2 of 13 bytes: encoding 0, "ID3 in front".
  { printf 'ID3\003\000\000\000\000\000\027'; printf 'TIT2\000\000\000\015\000\000\000ID3 in front'
    cat "$out/flac-mono.flac"; } >"$out/flac-id3.flac"
  sox -q -R "$WORK/s16.wav" "$out/aiff16.aiff" trim 0 3
  # AIFF-C with little-endian 16-bit samples ('sowt', what macOS writes).
  "${FF[@]}" -i "$WORK/s16.wav" "${BITEXACT[@]}" -t 3 -c:a pcm_s16le -f aiff "$out/aifc-sowt.aifc"
  "${FF[@]}" -i "$WORK/s16.wav" "${BITEXACT[@]}" -c:a alac "$out/alac16.m4a"
  "${FF[@]}" -i "$WORK/s24.wav" "${BITEXACT[@]}" -c:a alac -sample_fmt s32p "$out/alac24.m4a"
  # 5.1 ALAC: its elements come centre first (C L R Ls Rs LFE), played in WAV's order.
  "${FF[@]}" -i "$WORK/six.wav" "${BITEXACT[@]}" -t 1 -c:a alac "$out/alac-5.1.m4a"
}

# Ogg Opus and Vorbis, a few seconds each. Fixed serial numbers (opusenc and oggenc pick random
# ones otherwise), so the same script makes the same bytes.
make_ogg() {
  local out=$1
  chords "$WORK/ogg-chords.wav" 1 6 "C3 E3 G3 C4" "A2 E3 A3 C4" "F2 A3 C4 F4"
  line "$WORK/ogg-tune.wav" triangle 0.25 -14 1 24 E4 G4 A4 C5 D5 C5 A4 G4
  sox -q -R -m "$WORK/ogg-chords.wav" "$WORK/ogg-tune.wav" -b 16 "$WORK/ogg-44k.wav" trim 0 6 gain -n -1
  sox -q -R "$WORK/ogg-44k.wav" -b 16 -r 48000 "$WORK/ogg-48k.wav"
  local opus=(opusenc --quiet --comp 10 --title "Ogg test" --artist "$ARTIST")
  # 1. Stereo from a 48 kHz source (pre-skip 312 at 48 kHz).
  "${opus[@]}" --serial 101 --bitrate 128 "$WORK/ogg-48k.wav" "$out/opus-stereo-48k.opus"
  # 2. From a 44.1 kHz source: opusenc resamples; OpusHead keeps 44100 as the input rate.
  "${opus[@]}" --serial 102 --bitrate 96 "$WORK/ogg-44k.wav" "$out/opus-from-44k.opus"
  # 3. Mono, 4 s.
  sox -q -R "$WORK/ogg-48k.wav" -c 1 "$WORK/ogg-mono.wav" trim 0 4
  "${opus[@]}" --serial 103 --bitrate 64 "$WORK/ogg-mono.wav" "$out/opus-mono.opus"
  # 4. 5.1 (mapping family 1): a different tone in each channel, so an order mix-up shows.
  local tones=() f
  for f in 220 330 440 550 110 660; do
    sox -q -R -r 48000 -n -c 1 "$WORK/tone-$f.wav" synth 3 sine "$f" gain -n -12
    tones+=("$WORK/tone-$f.wav")
  done
  sox -q -R -M "${tones[@]}" -b 16 "$WORK/ogg-51.wav"
  "${opus[@]}" --serial 104 --bitrate 256 "$WORK/ogg-51.wav" "$out/opus-5.1.opus"
  # 5. Vorbis stereo 44.1 kHz, quality 5.
  oggenc --quiet -q 5 -s 105 -t "Ogg test" -a "$ARTIST" -o "$out/vorbis-stereo-44k.ogg" "$WORK/ogg-44k.wav"
  # 6. Vorbis mono 22.05 kHz.
  sox -q -R "$WORK/ogg-44k.wav" -r 22050 -c 1 "$WORK/ogg-22k-mono.wav" trim 0 4
  oggenc --quiet -q 3 -s 106 -o "$out/vorbis-mono-22k.ogg" "$WORK/ogg-22k-mono.wav"
  # 7. A chain: two Opus links (distinct serials) one after the other, 3 s and 2 s.
  sox -q -R "$WORK/ogg-48k.wav" "$WORK/ogg-link1.wav" trim 0 3
  sox -q -R "$WORK/ogg-48k.wav" "$WORK/ogg-link2.wav" trim 3 2
  "${opus[@]}" --serial 107 --bitrate 96 "$WORK/ogg-link1.wav" "$WORK/link1.opus"
  "${opus[@]}" --serial 108 --bitrate 96 "$WORK/ogg-link2.wav" "$WORK/link2.opus"
  cat "$WORK/link1.opus" "$WORK/link2.opus" >"$out/chained-opus.opus"
  # 8. 20 s (the 6 s repeated) at 160 kbit/s, about 400 kB: long enough that a seek over HTTP
  #    bisects (64 KiB windows) before its last read.
  sox -q -R "$WORK/ogg-48k.wav" "$WORK/ogg-20s.wav" repeat 3 trim 0 20
  "${opus[@]}" --serial 109 --bitrate 160 "$WORK/ogg-20s.wav" "$out/opus-20s.opus"
  # 9. Vorbis 5.1 from the six tones (oggenc maps the WAV order to Vorbis order).
  oggenc --quiet -q 4 -s 110 -o "$out/vorbis-5.1.ogg" "$WORK/ogg-51.wav"
}

# --- staging and swap ------------------------------------------------------------------------

cleanup() {
  rm -rf "$WORK" "$STAGING"
  # Interrupted between the two renames: put the previous library back.
  if [ -n "$OLD" ] && [ -e "$OLD" ]; then
    if [ -e "$OUT" ]; then rm -rf "$OLD"; else mv "$OLD" "$OUT"; fi
  fi
}

main() {
  local mode=library files
  if [ "${1:-}" = "--long" ]; then mode=long; shift; fi
  if [ "${1:-}" = "--lossless" ]; then mode=lossless; shift; fi
  if [ "${1:-}" = "--ogg" ]; then mode=ogg; shift; fi
  if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: make-media.sh OUTDIR | make-media.sh --long DIR | make-media.sh --lossless DIR | make-media.sh --ogg DIR" >&2
    exit 2
  fi
  OUT=$(realpath -m "$1")
  case $mode in
    long) files=("${LONG_FILES[@]}") ;;
    lossless) files=("${LOSSLESS_FILES[@]}") ;;
    ogg) files=("${OGG_FILES[@]}") ;;
    *) files=("${LIBRARY_FILES[@]}") ;;
  esac
  if up_to_date "$OUT" "${files[@]}"; then exit 0; fi

  local tool
  for tool in sox espeak-ng lame ffmpeg ffprobe opusenc oggenc; do
    command -v "$tool" >/dev/null || { echo "make-media: $tool is missing (make deps installs it)" >&2; exit 1; }
  done
  local started=$SECONDS parent base d
  parent=$(dirname "$OUT")
  base=$(basename "$OUT")
  mkdir -p "$parent"
  # Leftovers of a killed run (whose process is gone, or whose id is now ours).
  for d in "$parent/.$base".{work,staging,old}.*; do
    if [ -e "$d" ] && { [ "${d##*.}" = $$ ] || ! kill -0 "${d##*.}" 2>/dev/null; }; then rm -rf "$d"; fi
  done
  STAGING="$parent/.$base.staging.$$" # the new OUTDIR
  OLD="$parent/.$base.old.$$"
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  WORK="$parent/.$base.work.$$" # scratch WAVs
  mkdir "$WORK" "$STAGING"

  case $mode in
    long) make_long "$STAGING" ;;
    lossless) make_lossless "$STAGING" ;;
    ogg) make_ogg "$STAGING" ;;
    *) make_library "$STAGING" ;;
  esac
  local f
  for f in "${files[@]}"; do
    [ -s "$STAGING/$f" ] || { echo "make-media: $f was not generated" >&2; exit 1; }
  done
  echo "$STAMP_VALUE" >"$STAGING/.stamp"

  # Swap the finished folder in (renames within one folder, so one filesystem).
  if [ -e "$OUT" ]; then mv "$OUT" "$OLD"; fi
  mv "$STAGING" "$OUT"
  rm -rf "$OLD"

  echo "make-media: generated $OUT in $((SECONDS - started)) s"
  for f in "${files[@]}"; do printf '  %-40s %10d bytes\n' "$f" "$(stat -c %s "$OUT/$f")"; done
}

main "$@"
