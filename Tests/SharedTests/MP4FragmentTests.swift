import Foundation
import Testing
import TestSupport
@testable import StreamShared

/// Builds moof boxes for tests: each trun field is written only when its flag is set.
enum FragmentBuilder {
    typealias B = MP4Builder

    struct Run {
        var durations: [Int]? = nil
        var sizes: [Int]? = nil
        var flags: [Int]? = nil
        var compositionOffsets: [Int]? = nil
        var dataOffset: Int? = nil
        var firstSampleFlags: Int? = nil
        /// Written as the sample count when there is no per-sample field to count.
        var count: Int? = nil
    }

    static func trun(_ run: Run) -> [UInt8] {
        var flags = 0
        if run.dataOffset != nil { flags |= 0x1 }
        if run.firstSampleFlags != nil { flags |= 0x4 }
        if run.durations != nil { flags |= 0x100 }
        if run.sizes != nil { flags |= 0x200 }
        if run.flags != nil { flags |= 0x400 }
        if run.compositionOffsets != nil { flags |= 0x800 }
        let count = run.count ?? run.durations?.count ?? run.sizes?.count ?? 0
        var body = be32(count)
        if let offset = run.dataOffset { body += be32(Int(UInt32(bitPattern: Int32(offset)))) }
        if let first = run.firstSampleFlags { body += be32(first) }
        let perSample = run.durations != nil || run.sizes != nil || run.flags != nil || run.compositionOffsets != nil
        for i in 0..<(perSample ? count : 0) {
            if let d = run.durations { body += be32(d[i]) }
            if let s = run.sizes { body += be32(s[i]) }
            if let f = run.flags { body += be32(f[i]) }
            if let c = run.compositionOffsets { body += be32(c[i]) }
        }
        return B.fullBox("trun", flags: flags, body)
    }

    /// A tfhd with the optional fields its arguments ask for.
    static func tfhd(trackID: Int, baseDataOffset: Int? = nil, descriptionIndex: Int? = nil, defaultDuration: Int? = nil,
                     defaultSize: Int? = nil, defaultFlags: Int? = nil, baseIsMoof: Bool = false) -> [UInt8] {
        var flags = baseIsMoof ? 0x020000 : 0
        var body = be32(trackID)
        if let v = baseDataOffset { flags |= 0x1; body += be64(v) }
        if let v = descriptionIndex { flags |= 0x2; body += be32(v) }
        if let v = defaultDuration { flags |= 0x8; body += be32(v) }
        if let v = defaultSize { flags |= 0x10; body += be32(v) }
        if let v = defaultFlags { flags |= 0x20; body += be32(v) }
        return B.fullBox("tfhd", flags: flags, body)
    }

    static func tfdt(_ time: Int, version: UInt8 = 1) -> [UInt8] {
        B.fullBox("tfdt", version: version, version == 1 ? be64(time) : be32(time))
    }

    static func moof(sequence: Int = 1, trafs: [[UInt8]]) -> [UInt8] {
        B.box("moof", B.fullBox("mfhd", be32(sequence)) + trafs.flatMap { B.box("traf", $0) })
    }
}

@Suite struct MP4FragmentTests {
    typealias B = MP4Builder
    typealias F = FragmentBuilder

