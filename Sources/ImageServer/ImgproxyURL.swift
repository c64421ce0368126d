import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A server URL in imgproxy's grammar, parsed and checked: its processing options (presets
/// expanded) and its source.
///
/// `/<signature>/<option>/…/plain/<percent-encoded source>[@<ext>]` or
/// `/<signature>/<option>/…/<base64url source, in chunks split by />[.<ext>]`. Options are
/// `name:arg:arg` with imgproxy's long and short names (see ``RenderOptions``); the first
/// segment without a `:` starts the source.
///
/// Read as imgproxy reads them: `resize|rs`, `size|s`, `resizing_type|rt` (fit fill fill-down
/// force auto), `width|w`, `height|h`, `dpr` (0–8], `enlarge|el`, `extend|ex`, `gravity|g` (no so
/// ea we noea nowe soea sowe ce sm fp:x:y, with offsets), `crop|c`, `trim|t`, `padding|pd`,
/// `auto_rotate|ar`, `rotate|rot`, `flip|fl`, `background|bg`, `blur|bl`, `sharpen|sh`,
/// `adjust|a`, `brightness|br`, `contrast|co`, `saturation|sa` (imgproxy Pro's), `watermark|wm`,
/// `strip_metadata|sm`, `strip_color_profile|scp`, `quality|q`, `format_quality|fq`,
/// `format|f|ext`, `cachebuster|cb`, `expires|exp`, `filename|fn`, `return_attachment|att`,
/// `preset|pr`, `max_src_resolution|msr`, `max_animation_frames|maf`. Booleans are Go's (`1 t
/// true 0 f false`). Any other option, imgproxy's (`pixelate`, `min-width`, …) or unknown, is
/// refused with 400 naming it, and so is an argument out of range (a side above 16,384 pixels
/// after `dpr`).
public struct ImgproxyURL: Sendable, Hashable {
    /// The options, presets applied (the `default` preset first, then the URL's in order).
    public var options: RenderOptions
    /// The source URL as the client wrote it, decoded (`https://…`, `local:///a.jpg`).
    public var source: String

    /// Parses and verifies `path` (still percent-encoded, without the query).
    ///
    /// The signature is checked first, over the path as it came (a proxy that merged the
    /// `//` of a plain source's `https://` is forgiven, as imgproxy forgives it), so an
    /// unsigned client learns nothing about the options. `now` decides whether `expires` has
    /// passed.
    /// - Throws: ``ServerError``: 403 for a missing or wrong signature, 404 for a URL past its
    ///   `expires`, 400 for a malformed path or an unknown, unbuilt or out-of-range option
    ///   (naming it).
    public static func parse(_ path: String, signing: URLSigning, presets: Presets, now: Date = Date()) throws(ServerError) -> ImgproxyURL {
        guard path.hasPrefix("/"), let end = path.dropFirst().firstIndex(of: "/") else {
            throw ServerError(.badRequest, "malformed path: expected /<signature>/<options>/<source>")
        }
        let signature = path[path.index(after: path.startIndex)..<end]
        let rest = repairedPlainScheme(String(path[end...]))
        guard !signature.isEmpty else { throw ServerError(.badRequest, "malformed path: the signature segment is empty") }
        guard signing.verifies(signature, for: rest) else {
            throw ServerError(.forbidden, signing.isEnabled && Base64URL.decoded(signature) == nil ? "malformed signature" : "wrong signature")
        }

        let segments = rest.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
        if let first = segments.first, RenderOptions.ResizingType(rawValue: String(first)) != nil {
            throw ServerError(.badRequest, "imgproxy's deprecated basic URL format is not supported: use rs:\(first):…")
        }
        var parser = OptionParser(presets: presets)
        var options = RenderOptions()
        if presets.byName["default"] != nil { try parser.apply("preset", ["default"], to: &options) }
        var index = 0
        while index < segments.count, segments[index].contains(":") {
            let parts = segments[index].split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            try parser.apply(parts[0], Array(parts.dropFirst()), to: &options)
            index += 1
        }
        let (source, ext) = try decodedSource(segments[index...])
        if let ext { options.format = try format(ext) }
        try OptionParser.validate(options)
        if let expires = options.expires, expires <= now { throw ServerError(.notFound, "the URL expired") }
        return ImgproxyURL(options: options, source: source)
    }

    /// The output format for an extension or `f:` name, imgproxy's names of the formats we
    /// encode: jpg jpeg png webp avif gif jxl heic.
    static func format(named name: String) -> ImageFormat? {
        switch name.lowercased() {
        case "jpg", "jpeg": return .jpeg
        case "png": return .png
        case "webp": return .webp
        case "avif": return .avif
        case "gif": return .gif
        case "jxl": return OutputNegotiation.jxl
        case "heic": return .heif
        default: return nil
        }
    }

    private static func format(_ ext: String) throws(ServerError) -> ImageFormat {
        guard let format = format(named: ext) else {
            throw ServerError(.badRequest, "unsupported output format \"\(MessageText.escaped(ext, limit: 40))\": expected jpg, png, webp, avif, gif, jxl or heic")
        }
        return format
    }

    /// The source and its extension from the segments after the options: `plain/<escaped>[@ext]`
    /// or base64url chunks `[.ext]`.
    private static func decodedSource(_ segments: ArraySlice<Substring>) throws(ServerError) -> (String, String?) {
        guard let first = segments.first else { throw ServerError(.badRequest, "malformed path: no source URL") }
        if first == "enc" { throw ServerError(.badRequest, "encrypted source URLs (/enc/) are not supported") }
        let plain = first == "plain" && segments.count > 1
        let joined = plain ? segments.dropFirst().joined(separator: "/") : segments.joined()
        let parts = joined.split(separator: plain ? "@" : ".", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { throw ServerError(.badRequest, "malformed source: more than one format given") }
        let ext = parts.count == 2 && !parts[1].isEmpty ? String(parts[1]) : nil
        let encoded = parts[0]
        guard !encoded.isEmpty else { throw ServerError(.badRequest, "malformed path: the source URL is empty") }
        let source: String?
        if plain {
            source = String(encoded).removingPercentEscapes
        } else {
            source = Base64URL.decoded(encoded).flatMap { String(validating: $0, as: UTF8.self) }
        }
        guard let source, !source.isEmpty else {
            throw ServerError(.badRequest, plain ? "malformed source: bad percent-encoding" : "malformed source: not base64url of a UTF-8 URL")
        }
        return (source, ext)
    }

    /// `rest` with a plain source's `scheme:/x` made `scheme://x` again: some proxies and load
    /// balancers merge the `//` of a path, and imgproxy repairs it before checking the signature.
    private static func repairedPlainScheme(_ rest: String) -> String {
        guard let plain = rest.firstRange(of: "/plain/") else { return rest }
        let tail = rest[plain.upperBound...]
        guard let colon = tail.firstIndex(of: ":"), colon > tail.startIndex else { return rest }
        let scheme = tail[..<colon]
        guard let head = scheme.first, head.isASCII, head.isLetter,
              scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") })
        else { return rest }
        let after = tail[tail.index(after: colon)...]
        guard after.hasPrefix("/"), !after.hasPrefix("//"), after.count > 1 else { return rest }
        return String(rest[..<colon]) + ":/" + after
    }
}
