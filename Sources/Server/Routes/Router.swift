import StreamShared

/// Maps requests to responses: the HTTP contract of streamd (docs/DESIGN.md).
public final class Router: Sendable {
    public let resolver: PathResolver
    public let catalog: Catalog
    /// The HLS routes; nil when streamd runs with `--no-hls`.
    public let hls: HLSService?

    public init(resolver: PathResolver, catalog: Catalog, hls: HLSService? = nil) {
        self.resolver = resolver
        self.catalog = catalog
        self.hls = hls
    }

    /// The request handler for `HTTPServer`.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        guard request.method == "GET" || request.method == "HEAD" else {
            var response = HTTPResponse.error(405, "method \(request.method) not allowed")
            response.headers.append(("Allow", "GET, HEAD"))
            return response
        }
        let path = request.path
        if path == "/" || path == "/index.html" {
            return .bytes(200, Array(WebPage.render(catalog.tracks()).utf8), contentType: "text/html; charset=utf-8")
        }
        if path.hasPrefix("/media/") {
            return media(request, relative: path.dropFirst("/media/".count))
        }
        if path == "/api/tracks" {
            return .bytes(200, Array(catalog.tracksJSON().utf8), contentType: "application/json")
        }
        if path == "/api/status" {
            return .bytes(200, Array(catalog.statusJSON().utf8), contentType: "application/json")
        }
        if path.hasPrefix("/api/index/") {
            // ?t=SECONDS narrows the table to the points just around that time (a client seeking).
            let around = request.queryValue("t").flatMap(Double.init).flatMap { $0.isFinite ? $0 : nil }
            return index(relative: path.dropFirst("/api/index/".count), around: around)
        }
        if let hls, path.hasPrefix("/hls/") {
            return hls.vod(request, rest: path.dropFirst("/hls/".count))
        }
        if let hls, path.hasPrefix("/live/") {
            return hls.live(request, rest: path.dropFirst("/live/".count))
        }
        return .error(404, "not found")
    }

    /// The file for a relative URL path, or the error response that refuses it.
    private func resolve(_ relative: Substring) -> (path: String?, refusal: HTTPResponse?) {
        do {
            return (try resolver.resolve(encoded: relative), nil)
        } catch .malformed {
            return (nil, .error(400, "bad path"))
        } catch .outsideRoot {
            return (nil, .error(403, "forbidden"))
        } catch {
            return (nil, .error(404, "not found"))
        }
    }

    private func media(_ request: HTTPRequest, relative: Substring) -> HTTPResponse {
        let resolved = resolve(relative)
        guard let absolute = resolved.path else { return resolved.refusal ?? .error(404, "not found") }
        let file: OpenFile
        do {
            file = try OpenFile(path: absolute)
        } catch {
            return .error(404, "not found")
        }
        let contentType = catalog.contentType(forAbsolutePath: absolute)
        return FileResponder.respond(to: request, file: file, contentType: contentType)
    }

    private func index(relative: Substring, around: Double?) -> HTTPResponse {
        let resolved = resolve(relative)
        guard let absolute = resolved.path else { return resolved.refusal ?? .error(404, "not found") }
        switch catalog.seekIndexJSON(forAbsolutePath: absolute, around: around) {
        case .success(let json):
            return .bytes(200, Array(json.utf8), contentType: "application/json")
        case .failure(let error):
            return .error(422, "\(error)")
        }
    }
}