    @Test func trexDefaults_andDefaultBaseIsMoof() throws {
        let trex = MP4TrackExtends(trackID: 2, defaultSampleDuration: 1024, defaultSampleSize: 300)
        let moof = F.moof(sequence: 7, trafs: [F.tfhd(trackID: 2, baseIsMoof: true) + F.tfdt(44_100)
                                                  + F.trun(.init(dataOffset: 100, count: 3))])
        let fragment = try MP4Fragment.parse(moof: moof[...], at: 5000, trackID: 2, defaults: trex)
        #expect(fragment.sequenceNumber == 7)
        #expect(fragment.baseMediaDecodeTime == 44_100)
        #expect(fragment.samples == [.init(offset: 5100, size: 300, duration: 1024), .init(offset: 5400, size: 300, duration: 1024),
                                     .init(offset: 5700, size: 300, duration: 1024)])
        #expect(fragment.duration == 3072)
        #expect(fragment.dataEnd == 6000)
    }

    @Test func tfhdDefaults_overrideTrex_andTrunFieldsOverrideBoth() throws {
        let trex = MP4TrackExtends(trackID: 1, defaultSampleDuration: 1, defaultSampleSize: 1)
        let traf = F.tfhd(trackID: 1, descriptionIndex: 1, defaultDuration: 2048, defaultSize: 10, defaultFlags: 0x0200_0000,
                          baseIsMoof: true)
            + F.trun(.init(sizes: [5, 6], dataOffset: 0, firstSampleFlags: 0x0200_0000))
            + F.trun(.init(durations: [100, 200], flags: [0, 0], compositionOffsets: [0, 0]))
        let fragment = try MP4Fragment.parse(moof: F.moof(trafs: [traf])[...], at: 0, trackID: 1, defaults: trex)
        // The second trun has no data offset: its samples follow the first run's.
        #expect(fragment.samples == [.init(offset: 0, size: 5, duration: 2048), .init(offset: 5, size: 6, duration: 2048),
                                     .init(offset: 11, size: 10, duration: 100), .init(offset: 21, size: 10, duration: 200)])
    }

    @Test func explicitBaseDataOffset_isAbsolute() throws {
        let traf = F.tfhd(trackID: 1, baseDataOffset: 1_000_000, defaultDuration: 1024, defaultSize: 50)
            + F.trun(.init(dataOffset: 8, count: 2))
        let fragment = try MP4Fragment.parse(moof: F.moof(trafs: [traf])[...], at: 77, trackID: 1, defaults: nil)
        #expect(fragment.samples.map(\.offset) == [1_000_008, 1_000_058])
    }

    @Test func noBaseFlags_secondTrafContinuesAfterTheFirstTrafsData() throws {
        // Legacy rule (§8.8.7.1): the first traf starts at the moof, later ones where the previous data ended.
        let video = F.tfhd(trackID: 1, defaultDuration: 3000, defaultSize: 400) + F.trun(.init(dataOffset: 200, count: 2))
        let audio = F.tfhd(trackID: 2, defaultDuration: 1024, defaultSize: 100) + F.tfdt(0, version: 0) + F.trun(.init(count: 3))
        let fragment = try MP4Fragment.parse(moof: F.moof(trafs: [video, audio])[...], at: 10_000, trackID: 2, defaults: nil)
        #expect(fragment.samples.map(\.offset) == [11_000, 11_100, 11_200])
        #expect(fragment.baseMediaDecodeTime == 0)
    }

    @Test func otherTracksAreSkipped_andTrexOfAnotherTrackDoesNotApply() throws {
        let trex = MP4TrackExtends(trackID: 9, defaultSampleDuration: 777, defaultSampleSize: 777)
        let traf = F.tfhd(trackID: 3, baseIsMoof: true) + F.trun(.init(durations: [1], sizes: [2], dataOffset: 0))
        let fragment = try MP4Fragment.parse(moof: F.moof(trafs: [traf])[...], at: 0, trackID: 4, defaults: trex)
        #expect(fragment.samples.isEmpty)
        #expect(fragment.dataEnd == nil)
        let own = try MP4Fragment.parse(moof: F.moof(trafs: [F.tfhd(trackID: 3, baseIsMoof: true) + F.trun(.init(count: 1))])[...],
                                        at: 0, trackID: 3, defaults: trex)
        #expect(own.samples == [.init(offset: 0, size: 0, duration: 0)])
    }

    @Test func trunCountBeyondItsBox_throwsInvalid() {
        var trun = F.trun(.init(durations: [1, 2], sizes: [3, 4]))
        trun.replaceSubrange(12..<16, with: be32(0x00FF_FFFF))
        let moof = F.moof(trafs: [F.tfhd(trackID: 1, baseIsMoof: true) + trun])
        #expect(throws: FormatError.self) { try MP4Fragment.parse(moof: moof[...], at: 0, trackID: 1, defaults: nil) }
    }

    @Test func hugeCountWithoutPerSampleFields_isRefusedWithoutAllocating() {
        let moof = F.moof(trafs: [F.tfhd(trackID: 1, defaultDuration: 1, defaultSize: 1, baseIsMoof: true)
                                  + F.trun(.init(count: 0xFFFF_FFFF))])
        #expect(throws: FormatError.self) { try MP4Fragment.parse(moof: moof[...], at: 0, trackID: 1, defaults: nil) }
    }

    @Test func negativeDataOffsetBeforeTheFile_throwsInvalid() {
        let moof = F.moof(trafs: [F.tfhd(trackID: 1, defaultSize: 1, baseIsMoof: true) + F.trun(.init(dataOffset: -50, count: 1))])
        #expect(throws: FormatError.self) { try MP4Fragment.parse(moof: moof[...], at: 10, trackID: 1, defaults: nil) }
        // The same offset from a moof far enough in is fine.
        #expect((try? MP4Fragment.parse(moof: moof[...], at: 100, trackID: 1, defaults: nil))?.samples.first?.offset == 50)
    }

    @Test func overflowingSampleOffsets_throwInvalid() {
        let moof = F.moof(trafs: [F.tfhd(trackID: 1, baseDataOffset: Int.max - 10, baseIsMoof: false)
                                  + F.trun(.init(sizes: [6, 6]))])
        #expect(throws: FormatError.self) { try MP4Fragment.parse(moof: moof[...], at: 0, trackID: 1, defaults: nil) }
    }

    @Test func trafWithoutTfhd_throwsInvalid() {
        let moof = F.moof(trafs: [F.trun(.init(count: 1))])
        #expect(throws: FormatError.self) { try MP4Fragment.parse(moof: moof[...], at: 0, trackID: 1, defaults: nil) }
    }

    @Test func truncatedMoof_throwsTruncation_innerLie_throwsInvalid() throws {
        let moof = F.moof(trafs: [F.tfhd(trackID: 1, baseIsMoof: true) + F.trun(.init(durations: [1], sizes: [2]))])
        do {
            _ = try MP4Fragment.parse(moof: moof.dropLast(3), at: 0, trackID: 1, defaults: nil)
            Issue.record("a cut moof must throw")
        } catch let error as FormatError {
            #expect(error.isTruncation, "\(error)")
        }
        // tfhd claims more bytes of fields than it holds: the whole moof is there, so this is a lie.
        var lying = F.moof(trafs: [F.tfhd(trackID: 1) + F.trun(.init(count: 0))])
        let at = try #require(lying.firstRange(of: Array("tfhd".utf8))).upperBound
        lying[at + 3] = 0x3B            // every optional field present, none written
        do {
            _ = try MP4Fragment.parse(moof: lying[...], at: 0, trackID: 1, defaults: nil)
            Issue.record("a lying tfhd must throw")
        } catch let error as FormatError {
            #expect(!error.isTruncation, "\(error)")
        }
    }

    @Test func notAMoof_throwsInvalid() {
        #expect(throws: FormatError.self) {
            try MP4Fragment.parse(moof: B.box("mdat", [1, 2, 3])[...], at: 0, trackID: 1, defaults: nil)
        }
    }

    @Test func mvex_trexAndMehd_areParsed() throws {
        var fixture = MP4Fixture()
        fixture.mvex = true
        var moov = fixture.moov()
        // Add an mehd (version 1) to the fixture's mvex.
        let mvexAt = try #require(moov.firstRange(of: Array("mvex".utf8))).lowerBound - 4
        let mehd = B.fullBox("mehd", version: 1, be64(123_456))
        moov.insert(contentsOf: mehd, at: mvexAt + 8)
        MP4Tests.fixSize(of: "mvex", in: &moov, delta: mehd.count)
        MP4Tests.fixSize(of: "moov", in: &moov, delta: mehd.count)
        let movie = try MP4Movie.parse(moov: moov[...])
        #expect(movie.isFragmented)
        #expect(movie.fragmentDuration == 123_456)
        #expect(movie.trackExtends == [MP4TrackExtends(trackID: 2, defaultSampleDescriptionIndex: 1)])
        #expect(movie.audioTrackExtends?.trackID == 2)
    }

    // MARK: mfra / tfra

    static func tfra(version: UInt8, trackID: Int, entries: [(Int, Int)], lengthSizes: (Int, Int, Int) = (0, 0, 0)) -> [UInt8] {
        var body = be32(trackID) + be32(lengthSizes.0 << 4 | lengthSizes.1 << 2 | lengthSizes.2) + be32(entries.count)
        let extra = lengthSizes.0 + lengthSizes.1 + lengthSizes.2 + 3
        for (time, offset) in entries {
            body += version == 1 ? be64(time) + be64(offset) : be32(time) + be32(offset)
            body += [UInt8](repeating: 1, count: extra)
        }
        return B.fullBox("tfra", version: version, body)
    }

    static func mfra(_ children: [UInt8]) -> [UInt8] {
        let size = 8 + children.count + 16
        return B.box("mfra", children + B.fullBox("mfro", be32(size)))
    }

    @Test(arguments: [UInt8(0), 1])
    func tfra_entriesAndMfroSize(version: UInt8) throws {
        let mfra = Self.mfra(Self.tfra(version: version, trackID: 5, entries: [(0, 100)]) +
                             Self.tfra(version: version, trackID: 1, entries: [(0, 900), (88_200, 40_000), (176_400, 80_000)],
                                       lengthSizes: (3, 1, 2)))
        #expect(MP4RandomAccess.mfraSize(fromLast16: mfra.suffix(16)) == mfra.count)
        let table = try #require(try MP4RandomAccess.parse(mfra: mfra[...], trackID: 1))
        #expect(table.entries == [.init(time: 0, moofOffset: 900), .init(time: 88_200, moofOffset: 40_000),
                                  .init(time: 176_400, moofOffset: 80_000)])
        #expect(table.entry(atOrBefore: 100_000)?.moofOffset == 40_000)
        #expect(table.entry(atOrBefore: 88_200)?.moofOffset == 40_000)
        #expect(table.entry(atOrBefore: 10)?.moofOffset == 900)
        #expect(try MP4RandomAccess.parse(mfra: mfra[...], trackID: 3) == nil)
    }

    @Test func tfra_lyingCountAndTimesOutOfOrder_throw() {
        var lying = Self.mfra(Self.tfra(version: 0, trackID: 1, entries: [(0, 1)]))
        lying.replaceSubrange(28..<32, with: be32(0x7FFF_FFFF))       // number_of_entry
        #expect(throws: FormatError.self) { try MP4RandomAccess.parse(mfra: lying[...], trackID: 1) }
        let backwards = Self.mfra(Self.tfra(version: 0, trackID: 1, entries: [(500, 1), (100, 2)]))
        #expect(throws: FormatError.self) { try MP4RandomAccess.parse(mfra: backwards[...], trackID: 1) }
    }

    @Test func mfro_notThere_givesNil() {
        #expect(MP4RandomAccess.mfraSize(fromLast16: [UInt8](repeating: 0, count: 16)[...]) == nil)
        #expect(MP4RandomAccess.mfraSize(fromLast16: B.fullBox("mfro", be32(8))[...]) == nil)   // smaller than itself
        #expect(MP4RandomAccess.mfraSize(fromLast16: [1, 2, 3][...]) == nil)
    }

    // MARK: Generated media

    /// The fragmented file of the media library: every moof parses, the fragments add up to
    /// the analyzer's totals, and its mfra table points at the same moofs as the seek index.
    @Test func generatedFragmentedM4A_fragmentsAndMfraAgree() throws {
        guard let file = try GeneratedMedia.load("fragmented.m4a") else { return }
        let (layout, _) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        #expect(layout.isFragmented)
        let moovRange = try #require(layout.moovRange)
        let movie = try MP4Movie.parse(moov: file[moovRange])
        let track = try #require(movie.audio)
        #expect(track.sampleCount == 0, "ffmpeg's empty_moov holds no samples")
        var samples = 0, ticks = 0
        var moofs: [Int] = []
        var previousEnd = 0
        for box in layout.boxes where box.type == "moof" {
            let range = box.offset..<(box.offset + (box.size ?? 0))
            let fragment = try MP4Fragment.parse(moof: file[range], at: box.offset, trackID: track.trackID,
                                                 defaults: movie.audioTrackExtends)
            // Each fragment's samples sit in the mdat right after its moof, back to back.
            let mdat = try #require(layout.boxes.first { $0.offset == range.upperBound && $0.type == "mdat" })
            #expect(fragment.samples.first?.offset == mdat.offset + mdat.headerSize)
            #expect(fragment.dataEnd == mdat.offset + (mdat.size ?? 0))
            #expect(fragment.baseMediaDecodeTime == ticks, "tfdt is the running time")
            #expect(box.offset > previousEnd)
            previousEnd = box.offset
            samples += fragment.samples.count
            ticks += fragment.duration
            moofs.append(box.offset)
        }
        let analysis = try TrackAnalyzer.analyze(MemoryBytes(file))
        #expect(analysis.frames == samples)
        #expect(analysis.totalSamples == ticks)
        #expect(analysis.seekIndex.points.map(\.byte) == moofs, "one seek point per fragment, at its moof")
        #expect(analysis.notes.contains { $0.contains("encoder delay assumed") })
        let mfraSize = try #require(MP4RandomAccess.mfraSize(fromLast16: file.suffix(16)))
        let table = try #require(try MP4RandomAccess.parse(mfra: file.suffix(mfraSize), trackID: track.trackID))
        #expect(table.entries.map(\.moofOffset) == moofs)
        #expect(table.entries.map { Double($0.time) / Double(track.timescale) } == analysis.seekIndex.points.map(\.t))
    }
}

