#!/usr/bin/env bash
# Builds the libFuzzer binary .build-fuzz/streamfuzz: StreamShared and the HTTP folder of
# the server (StreamHTTP) compiled from source with -sanitize=fuzzer,address, linked with the harness in
# Fuzz/Targets. One binary for every target (FUZZ_TARGET picks one), so it compiles once.
# Rebuilds only what changed (make-style timestamps). See Fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${FUZZ_BUILD_DIR:-.build-fuzz}
mkdir -p "$OUT/modules"
FLAGS=(-O -g -sanitize=fuzzer,address -parse-as-library -swift-version 6 -enable-testing -package-name streamd)

# Newest mtime among the given files (0 when none).
newest() { local t=0 f m; for f in "$@"; do m=$(stat -c %Y "$f"); ((m > t)) && t=$m; done; echo "$t"; }
# Whether the target file is missing or older than any input.
stale() { local target=$1; shift; [[ ! -e $target ]] || (( $(newest "$@") > $(stat -c %Y "$target") )); }

# One library module per source folder: objects plus .swiftmodule, -enable-testing so the
# harness reaches internal parsers (ID3v1, APE, Lyrics3) with @testable import.
module() {
    local name=$1; shift
    # Extra compiler flags, then `--`, then the sources (no flags: just the sources).
    local extra=()
    if [[ " $* " == *" -- "* ]]; then
        while [[ $1 != -- ]]; do extra+=("$1"); shift; done
        shift
    fi
    local sources=("$@")
    # The file list too: a file moved out of the folder leaves every mtime older than the object.
    local list="$OUT/$name.sources"
    if stale "$OUT/$name.o" "${sources[@]}" "$0" || ! printf '%s\n' "${sources[@]}" | cmp -s - "$list"; then
        echo "fuzz: compiling $name (${#sources[@]} files)" >&2
        swiftc "${FLAGS[@]}" "${extra[@]}" -module-name "$name" -wmo -I "$OUT/modules" \
            -emit-module -emit-module-path "$OUT/modules/$name.swiftmodule" \
            -c -o "$OUT/$name.o" "${sources[@]}"
        touch "$OUT/$name.o"    # swiftc leaves an unchanged output's mtime alone
        printf '%s\n' "${sources[@]}" > "$list"
    fi
}

mapfile -t shared < <(find Sources/Shared -name '*.swift' | sort)
# CLinux: the thread type (Shared/System) names its threads with pthread_setname_np.
module StreamShared -I Sources/CLinux -- "${shared[@]}"
# The decoders (libmpg123, libfaad2, libopus, libvorbis, libsoxr wrappers) for the channel decode path: the C
# libraries are not instrumented, so coverage guides through our Swift around them.
mapfile -t audio < <(find Sources/Audio -name '*.swift' | sort)
AUDIO_C=(-I Sources/CMPG123 -I Sources/CFAAD -I Sources/CFLAC -I Sources/COpus -I Sources/CVorbis -I Sources/CSoxr -I Sources/CLinux)
# It imports StreamShared: a rebuilt StreamShared means a rebuilt StreamAudio.
if [[ -e $OUT/StreamAudio.o && $OUT/StreamShared.o -nt $OUT/StreamAudio.o ]]; then rm -f "$OUT/StreamAudio.o"; fi
module StreamAudio "${AUDIO_C[@]}" -- "${audio[@]}"
# The channel's MP3 encoder (libmp3lame's one wrapper), which runs in streamd on samples a
# decode worker made from a file: one file of Sources/Server, with the CLAME module map.
if [[ -e $OUT/StreamEncoder.o && $OUT/StreamShared.o -nt $OUT/StreamEncoder.o ]]; then rm -f "$OUT/StreamEncoder.o"; fi
module StreamEncoder -I Sources/CLAME -I Sources/CLinux -- Sources/Server/Radio/LAMEEncoder.swift Sources/Server/Radio/Transcode/AudioEncoder.swift
# The HTTP request and range parsers: the top-level files of Sources/Server/HTTP (StreamHTTP)
# but the response writer, which opens files through its System folder; the loops, the system
# calls and the responses live in subfolders. Whatever parser files the folder gains or loses,
# they build here as a module of their own, without the rest of the server.
mapfile -t http < <(find Sources/Server/HTTP -maxdepth 1 -name '*.swift' ! -name 'HTTPResponse*' | sort)
# The request parser reads its field lines with StreamShared's reader: rebuilt with it.
if [[ -e $OUT/StreamHTTP.o && $OUT/StreamShared.o -nt $OUT/StreamHTTP.o ]]; then rm -f "$OUT/StreamHTTP.o"; fi
module StreamHTTP -I Sources/CLinux -- "${http[@]}"

mapfile -t harness < <(find Fuzz/Targets -name '*.swift' | sort)
if stale "$OUT/streamfuzz" "${harness[@]}" "$OUT/StreamShared.o" "$OUT/StreamAudio.o" "$OUT/StreamEncoder.o" "$OUT/StreamHTTP.o"; then
    echo "fuzz: linking $OUT/streamfuzz" >&2
    swiftc "${FLAGS[@]}" "${AUDIO_C[@]}" -I Sources/CLAME -module-name StreamFuzz -I "$OUT/modules" \
        "${harness[@]}" "$OUT/StreamShared.o" "$OUT/StreamAudio.o" "$OUT/StreamEncoder.o" "$OUT/StreamHTTP.o" \
        -o "$OUT/streamfuzz.new" \
        2> >(grep -v "Cannot export local symbol '__asan" >&2)   # gold's noise about ASan's own symbols
    mv -f "$OUT/streamfuzz.new" "$OUT/streamfuzz"   # a rename: a fuzzer still running keeps its binary
fi
