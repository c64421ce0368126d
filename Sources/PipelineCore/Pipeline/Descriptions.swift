#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Short descriptions of the values an app prints: never the pixels (`print(response.bitmap)`
// used to print every byte), a URL cut to its start and its length when it is long.

/// `url` as a value's description shows it: ``MessageText/url(_:limit:)`` to 96 characters.
func shortText(_ url: URL) -> String { MessageText.url(url, limit: 96) }

/// A byte count with thousands separators: `262,144`.
func groupedCount(_ count: Int) -> String {
    var digits = String(count.magnitude)
    var groups: [Substring] = []
    while digits.count > 3 {
        groups.insert(Substring(digits.suffix(3)), at: 0)
        digits.removeLast(3)
    }
    groups.insert(Substring(digits), at: 0)
    return (count < 0 ? "-" : "") + groups.joined(separator: ",")
}

extension TargetSize: CustomStringConvertible {
    /// `"original"` or `"256×256"`.
    public var description: String {
        switch self {
        case .original: return "original"
        case .pixels(let size): return size.description
        }
    }
}

extension ImagePriority: CustomStringConvertible {
    /// `"visible"` or `"prefetch"`.
    public var description: String { self == .visible ? "visible" : "prefetch" }
}

extension Bitmap: CustomStringConvertible, CustomDebugStringConvertible {
    /// `"Bitmap(256×256, rgba8Premultiplied, 262,144 bytes)"`: never the pixels.
    public var description: String {
        "Bitmap(\(width)×\(height), \(pixelFormat), \(groupedCount(cost)) bytes)"
    }

    /// ``description`` plus the row stride.
    public var debugDescription: String {
        "Bitmap(\(width)×\(height), \(pixelFormat), bytesPerRow: \(bytesPerRow), \(groupedCount(cost)) bytes)"
    }
}

extension ImageResponse: CustomStringConvertible, CustomDebugStringConvertible {
    /// `"ImageResponse(256×171 from network, jpeg 1024×683, 48,213 bytes downloaded)"`.
    public var description: String {
        var text = "ImageResponse(\(bitmap.size) from \(source.rawValue)\(isStale ? " (stale, revalidating)" : ""), "
            + "\(format) \(originalSize)"
        if downloadedBytes > 0 { text += ", \(groupedCount(downloadedBytes)) bytes downloaded" }
        if !warnings.isEmpty { text += ", \(warnings.count) warning\(warnings.count == 1 ? "" : "s")" }
        return text + ")"
    }

    /// ``description`` plus the fetch URL (shortened), the bitmap and the first warning.
    public var debugDescription: String {
        var text = String(description.dropLast())
        if let fetchURL { text += ", \(shortText(fetchURL))" }
        text += ", \(bitmap.debugDescription)"
        if let first = warnings.first { text += ", first warning: \(MessageText.escaped(first, limit: 120))" }
        return text + ")"
    }
}

extension ImageRequest: CustomStringConvertible, CustomDebugStringConvertible {
    /// `"ImageRequest(https://…/a.jpg, 256×256 fill, visible)"`, with the processors and cache
    /// key when there are any.
    public var description: String {
        var text = "ImageRequest(\(shortText(url)), \(targetSize)"
        if targetSize != .original { text += " \(contentMode.rawValue)" }
        if contentMode == .fill && cropAnchor != .center { text += " \(cropAnchor)" }
        text += ", \(priority)"
        if !processors.isEmpty { text += ", processors: [\(processors.map(\.identifier).joined(separator: ", "))]" }
        if let cacheKey { text += ", cacheKey: \(MessageText.escaped(cacheKey, limit: 96))" }
        return text + ")"
    }

    /// ``description`` plus the cache and revalidation policies and the header names (not
    /// their values, which may be secrets).
    public var debugDescription: String {
        var text = String(description.dropLast())
        text += ", cachePolicy: \(cachePolicy), revalidation: \(revalidation)"
        if processing != ProcessingOptions() { text += ", \(processing)" }
        if !headers.isEmpty { text += ", headers: [\(headers.keys.sorted().joined(separator: ", "))]" }
        return text + ")"
    }
}

extension ImageKey: CustomStringConvertible, CustomDebugStringConvertible {
    /// `"ImageKey(https://…/a.jpg?w=320, 256×256 fill)"`, with the processors when there are any.
    public var description: String {
        var text = "ImageKey(\(shortText(cacheURL)), \(targetSize)"
        if targetSize != .original { text += " \(contentMode.rawValue)" }
        if contentMode == .fill && cropAnchor != .center { text += " \(cropAnchor)" }
        if !processors.isEmpty { text += ", processors: [\(processors.map(\.identifier).joined(separator: ", "))]" }
        return text + ")"
    }

    /// ``description`` plus the processing options.
    public var debugDescription: String {
        String(description.dropLast()) + ", \(processing))"
    }
}