/// Hostile moof boxes: every outcome is a fragment or a `FormatError`, never a trap, a hang or
/// a huge allocation.
@Suite struct MP4FragmentFuzzTests {
    typealias F = FragmentBuilder

    static var builtMoof: [UInt8] {
        let audio = F.tfhd(trackID: 2, descriptionIndex: 1, defaultDuration: 1024, defaultSize: 10, defaultFlags: 0, baseIsMoof: true)
            + F.tfdt(1 << 40) + F.trun(.init(sizes: [5, 6, 7], dataOffset: 300, firstSampleFlags: 0))
            + F.trun(.init(durations: [1024, 512], sizes: [8, 9], flags: [0, 0], compositionOffsets: [0, 0]))
        let other = F.tfhd(trackID: 1, baseDataOffset: 4096, defaultDuration: 3000, defaultSize: 400) + F.trun(.init(count: 2))
        return F.moof(sequence: 3, trafs: [other, audio])
    }

    static func check(_ bytes: ArraySlice<UInt8>, _ values: inout Int, _ errors: inout Int) {
        do {
            let fragment = try MP4Fragment.parse(moof: bytes, at: 1000, trackID: 2,
                                                 defaults: MP4TrackExtends(trackID: 2, defaultSampleDuration: 1024, defaultSampleSize: 3))
            #expect(fragment.samples.count <= MP4Fragment.maxSamples)
            values += 1
        } catch is FormatError {
            errors += 1
        } catch {
            Issue.record("unexpected error type: \(error)")
        }
    }

