import Foundation
import Testing
import TestSupport

/// The library page in a real headless Chromium (Tests/browser/check_page.py drives it): small
/// HTML, the album grid with covers, search as you type within 300 ms, an album played in order
/// from track to track, and every track of the library found by searching and played.
@Suite(.ownThreads) struct WebPageBrowserTests {
    @Test(.timeLimit(.scaledMinutes(3))) func pagePlaysEveryTrackInChromium() throws {
        let library = try LibraryAPITests.makeLibrary()
        defer { try? FileManager.default.removeItem(at: library) }
        let server = try StreamdProcess(folder: library, extraArguments: ["--quiet"])
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/browser/check_page.py").path
        let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("streamd-page-\(getpid()).png")
        defer { try? FileManager.default.removeItem(at: screenshot) }
        let result = try runCommand(try #require(which("python3")), [script, server.baseURL, "--every-track", "--advances", "3",
                                                                    "--screenshot", screenshot.path],
                                    timeout: 150)
        let output = String(decoding: result.stdout, as: UTF8.self) + String(decoding: result.stderr, as: UTF8.self)
        #expect(result.status == 0, "\(output)")
        #expect(output.contains(" passed, 0 failed"), "\(output)")
        #expect(FileManager.default.fileExists(atPath: screenshot.path), "a screenshot was taken")
    }
}
