#if canImport(Glibc)
import Glibc
#endif
internal import CCurl

/// libcurl, loaded with dlopen at the first https:// request, so that `streamplay --help` and
/// http:// playback never map it (with its TLS, GSSAPI and LDAP dependencies, 7 MB of RSS).
/// Owns the dlsym'd function pointers; `CurlEasy` and `CurlMulti` are the handles built on it,
/// and nothing past these three types sees an unsafe pointer of libcurl's.
final class CurlLibrary: @unchecked Sendable {
    // @unchecked: every field is set once in init and never changes; libcurl's functions are
    // thread-safe on distinct handles after curl_global_init, which init calls once.
    fileprivate typealias Handle = UnsafeMutableRawPointer
    fileprivate let easyInit: @convention(c) () -> Handle?
    fileprivate let easyCleanup: @convention(c) (Handle?) -> Void
    fileprivate let easyReset: @convention(c) (Handle?) -> Void
    fileprivate let easyPerform: @convention(c) (Handle?) -> CURLcode
    fileprivate let easyPause: @convention(c) (Handle?, Int32) -> CURLcode
    fileprivate let easyStrerror: @convention(c) (CURLcode) -> UnsafePointer<CChar>?
    fileprivate let easySetopt: Handle
    fileprivate let easyGetinfo: Handle
    fileprivate let multiInit: @convention(c) () -> Handle?
    fileprivate let multiCleanup: @convention(c) (Handle?) -> CURLMcode
    fileprivate let multiAdd: @convention(c) (Handle?, Handle?) -> CURLMcode
    fileprivate let multiRemove: @convention(c) (Handle?, Handle?) -> CURLMcode
    fileprivate let multiPerform: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> CURLMcode
    fileprivate let multiInfoRead: @convention(c) (Handle?, UnsafeMutablePointer<Int32>?) -> UnsafeMutablePointer<CURLMsg>?
    fileprivate let multiPoll: @convention(c) (Handle?, UnsafeMutablePointer<curl_waitfd>?, UInt32, Int32,
                                               UnsafeMutablePointer<Int32>?) -> CURLMcode
    fileprivate let multiWakeup: @convention(c) (Handle?) -> CURLMcode
    fileprivate let slistAppend: @convention(c) (UnsafeMutablePointer<curl_slist>?, UnsafePointer<CChar>?) -> UnsafeMutablePointer<curl_slist>?
    fileprivate let slistFreeAll: @convention(c) (UnsafeMutablePointer<curl_slist>?) -> Void

    /// The library names tried in order; `STREAMPLAY_LIBCURL` names another (a libcurl built
    /// elsewhere, or a missing one to see the error).
    static var candidates: [String] {
        if let name = getenv("STREAMPLAY_LIBCURL") { return [String(cString: name)] }
        return ["libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4"]
    }

    /// The library, loaded on first use (once per process; a failure is kept and given again).
    static func shared() throws(SourceError) -> CurlLibrary { try loaded.get() }

    private static let loaded: Result<CurlLibrary, SourceError> = Result { () throws(SourceError) in try CurlLibrary() }

    private init() throws(SourceError) {
        var handle: UnsafeMutableRawPointer?
        var why = ""
        for name in Self.candidates {
            handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)
            if handle != nil { break }
            why = dlerror().map { String(cString: $0) } ?? name
        }
        guard let handle else { throw .unreachable("https:// needs libcurl, which could not be loaded (\(why))") }
        func symbol<T>(_ name: String, _ type: T.Type = T.self) throws(SourceError) -> T {
            guard let address = dlsym(handle, name) else {
                throw .unreachable("https:// needs libcurl 7.68 or later: \(name) is missing")
            }
            return unsafeBitCast(address, to: T.self)
        }
        easyInit = try symbol("curl_easy_init")
        easyCleanup = try symbol("curl_easy_cleanup")
        easyReset = try symbol("curl_easy_reset")
        easyPerform = try symbol("curl_easy_perform")
        easyPause = try symbol("curl_easy_pause")
        easyStrerror = try symbol("curl_easy_strerror")
        easySetopt = try symbol("curl_easy_setopt", UnsafeMutableRawPointer.self)
        easyGetinfo = try symbol("curl_easy_getinfo", UnsafeMutableRawPointer.self)
        multiInit = try symbol("curl_multi_init")
        multiCleanup = try symbol("curl_multi_cleanup")
        multiAdd = try symbol("curl_multi_add_handle")
        multiRemove = try symbol("curl_multi_remove_handle")
        multiPerform = try symbol("curl_multi_perform")
        multiInfoRead = try symbol("curl_multi_info_read")
        multiPoll = try symbol("curl_multi_poll")
        multiWakeup = try symbol("curl_multi_wakeup")
        slistAppend = try symbol("curl_slist_append")
        slistFreeAll = try symbol("curl_slist_free_all")
        let globalInit: @convention(c) (Int) -> CURLcode = try symbol("curl_global_init")
        guard globalInit(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK else { throw .unreachable("curl_global_init failed") }
    }

    /// libcurl's text for a result code.
    func text(_ code: CURLcode) -> String { easyStrerror(code).map { String(cString: $0) } ?? "curl error \(code.rawValue)" }
}

