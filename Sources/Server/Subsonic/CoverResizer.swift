/// Resizes a cover picture to a thumbnail (JPEG, longer side `size`). This build has no image
/// library: nil, and the original is sent.
enum CoverResizer {
    static func thumbnail(_ source: [UInt8], size: Int) -> [UInt8]? { nil }
}
