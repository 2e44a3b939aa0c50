import StreamShared
import StreamHTTP
import StreamAuth

/// The login page (`/login`), its script (`/login.js`, no inline script) and the security
/// headers every HTML document of streamd is sent with.
public enum WebLogin {
    static let pagePath = "/login"
    static let scriptPath = "/login.js"

    /// The login form. The script posts the name and password as Basic credentials to
    /// `/api/login` (no request body: streamd reads none but a radio source's), which sets the
    /// session cookie, then goes to the page.
    static let html = """
    <!DOCTYPE html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>streamd: log in</title>
    <style>
      body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; display: grid; place-items: center; min-height: 100vh; }
      form { background: #fff; border: 1px solid #ddd; border-radius: 8px; padding: 1.5rem 2rem; display: grid; gap: .7rem; min-width: 18rem; }
      h1 { font-size: 1.2rem; margin: 0 0 .3rem; }
      input { font: inherit; padding: .45rem .7rem; border: 1px solid #bbb; border-radius: 6px; }
      button { font: inherit; padding: .45rem; border-radius: 6px; border: 1px solid #888; background: #eee; cursor: pointer; }
      #message { color: #a00; min-height: 1.4em; margin: 0; }
    </style></head>
    <body>
    <form id="login" action="/api/login" method="post">
      <h1>streamd</h1>
      <label>User <input id="user" name="user" autocomplete="username" required autofocus></label>
      <label>Password <input id="password" name="password" type="password" autocomplete="current-password" required></label>
      <button type="submit">Log in</button>
      <p id="message" role="alert"></p>
    </form>
    <script src="/login.js"></script>
    </body></html>

    """

    static let script = """
    'use strict';
    document.getElementById('login').addEventListener('submit', async (event) => {
      event.preventDefault();
      const user = document.getElementById('user').value;
      const password = document.getElementById('password').value;
      const message = document.getElementById('message');
      message.textContent = '';
      // btoa takes Latin-1 only: UTF-8 bytes first (RFC 7617's charset="UTF-8").
      const bytes = new TextEncoder().encode(user + ':' + password);
      const credentials = btoa(String.fromCharCode(...bytes));
      try {
        const response = await fetch('/api/login', { method: 'POST', credentials: 'same-origin',
                                                    headers: { 'Authorization': 'Basic ' + credentials } });
        if (response.ok) { location.replace('/'); return; }
        const retry = response.headers.get('Retry-After');
        message.textContent = response.status === 429
          ? 'Too many failed logins: try again in ' + (retry || 'a few') + ' s.'
          : 'Wrong user name or password.';
      } catch (error) {
        message.textContent = 'The server did not answer.';
      }
    });

    """

    static let pageBytes: [UInt8] = Array(html.utf8)
    static let scriptBytes: [UInt8] = Array(script.utf8)
    static let pagePolicy = contentSecurityPolicy(for: html)
    /// From the bytes served at `/`, whatever the page holds (inline blocks or files under /web/).
    static let mainPagePolicy = contentSecurityPolicy(for: String(decoding: WebPage.bytes, as: UTF8.self))

    /// The CSP of an HTML document: nothing from other origins, no framing, and inline
    /// `<script>` and `<style>` blocks allowed by their SHA-256 (computed from the document
    /// itself, so the page can change without the policy going stale). A document with `style=`
    /// attributes gets `'unsafe-inline'` styles instead (a hash cannot cover an attribute).
    static func contentSecurityPolicy(for html: String) -> String {
        func hashes(of tag: String) -> [String] {
            var found: [String] = []
            var rest = html[...]
            while let open = rest.range(of: "<\(tag)") {
                guard let headEnd = rest[open.upperBound...].firstIndex(of: ">") else { break }
                let head = rest[open.upperBound..<headEnd]
                guard let close = rest[headEnd...].range(of: "</\(tag)>") else { break }
                let body = rest[rest.index(after: headEnd)..<close.lowerBound]
                if !head.contains("src=") {
                    found.append("'sha256-\(Base64.encode(Sodium.sha256(Array(body.utf8))))'")
                }
                rest = rest[close.upperBound...]
            }
            return found
        }
        let scripts = (["'self'"] + hashes(of: "script")).joined(separator: " ")
        let styles = html.contains(" style=\"") ? "'self' 'unsafe-inline'" : (["'self'"] + hashes(of: "style")).joined(separator: " ")
        return "default-src 'self'; script-src \(scripts); style-src \(styles); img-src 'self' data: blob:; "
            + "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    }

    /// The headers of an HTML document with the policy `csp`.
    static func htmlHeaders(csp: String) -> [(String, String)] {
        [("Content-Security-Policy", csp), ("X-Frame-Options", "DENY")]
    }

    /// Headers every response gets: no MIME sniffing; no Referer to other sites (signed links
    /// must not leak through it).
    static let commonHeaders: [(String, String)] = [("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "same-origin")]
}
