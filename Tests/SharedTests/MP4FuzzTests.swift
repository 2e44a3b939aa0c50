import Testing
import TestSupport
@testable import StreamShared

/// Hostile-input checks for the MP4 parser: every outcome is a value or a `FormatError`,
/// never a trap, a hang or a huge allocation.
@Suite struct MP4FuzzTests {
    /// A moov with everything the parser reads: a video track first, a multi-entry stsc,
    /// an edit list, ilst tags and iTunSMPB.
    static var builtMoov: [UInt8] {
        var fixture = MP4Fixture()
        fixture.sizes = (0..<24).map { 150 + 7 * $0 }
        fixture.chunkSamples = [1, 5, 5, 4, 4, 4, 1]
        fixture.video = true
        fixture.smpb = " 00000000 00000840 000003C0 0000000000005A00"
        return fixture.moov()
    }

    /// A small whole file: ftyp, moov, mdat.
    static var builtFile: [UInt8] {
        MP4Builder.box("ftyp", Array("M4A ".utf8) + be32(0) + Array("isomM4A ".utf8)) + builtMoov
            + MP4Builder.box("mdat", [UInt8](repeating: 0x21, count: 256))
    }

    /// The moov of the generated track.m4a, when media/make-media.sh has been run.
    static func generatedMoov() throws -> [UInt8]? {
        guard let file = try GeneratedMedia.load("track.m4a") else { return nil }
        let (layout, _) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        guard let range = layout.moovRange else {
            Issue.record("track.m4a has no moov")
            return nil
        }
        return Array(file[range])
    }

    /// Tallies of parse outcomes.
    struct Outcomes {
        var values = 0
        var errors = 0
        var total: Int { values + errors }
    }

    /// Parses `bytes` as a moov and, on success, asks the track every question a player would.
    static func exercise(_ bytes: ArraySlice<UInt8>, _ outcomes: inout Outcomes) {
        do {
            let movie = try MP4Movie.parse(moov: bytes)
            if let track = movie.audio {
                for n in [0, 1, track.sampleCount / 2, track.sampleCount - 1, track.sampleCount, -1] {
                    _ = track.sampleLocation(n)
                    _ = track.decodeTime(ofSample: n)
                }
                _ = track.sampleIndex(atSeconds: 0.05)
                _ = track.sampleIndex(atSeconds: 1e300)
                _ = track.totalTicks
                _ = MP4Movie.gaplessFromEditList(track)
            }
            outcomes.values += 1
        } catch is FormatError {
            outcomes.errors += 1
        } catch {
            Issue.record("not a FormatError: \(error)")
            outcomes.errors += 1
        }
    }

    static func truncationsThrowTruncated(_ moov: [UInt8]) {
        var count = 0, truncated = 0
        Fuzz.forEachTruncation(of: moov) { prefix in
            count += 1
            do {
                _ = try MP4Movie.parse(moov: prefix)
                Issue.record("a \(prefix.count)-byte prefix of a \(moov.count)-byte moov parsed")
            } catch let error as FormatError {
                // Less than the whole moov can only mean "need more bytes".
                if error.isTruncation { truncated += 1 } else { Issue.record("\(prefix.count) bytes: \(error)") }
            } catch {
                Issue.record("not a FormatError: \(error)")
            }
        }
        #expect(count == moov.count)
        #expect(truncated == moov.count)
    }

    static func mutations(_ moov: [UInt8], seed: UInt64 = 0x5EED) -> Outcomes {
        var outcomes = Outcomes()
        Fuzz.forEachMutation(of: moov, count: 10_000, seed: seed) { exercise($0[...], &outcomes) }
        print("MP4 mutations of a \(moov.count)-byte moov: \(outcomes.values) parsed, \(outcomes.errors) refused")
        return outcomes
    }

    @Test(.timeLimit(.scaledMinutes(5))) func builtMoov_everyTruncation() {
        let moov = Self.builtMoov
        #expect((try? MP4Movie.parse(moov: moov[...]))?.audio?.sampleCount == 24, "the seed itself parses")
        Self.truncationsThrowTruncated(moov)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func builtMoov_seededMutations() {
        let outcomes = Self.mutations(Self.builtMoov)
        #expect(outcomes.total == 10_000)
        #expect(outcomes.values > 0, "some mutations still parse (\(outcomes.values))")
        #expect(outcomes.errors > 0, "some mutations are refused (\(outcomes.errors))")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func builtFile_topLevelAndOutline_mutations() {
        let file = Self.builtFile
        var scans = Outcomes(), outlines = Outcomes()
        Fuzz.forEachTruncation(of: file) { prefix in
            // A prefix of a good file with its true size never throws: it only asks for more.
            do {
                _ = try MP4TopLevel.scan(prefix: prefix, fileSize: file.count)
                scans.values += 1
            } catch {
                Issue.record("prefix of \(prefix.count) bytes: \(error)")
            }
        }
        #expect(scans.values == file.count)
        scans = Outcomes()
        Fuzz.forEachMutation(of: file, count: 10_000, seed: 0xF11E) { mutated in
            do {
                let (layout, next) = try MP4TopLevel.scan(prefix: mutated[...], fileSize: mutated.count)
                if let next { #expect(next >= 0) }
                if let moov = layout.moovRange, moov.upperBound <= mutated.count {
                    var ignored = Outcomes()
                    Self.exercise(mutated[moov], &ignored)
                }
                scans.values += 1
            } catch { scans.errors += 1 }
            do {
                _ = try MP4Outline.parse(mutated[...])
                outlines.values += 1
            } catch { outlines.errors += 1 }
        }
        print("MP4 file mutations: scan \(scans.values)/\(scans.errors), outline \(outlines.values)/\(outlines.errors) (values/errors)")
        #expect(scans.total == 10_000 && outlines.total == 10_000)
        #expect(scans.values > 0 && scans.errors > 0, "scan: \(scans.values) values, \(scans.errors) errors")
        #expect(outlines.values > 0 && outlines.errors > 0, "outline: \(outlines.values) values, \(outlines.errors) errors")
    }

    @Test(.timeLimit(.scaledMinutes(5))) func generatedM4A_everyTruncation() throws {
        guard let moov = try Self.generatedMoov() else { return }
        #expect((try? MP4Movie.parse(moov: moov[...]))?.audio != nil, "the seed itself parses")
        Self.truncationsThrowTruncated(moov)
    }

    @Test(.timeLimit(.scaledMinutes(5))) func generatedM4A_seededMutations() throws {
        guard let moov = try Self.generatedMoov() else { return }
        let outcomes = Self.mutations(moov, seed: 0xA4C)
        #expect(outcomes.total == 10_000)
        #expect(outcomes.values > 0, "some mutations still parse (\(outcomes.values))")
        #expect(outcomes.errors > 0, "some mutations are refused (\(outcomes.errors))")
    }
}
