import Testing
@testable import StreamShared

/// The JSON reader streamplay uses for streamd's seek index: RFC 8259 values, refusals with
/// the offset, and a depth bound.
@Suite struct JSONReaderTests {
    private func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Array(text.utf8)) }

    @Test func seekIndexShape_readsPointsAsNumbers() throws {
        let value = try parse(#" {"points":[{"t":0,"byte":417},{"t":0.5,"byte":8833}],"encoder_delay":576,"x":null} "#)
        let points = try #require(value["points"]?.array)
        #expect(points.count == 2)
        #expect(points[1]["t"]?.double == 0.5)
        #expect(points[1]["byte"]?.int == 8833)
        #expect(points[0]["t"]?.double == 0)
        #expect(value["encoder_delay"]?.int == 576)
        #expect(value["x"] == .null)
        #expect(value["missing"] == nil)
    }

    @Test func fractionalNumber_isNotAnInt() throws {
        #expect(try parse("12.5").int == nil)
        #expect(try parse("-3e2").int == -300)
        #expect(try parse("1E+3").double == 1000)
    }

    @Test func stringEscapes_areDecoded() throws {
        #expect(try parse(#""a\"b\\c\/d\n\t\u00e9\ud83c\udfb5""#) == .string("a\"b\\c/d\n\té🎵"))
        #expect(try parse(#""\ud800x""#) == .string("\u{FFFD}x"))
        #expect(try parse(#""plain é""#) == .string("plain é"))
    }

    @Test func literalsAndEmptyContainers() throws {
        #expect(try parse("[true,false,null,{},[]]") == .array([.bool(true), .bool(false), .null, .object([:]), .array([])]))
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", ".5", "+1", "-", "1e", "tru", "\"abc", "\"a\u{01}\"",
                      "\"\\x\"", "\"\\u12\"", "[1] 2", "{\"a\":1,}", "1e999"])
    func malformed_throwsWithOffset(_ text: String) {
        #expect(throws: JSONError.self) { try parse(text) }
    }

    @Test func deepNesting_isRefused() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONError.self) { try parse(deep) }
        let shallow = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect((try? parse(shallow)) != nil)
    }
}
