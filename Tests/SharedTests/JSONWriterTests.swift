import Testing
@testable import StreamShared

@Suite struct JSONWriterTests {
    @Test func keepsFieldOrderAndTypes() {
        var w = JSONObjectWriter()
        w.add("container", "mp3")
        w.add("sample_rate", 44_100)
        w.add("duration_s", 12.5)
        w.add("title", nil as String?)
        w.add("gapless", true)
        #expect(w.text == #"{"container":"mp3","sample_rate":44100,"duration_s":12.5,"title":null,"gapless":true}"#)
    }

    @Test func escapesControlCharactersAndQuotes() {
        #expect(JSONObjectWriter.quote("a\"b\\c\n\u{01}é") == #""a\"b\\c\n\u0001é""#)
    }

    @Test func numbersAreFixedNotation() {
        #expect(JSONObjectWriter.number(3) == "3")
        #expect(JSONObjectWriter.number(0.0000123) == "0.000012")
        #expect(JSONObjectWriter.number(.nan) == "null")
        #expect(JSONObjectWriter.number(-1.25) == "-1.25")
    }
}