    @Test func builtMoof_everyTruncationAndSeededMutations() {
        var values = 0, errors = 0
        Fuzz.forEachTruncation(of: Self.builtMoof) { Self.check($0, &values, &errors) }
        Fuzz.forEachMutation(of: Self.builtMoof, count: 10_000, seed: 0xF4A6) { Self.check($0[...], &values, &errors) }
        #expect(values > 0 && errors > 0, "both outcomes occur: \(values) values, \(errors) errors")
    }

    @Test func generatedMoof_seededMutations() throws {
        guard let file = try GeneratedMedia.load("fragmented.m4a") else { return }
        let (layout, _) = try MP4TopLevel.scan(prefix: file[...], fileSize: file.count)
        let moof = try #require(layout.boxes.first { $0.type == "moof" })
        let bytes = Array(file[moof.offset..<(moof.offset + (moof.size ?? 0))])
        var values = 0, errors = 0
        Fuzz.forEachTruncation(of: bytes) { Self.check($0, &values, &errors) }
        Fuzz.forEachMutation(of: bytes, count: 10_000, seed: 0xF4A7) { Self.check($0[...], &values, &errors) }
        #expect(values > 0 && errors > 0, "both outcomes occur: \(values) values, \(errors) errors")
        // The mfra at the end of the same file, truncated and mutated.
        let mfraSize = try #require(MP4RandomAccess.mfraSize(fromLast16: file.suffix(16)))
        let mfra = Array(file.suffix(mfraSize))
        Fuzz.forEachMutation(of: mfra, count: 2_000, seed: 0xF4A8) { mutated in
            do { _ = try MP4RandomAccess.parse(mfra: mutated[...], trackID: 1) } catch is FormatError {} catch {
                Issue.record("unexpected error type: \(error)")
            }
        }
    }
}
