/// A request the server will not answer as asked: the status, the message and any headers the
/// refusal needs (`Allow`, `Retry-After`). Handlers and the work they defer throw it; the core
/// renders it as the contract's JSON error body (`{"error": message}`).
public struct HTTPRefusal: Error, Sendable {
    public var status: Int
    public var message: String
    public var headers: [(String, String)]

    public init(_ status: Int, _ message: String, headers: [(String, String)] = []) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    /// 400: a parameter or path that is not well formed.
    public static func badRequest(_ message: String) -> HTTPRefusal { HTTPRefusal(400, message) }
    /// 404: nothing there.
    public static func notFound(_ message: String = "not found") -> HTTPRefusal { HTTPRefusal(404, message) }

    /// The response that says so.
    public var response: HTTPResponse {
        var response = HTTPResponse.error(status, message)
        response.headers += headers
        return response
    }
}
