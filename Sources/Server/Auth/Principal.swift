/// Who a request acts for, as the access check established it before any route ran: an
/// account (user or admin), or anonymous (no users yet, `--public` listeners, public routes).
public struct Principal: Sendable, Equatable {
    /// The account; nil for anonymous.
    public var user: User?
    /// How the request proved it (for logs and for what a credential may do).
    public var method: Method

    /// How a principal was authenticated.
    public enum Method: String, Sendable, Equatable {
        case none
        case session
        case basic
        case bearer
        case signedURL
        /// Open server: no accounts exist and it listens on loopback; acts as an admin.
        case openServer
    }

    public init(user: User?, method: Method) {
        self.user = user
        self.method = method
    }

    /// Nobody: what a request without credentials is.
    public static let anonymous = Principal(user: nil, method: .none)

    /// The owner of a server without accounts on loopback: everything is allowed, as before accounts.
    public static let openServer = Principal(user: nil, method: .openServer)

    public var isAuthenticated: Bool { user != nil || method == .openServer }
    public var isAdmin: Bool { user?.isAdmin == true || method == .openServer }
    /// The user's name for logs ("-" for anonymous).
    public var logName: String { user?.name ?? (method == .openServer ? "(open)" : "-") }
}
