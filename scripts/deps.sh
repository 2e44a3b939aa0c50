#!/usr/bin/env bash
# Installs the Debian packages the project needs; fast no-op when they are all present.
set -euo pipefail
PACKAGES=(
  pkg-config libmpg123-dev libfaad-dev libasound2-dev libcurl4-openssl-dev   # build
  libsqlite3-dev                                                              # streamd's library catalog
  libvips-dev libvips-tools                                                   # getCoverArt?size= (libvips, dlopen'd by streamd cover-worker); vipsthumbnail: the bench's peer
  libsodium-dev                                                               # streamd accounts: argon2id password hashes, secretbox, HMAC (CSodium)
  libflac-dev flac                                                            # streamplay's FLAC decoder; flac -d: the tests' reference
  libmp3lame-dev                                                              # streamd: radio channels of mixed formats are encoded to MP3
  libopus-dev libvorbis-dev libogg-dev                                         # Ogg Opus and Vorbis decoders (libogg: only vorbis's ogg_packet); libopus also encodes streamd's Opus transcodes
  opus-tools vorbis-tools                                                     # make media (opusenc, oggenc) and the reference decoders (opusdec, oggdec)
  libsoxr-dev libsonic-dev librubberband-dev                                  # DSP (rubberband: bench program only)
  sox libsox-fmt-mp3 espeak-ng lame ffmpeg                                    # media/make-media.sh
  mpg123 python3-numpy python3-mutagen curl bc tmux time heaptrack openssl                              # reference clients and decoders for tests, bench (heaptrack: allocation count)
  icecast2                                                                    # radio: the peer server in bench/radio.sh (mpv, a radio listener in the tests, is below)
  loudgain                                                                    # writes the ReplayGain tags the --replaygain test plays by
  nginx-light                                                                 # serves `streamd package` output in the HLS test; the peer of bench/library-api.sh
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good      # gst-launch-1.0, souphttpsrc against streamd
  gstreamer1.0-plugins-bad                                                    # hlsdemux2/faad: a strict HLS client in tests
  gstreamer1.0-plugins-base-apps                                              # gst-discoverer-1.0
  python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0               # Tests/hls/gst_switch.py: drives hlsdemux2's connection-speed mid-track
  chromium chromium-driver fonts-dejavu-core                                  # the web page, tested in a real browser
  mpv vlc-bin vlc-plugin-base                                                 # players that open streamd's playlists in tests
  wrk                                                                         # HTTP load generator: bench/library-api.sh
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# selenium drives the Debian chromium through chromium-driver in the web-page test.
python3 -c 'import selenium' 2>/dev/null || python3 -m pip install -q selenium
# The page player's browser test: numpy measures the captured audio, axe-selenium-python bundles axe-core.
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q numpy
python3 -c 'import axe_selenium_python' 2>/dev/null || python3 -m pip install -q axe-selenium-python
# Subsonic clients this project did not write and the OpenAPI schema check (Tests/subsonic/check_subsonic.py).
python3 -c 'import libsonic, libopensonic, jsonschema, rfc3339_validator' 2>/dev/null || python3 -m pip install -q py-sonic py-opensonic jsonschema rfc3339-validator
