import Testing
@testable import StreamClient

/// streamplay's credentials: the ~/.netrc reader (as curl reads it) and the header values.
@Suite struct ServerCredentialsTests {
    @Test func netrcMachinesAreRead_macrosAndDefaultSkipped() {
        let text = """
        machine music.example.org
          login alice
          password s3cret
        macdef init
        machine evil.example login x password y

        machine 127.0.0.1 login bob password "pw"
        default login anyone password everywhere
        machine other account acct login carol password c
        """
        let entries = ServerCredentials.parseNetrc(text)
        #expect(entries.map(\.host) == ["music.example.org", "127.0.0.1", "other"])
        #expect(entries[0].credential == .basic(user: "alice", password: "s3cret"))
        #expect(entries[1].credential == .basic(user: "bob", password: "pw"))
        #expect(entries[2].credential == .basic(user: "carol", password: "c"))
        // An entry without a password is no credential.
        #expect(ServerCredentials.parseNetrc("machine a login b").isEmpty)
        #expect(ServerCredentials.parseNetrc("").isEmpty)
        // A file with CRLF line ends (edited on Windows) reads the same.
        #expect(ServerCredentials.parseNetrc("machine a\r\nlogin b\r\npassword c\r\n").map(\.credential) == [.basic(user: "b", password: "c")])
    }

    @Test func headerValues() {
        #expect(ServerCredentials.Credential.basic(user: "bob", password: "pw ü").headerValue == "Basic Ym9iOnB3IMO8")
        #expect(ServerCredentials.Credential.bearer("sdk_x").headerValue == "Bearer sdk_x")
    }
}
