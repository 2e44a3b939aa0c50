// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "streamd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "streamd", targets: ["streamd"]),
        .executable(name: "streamplay", targets: ["streamplay"]),
        .library(name: "StreamShared", targets: ["StreamShared"]),
        .library(name: "StreamServer", targets: ["StreamServer"]),
        .library(name: "StreamClient", targets: ["StreamClient"]),
        .library(name: "StreamAudio", targets: ["StreamAudio"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // 1.16.2: LogHandler.log(event:) (streamd package's handler).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-atomics", from: "1.2.0"),
    ],
    targets: [
        // C libraries, each wrapped by exactly one Swift type.
        .systemLibrary(name: "CMPG123", path: "Sources/CMPG123", pkgConfig: "libmpg123",
                       providers: [.apt(["libmpg123-dev"])]),
        .systemLibrary(name: "CFAAD", path: "Sources/CFAAD", pkgConfig: "faad2",
                       providers: [.apt(["libfaad-dev"])]),
        // Headers only: libasound is loaded with dlopen when an ALSA output opens (ALSAOutput).
        .systemLibrary(name: "CALSA", path: "Sources/CALSA", providers: [.apt(["libasound2-dev"])]),

        .systemLibrary(name: "CFLAC", path: "Sources/CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev"])]),
        .systemLibrary(name: "COpus", path: "Sources/COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        // libogg only for the ogg_packet struct libvorbis takes: StreamShared's own parser pages.
        .systemLibrary(name: "CVorbis", path: "Sources/CVorbis", pkgConfig: "vorbis", providers: [.apt(["libvorbis-dev", "libogg-dev"])]),
        .systemLibrary(name: "CSoxr", path: "Sources/CSoxr", pkgConfig: "soxr",
                       providers: [.apt(["libsoxr-dev"])]),
        // libsonic-dev has no .pc file: header and library are in the default paths.
        .systemLibrary(name: "CSonic", path: "Sources/CSonic", providers: [.apt(["libsonic-dev"])]),
        // GPL-2+: only the bench program links it (see docs/DSP.md), streamplay never does.
        .systemLibrary(name: "CRubberBand", path: "Sources/CRubberBand", pkgConfig: "rubberband",
                       providers: [.apt(["librubberband-dev"])]),
        // Headers only: libcurl is loaded with dlopen at the first https:// request (CurlLibrary).
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Server only (radio channels that transcode): streamplay never links it.
        .systemLibrary(name: "CLAME", path: "Sources/CLAME", pkgConfig: "lame",
                       providers: [.apt(["libmp3lame-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        // Accounts: argon2id password hashes, secretbox, HMAC-SHA-256, BLAKE2b (StreamAuth's `Sodium`).
        .systemLibrary(name: "CSodium", path: "Sources/CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // Declarations only: libvips is loaded with dlopen by `streamd cover-worker` alone (VipsLibrary).
        .systemLibrary(name: "CVips", path: "Sources/CVips", providers: [.apt(["libvips-dev"])]),
        // Linux headers (epoll, eventfd, sendfile) that the Glibc module does not expose.
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),

        // CLinux for the one thread type's name (pthread_setname_np).
        .target(name: "StreamShared", dependencies: ["CLinux"], path: "Sources/Shared"),
        // The stderr log handler both programs bootstrap swift-log with (no Foundation).
        .target(name: "StreamLog", dependencies: [.product(name: "Logging", package: "swift-log")], path: "Sources/Log"),
        // The decoders (libmpg123, libfaad2, libFLAC, libopus, libvorbis) and the resampler (libsoxr), wrapped once,
        // for streamplay's pipeline and streamd's transcoding radio channels alike.
        .target(name: "StreamAudio", dependencies: ["StreamShared", "CMPG123", "CFAAD", "CFLAC", "COpus", "CVorbis", "CSoxr"], path: "Sources/Audio"),
        // streamd, one module per job (docs/DESIGN.md, "Modules"): an HTTP core that knows nothing
        // of music; the library (catalog, scan, store, search, analysis workers); HLS; radio; and
        // the server that composes them into streamd's routes.
        .target(name: "StreamHTTP",
                dependencies: ["StreamShared", "CLinux", .product(name: "Logging", package: "swift-log"),
                               .product(name: "Atomics", package: "swift-atomics")],
                path: "Sources/Server/HTTP"),
        .target(name: "StreamLibrary",
                dependencies: ["StreamHTTP", "StreamShared", "CLinux", "CSQLite", .product(name: "Atomics", package: "swift-atomics"),
                               .product(name: "Logging", package: "swift-log")],
                path: "Sources/Server/Library"),
        .target(name: "StreamHLS", dependencies: ["StreamHTTP", "StreamLibrary", "StreamShared", .product(name: "Logging", package: "swift-log")],
                path: "Sources/Server/HLS"),
        .target(name: "StreamRadio",
                dependencies: ["StreamHTTP", "StreamLibrary", "StreamHLS", "StreamShared", "StreamAudio", "CLinux", "CLAME",
                               .product(name: "Atomics", package: "swift-atomics"), .product(name: "Logging", package: "swift-log")],
                path: "Sources/Server/Radio"),
        // Accounts, sessions, signed URLs and the failed-login back-off (docs/DESIGN.md, "Access").
        .target(name: "StreamAuth",
                dependencies: ["StreamHTTP", "StreamLibrary", "StreamShared", "CSodium", .product(name: "Logging", package: "swift-log")],
                path: "Sources/Server/Auth"),
        // The Subsonic/OpenSubsonic API at /rest/ over the catalog (docs/DESIGN.md, "Subsonic"); the
        // accounts come in through its `SubsonicAccounts` (StreamServer adapts StreamAuth's store).
        .target(name: "StreamSubsonic",
                dependencies: ["StreamHTTP", "StreamLibrary", "StreamShared", "CVips", .product(name: "Logging", package: "swift-log")],
                path: "Sources/Server/Subsonic"),
        .target(name: "StreamServer",
                dependencies: ["StreamWebPage", "StreamHTTP", "StreamLibrary", "StreamHLS", "StreamRadio", "StreamAuth", "StreamSubsonic", "StreamShared", "StreamAudio", "CLinux",
                               .product(name: "Logging", package: "swift-log"), .product(name: "Atomics", package: "swift-atomics")],
                path: "Sources/Server/Routes"),
        .target(name: "StreamClient",
                dependencies: ["StreamShared", "StreamAudio", "CALSA", "CCurl", "CSonic", "CLinux",
                               .product(name: "Atomics", package: "swift-atomics"), .product(name: "Logging", package: "swift-log")],
                path: "Sources/Client"),
        .executableTarget(name: "streamd",
                          dependencies: ["StreamServer", "StreamAuth", "StreamHTTP", "StreamLibrary", "StreamHLS", "StreamRadio", "StreamSubsonic", "StreamShared", "CLinux",
                                         "StreamLog", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                                         .product(name: "Logging", package: "swift-log")],
                          path: "Sources/streamd"),
        // No ArgumentParser: on Linux it links FoundationEssentials (2.4 MB of RSS in every run).
        .executableTarget(name: "streamplay", dependencies: ["StreamClient", "StreamLog", .product(name: "Logging", package: "swift-log")],
                          path: "Sources/streamplay"),

        // The library page's files (Sources/Web), embedded at build time: the plugin runs embedweb,
        // which writes WebAssets.swift into the build's work directory (docs/DESIGN.md, "The page").
        .target(name: "StreamWebPage", path: "Sources/Web", plugins: ["WebAssetsPlugin"]),
        .executableTarget(name: "embedweb", path: "Sources/embedweb"),
        .plugin(name: "WebAssetsPlugin", capability: .buildTool(), dependencies: ["embedweb"], path: "Plugins/WebAssetsPlugin"),

        // Bench only: the GPL peer (rubberband) and the program bench/dsp.sh drives.
        .target(name: "DSPPeers", dependencies: ["CRubberBand", "StreamClient", "StreamAudio"], path: "Sources/DSPPeers"),
        .executableTarget(name: "dspbench", dependencies: ["StreamClient", "StreamShared", "DSPPeers"],
                          path: "Sources/dspbench"),

        // The tests' shared helpers (timing scale, paths, raw socket client, fake HTTP server,
        // commands): not a test target itself, only linked into them.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "SharedTests", dependencies: ["StreamShared", "TestSupport"], path: "Tests/SharedTests"),
        .testTarget(name: "ServerTests", dependencies: ["StreamServer", "StreamAuth", "StreamHTTP", "StreamLibrary", "StreamHLS", "StreamRadio", "StreamSubsonic",
                                                       "StreamShared", "StreamAudio", "TestSupport",
                                                       .product(name: "Logging", package: "swift-log")], path: "Tests/ServerTests"),
        .testTarget(name: "ClientTests", dependencies: ["StreamClient", "StreamShared", "StreamAudio", "TestSupport"],
                    path: "Tests/ClientTests"),
        .testTarget(name: "EndToEndTests", dependencies: ["StreamShared", "TestSupport"], path: "Tests/EndToEndTests"),
    ]
)
