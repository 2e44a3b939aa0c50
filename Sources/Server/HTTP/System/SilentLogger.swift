import Logging

extension Logger {
    /// A logger that drops everything: the default of the parts streamd gives its own loggers
    /// (a catalog, store or radio made in a test says nothing unless asked).
    public static func silent(_ label: String) -> Logger {
        Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
    }
}
