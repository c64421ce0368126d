import Foundation
import PipelineCore

/// A server URL in imgproxy's grammar, parsed and checked: its processing options (presets
/// expanded) and its source.
///
/// `/<signature>/<option>/…/plain/<percent-encoded source>[@<ext>]` or
/// `/<signature>/<option>/…/<base64url source, in chunks split by />[.<ext>]`.
public struct ImgproxyURL: Sendable, Hashable {
    /// The options, presets applied (the `default` preset first, then the URL's in order).
    public var options: RenderOptions
    /// The source URL as the client wrote it, decoded (`https://…`, `local:///a.jpg`).
    public var source: String

    /// Parses and verifies `path` (still percent-encoded, without the query).
    /// - Throws: ``ServerError``: 403 for a missing or wrong signature, 400 for a malformed
    ///   path or an unknown, unbuilt or out-of-range option (naming it).
    public static func parse(_ path: String, signing: URLSigning, presets: Presets) throws(ServerError) -> ImgproxyURL {
        throw ServerError(.badRequest, "not built yet")
    }
}

/// How URLs are signed: imgproxy's key and salt pairs (hex), any of which may sign, and the
/// signature's length in bytes before base64url. No pair: unsigned URLs are accepted
/// (any signature segment, `insecure` or `unsafe` by convention).
public struct URLSigning: Sendable, Hashable {
    public var pairs: [(key: [UInt8], salt: [UInt8])]
    /// 1–32 bytes of HMAC-SHA256 kept (imgproxy's `IMGPROXY_SIGNATURE_SIZE`, default 32).
    public var size: Int

    /// No signing.
    public init() {
        pairs = []
        size = 32
    }

    public static func == (lhs: URLSigning, rhs: URLSigning) -> Bool {
        lhs.size == rhs.size && lhs.pairs.count == rhs.pairs.count
            && zip(lhs.pairs, rhs.pairs).allSatisfy { $0.key == $1.key && $0.salt == $1.salt }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(size)
        for pair in pairs {
            hasher.combine(pair.key)
            hasher.combine(pair.salt)
        }
    }
}

/// Named option lists (imgproxy's `IMGPROXY_PRESETS`: `name=rs:fit:300:300/q:80,…`); the preset
/// named `default` applies to every URL.
public struct Presets: Sendable, Hashable {
    /// The presets' option segments by name.
    public var byName: [String: [String]]

    /// No presets.
    public init() { byName = [:] }
}
