/// The library page's files: this folder's `.html`, `.css` and `.js`, carried in the binary. Their
/// Swift form (`WebAssets`) is written at build time by WebAssetsPlugin, so the files here are the
/// only copy; this folder being a module's own makes the build notice a file added or removed.
public enum WebPageFiles {
    /// Each file: its name in Sources/Web, its Content-Type and its text (exactly the file's bytes).
    public static var all: [(name: String, contentType: String, text: String)] { WebAssets.files }
}