/// One curl easy handle, its options, and its data and header callbacks as Swift closures.
final class CurlEasy {
    let library: CurlLibrary
    fileprivate let handle: CurlLibrary.Handle
    /// The lists given to `setList`, freed with the handle (libcurl does not copy them).
    private var lists: [UnsafeMutablePointer<curl_slist>] = []
    /// Body bytes: return how many were taken (all of them), `CurlEasy.pause`, or 0 to abort.
    var onData: ((UnsafeRawBufferPointer) -> Int)?
    /// One header line as received (status lines included), without its line end.
    var onHeader: ((String) -> Void)?
    /// The write callback's "pause this transfer" answer (CURL_WRITEFUNC_PAUSE).
    static let pause = ccurl_writefunc_pause()

    init(_ library: CurlLibrary) throws(SourceError) {
        guard let handle = library.easyInit() else { throw .network("curl_easy_init failed") }
        self.library = library
        self.handle = handle
        installCallbacks()
    }

    deinit {
        library.easyCleanup(handle)
        for list in lists { library.slistFreeAll(list) }
    }

    /// Back to a fresh handle's options (the connection is kept), callbacks and headers cleared.
    func reset() {
        library.easyReset(handle)
        for list in lists { library.slistFreeAll(list) }
        lists = []
        onData = nil
        onHeader = nil
        installCallbacks()
    }

    private func installCallbacks() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        ccurl_setopt_callback(library.easySetopt, handle, CURLOPT_WRITEFUNCTION) { data, size, count, userdata in
            guard let userdata else { return 0 }
            let easy = Unmanaged<CurlEasy>.fromOpaque(userdata).takeUnretainedValue()
            let bytes = UnsafeRawBufferPointer(start: data, count: size * count)
            return easy.onData.map { $0(bytes) } ?? bytes.count
        }
        ccurl_setopt_pointer(library.easySetopt, handle, CURLOPT_WRITEDATA, me)
        ccurl_setopt_callback(library.easySetopt, handle, CURLOPT_HEADERFUNCTION) { data, size, count, userdata in
            guard let userdata else { return 0 }
            let easy = Unmanaged<CurlEasy>.fromOpaque(userdata).takeUnretainedValue()
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
            easy.onHeader?(String(trimmingWhitespace(line)))
            return size * count
        }
        ccurl_setopt_pointer(library.easySetopt, handle, CURLOPT_HEADERDATA, me)
    }

    func set(_ option: CURLoption, _ value: Int) { ccurl_setopt_long(library.easySetopt, handle, option, value) }

    /// A text option (libcurl copies it).
    func set(_ option: CURLoption, _ value: String) { ccurl_setopt_string(library.easySetopt, handle, option, value) }

    /// A list option: extra request headers (`CURLOPT_HTTPHEADER`, `Name: value` lines) or
    /// status-line aliases of 200 (`CURLOPT_HTTP200ALIASES`).
    func setList(_ option: CURLoption, _ lines: [String]) {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines { list = library.slistAppend(list, line) }
        if let list { lists.append(list) }
        ccurl_setopt_slist(library.easySetopt, handle, option, list)
    }

    /// Runs the transfer to its end on the calling thread.
    func perform() -> CURLcode { library.easyPerform(handle) }

    /// Resumes a transfer the data callback paused.
    func resume() { _ = library.easyPause(handle, ccurl_pause_cont()) }

    /// The last response's status code.
    var responseCode: Int {
        var status = 0
        ccurl_getinfo_long(library.easyGetinfo, handle, CURLINFO_RESPONSE_CODE, &status)
        return status
    }

    /// The URL of the last request after redirects.
    var effectiveURL: String? {
        var text: UnsafeMutablePointer<CChar>?
        ccurl_getinfo_string(library.easyGetinfo, handle, CURLINFO_EFFECTIVE_URL, &text)
        return text.map { String(cString: $0) }
    }
}

/// A curl multi handle running one easy handle at a time, pumped by the caller.
final class CurlMulti {
    let library: CurlLibrary
    private let handle: CurlLibrary.Handle
    private var added: CurlEasy?

    init(_ library: CurlLibrary) throws(SourceError) {
        guard let handle = library.multiInit() else { throw .network("curl_multi_init failed") }
        self.library = library
        self.handle = handle
    }

    deinit {
        if let added { _ = library.multiRemove(handle, added.handle) }
        _ = library.multiCleanup(handle)
    }

    func add(_ easy: CurlEasy) {
        if let added { _ = library.multiRemove(handle, added.handle) }
        added = easy
        _ = library.multiAdd(handle, easy.handle)
    }

    /// Moves the transfer on; its result once it has ended, else nil.
    func perform() -> CURLcode? {
        var running: Int32 = 0
        _ = library.multiPerform(handle, &running)
        var queued: Int32 = 0
        var result: CURLcode?
        while let message = library.multiInfoRead(handle, &queued) {
            if message.pointee.msg == CURLMSG_DONE { result = message.pointee.data.result }
        }
        return result
    }

    /// Waits up to `milliseconds` for socket activity or a `Waker`'s call.
    func poll(milliseconds: Int32) {
        var fds: Int32 = 0
        _ = library.multiPoll(handle, nil, 0, milliseconds, &fds)
    }

    /// Wakes this multi handle's `poll` from another thread (curl_multi_wakeup is thread-safe).
    struct Waker: @unchecked Sendable {
        // @unchecked: only curl_multi_wakeup, which libcurl documents as thread-safe, uses the handle,
        // and the owner stops every call before the multi handle is freed.
        fileprivate let library: CurlLibrary
        fileprivate let handle: CurlLibrary.Handle
        func wake() { _ = library.multiWakeup(handle) }
    }

    var waker: Waker { Waker(library: library, handle: handle) }
}
