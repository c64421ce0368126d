import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Serves `data:` URLs (RFC 2397, parsed as the WHATWG Fetch standard does):
/// `data:[<media type>][;base64],<data>`, the data percent-encoded or base64.
///
/// ```swift
/// let loaders = LoaderRegistry().registering(FileDataLoader()).registering(DataURLLoader())
/// let request = ImageRequest(url: URL(string: "data:image/png;base64,iVBORw0KGgo...")!)
/// ```
///
/// The decoded size is checked against ``maxBodyBytes`` before any buffer is made. A malformed
/// URL fails with ``DataURLError`` (permanent: the same URL fails the same way), one over the
/// limit with `ImagePipelineError.tooLarge(limit:actual:)`. `data:` URLs are never written
/// to the disk cache (it keeps `http`/`https` by default): their bytes are in the URL already.
public struct DataURLLoader: DataLoading {
    /// The largest decoded body accepted, in bytes. Default 10 MB.
    public let maxBodyBytes: Int

    /// `["data"]`.
    public var schemes: Set<String> { ["data"] }

    /// Creates a loader accepting bodies of up to `maxBodyBytes` decoded bytes.
    public init(maxBodyBytes: Int = 10_000_000) {
        self.maxBodyBytes = max(0, maxBodyBytes)
    }

    /// Decodes `request.url`; the media type becomes `ResponseMetadata.contentType`.
    /// - Throws: ``DataURLError``, `ImagePipelineError.tooLarge(limit:actual:)` or `CancellationError`.
    public func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        try Task.checkCancellation()
        let parsed = try DataURL(parsing: request.url.absoluteString, maxBodyBytes: maxBodyBytes)
        request.progress?(Int64(parsed.data.count), Int64(parsed.data.count))
        return .data(parsed.data, ResponseMetadata(contentType: parsed.mediaType, contentLength: Int64(parsed.data.count),
                                                        origin: .local))
    }
}

/// A parsed `data:` URL: its media type, parameters and decoded bytes.
public struct DataURL: Hashable, Sendable {
    /// The media type, lower-case (`"image/png"`); `"text/plain"` when the URL names none.
    public var mediaType: String
    /// The media type's parameters with lower-case names (`["charset": "US-ASCII"]`), values
    /// unquoted; `charset=US-ASCII` when the URL names no media type.
    public var parameters: [String: String]
    /// Whether the data was base64.
    public var isBase64: Bool
    /// The decoded bytes.
    public var data: Data

    /// Parses `string` (`data:…`), decoding at most `maxBodyBytes` bytes.
    /// - Throws: ``DataURLError`` for a malformed URL, `ImagePipelineError.tooLarge(limit:actual:)`
    ///   when the decoded body would exceed `maxBodyBytes` (checked before decoding).
    public init(parsing string: String, maxBodyBytes: Int = 10_000_000) throws {
        let bytes = Array(string.utf8)
        guard bytes.count >= 5, String(decoding: bytes[0..<5], as: UTF8.self).lowercased() == "data:" else {
            throw DataURLError.notADataURL
        }
        guard let comma = bytes[5...].firstIndex(of: UInt8(ascii: ",")) else { throw DataURLError.missingComma }
        var header = String(decoding: bytes[5..<comma], as: UTF8.self).trimmingSpacesAndTabs()
        let body = bytes[(comma + 1)...]

        isBase64 = false
        if let semicolon = header.lastIndex(of: ";"),
           header[header.index(after: semicolon)...].trimmingSpacesAndTabs().lowercased() == "base64" {
            isBase64 = true
            header = String(header[..<semicolon]).trimmingSpacesAndTabs()
        }
        (mediaType, parameters) = try Self.parseMediaType(header)

        // Sizes are checked before the body's buffer is made (the work buffers are never
        // larger than the URL itself): a percent-encoded body decodes to its length less two
        // bytes per escape, base64 to 6 bits per symbol.
        let limit = Int64(maxBodyBytes)
        if !isBase64 {
            let length = body.count - 2 * body.reduce(0) { $0 + ($1 == UInt8(ascii: "%") ? 1 : 0) }
            if length > maxBodyBytes { throw ImagePipelineError.tooLarge(limit: limit, actual: Int64(length)) }
            data = Data(try Self.percentDecoded(body))
        } else {
            let symbols = try Self.percentDecoded(body).filter { !Self.isASCIIWhitespace($0) }
            let length = symbols.reduce(0) { $0 + ($1 == UInt8(ascii: "=") ? 0 : 1) } * 6 / 8
            if length > maxBodyBytes { throw ImagePipelineError.tooLarge(limit: limit, actual: Int64(length)) }
            data = try Self.base64Decoded(symbols)
        }
    }

    private static func isASCIIWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    /// `type/subtype;name=value…` → the lower-case type and the parameters; empty →
    /// `text/plain;charset=US-ASCII` (RFC 2397); `;charset=…` alone → `text/plain` with it.
    private static func parseMediaType(_ header: String) throws -> (String, [String: String]) {
        if header.isEmpty { return ("text/plain", ["charset": "US-ASCII"]) }
        var parts = header.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingSpacesAndTabs() }
        var type = parts.removeFirst().lowercased()
        if type.isEmpty { type = "text/plain" }
        let halves = type.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2, halves.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy(isTokenByte) }) else {
            throw DataURLError.invalidMediaType(header)
        }
        var parameters: [String: String] = [:]
        for part in parts where !part.isEmpty {
            guard let equals = part.firstIndex(of: "=") else { throw DataURLError.invalidMediaType(header) }
            let name = part[..<equals].trimmingSpacesAndTabs().lowercased()
            var value = part[part.index(after: equals)...].trimmingSpacesAndTabs()
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else { throw DataURLError.invalidMediaType(header) }
            parameters[name] = value
        }
        return (type, parameters)
    }

    /// RFC 9110 `tchar`.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// `%XX` → byte; a `%` not followed by two hex digits is ``DataURLError/invalidPercentEncoding``.
    private static func percentDecoded(_ body: ArraySlice<UInt8>) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(body.count)
        var index = body.startIndex
        while index < body.endIndex {
            let byte = body[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < body.endIndex, let high = hexValue(body[index + 1]), let low = hexValue(body[index + 2]) else {
                    throw DataURLError.invalidPercentEncoding(offset: index - body.startIndex)
                }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return out
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// Forgiving base64 (WHATWG) of `symbols` (ASCII whitespace already removed): padding is
    /// optional; a symbol outside the alphabet, or a length of 1 mod 4, is ``DataURLError/invalidBase64``.
    private static func base64Decoded(_ symbols: [UInt8]) throws -> Data {
        var symbols = symbols
        if symbols.count % 4 == 0 {
            if symbols.last == UInt8(ascii: "=") { symbols.removeLast() }
            if symbols.last == UInt8(ascii: "=") { symbols.removeLast() }
        }
        guard symbols.count % 4 != 1 else { throw DataURLError.invalidBase64 }
        var out = Data(capacity: symbols.count / 4 * 3 + 2)
        var accumulator: UInt32 = 0
        var bits = 0
        for symbol in symbols {
            guard let value = base64Value(symbol) else { throw DataURLError.invalidBase64 }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out
    }

    private static func base64Value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return byte - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return byte - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}

/// Why a `data:` URL could not be read. Permanent: the same URL always fails the same way.
public enum DataURLError: PipelineFailure, Hashable, Sendable, CustomStringConvertible {
    /// The string does not start with `data:`.
    case notADataURL
    /// No `,` separates the media type from the data.
    case missingComma
    /// The media type (the text before the comma) is not `type/subtype` with `;name=value` parameters.
    case invalidMediaType(String)
    /// A `%` not followed by two hexadecimal digits, at this byte offset of the data.
    case invalidPercentEncoding(offset: Int)
    /// Base64 data with a character outside the alphabet, or a length no encoding produces.
    case invalidBase64

    /// Always `true`.
    public var isPermanent: Bool { true }

    /// `.notAPicture`: the URL does not hold a picture's bytes.
    public var failureKind: ImagePipelineError.Kind? { .notAPicture }

    /// A sentence saying what is wrong.
    public var description: String {
        switch self {
        case .notADataURL: return "not a data: URL"
        case .missingComma: return "malformed data: URL: no ',' before the data"
        case .invalidMediaType(let text):
            return "malformed data: URL: invalid media type '\(MessageText.escaped(text, limit: 100))'"
        case .invalidPercentEncoding(let offset): return "malformed data: URL: bad percent-encoding at byte \(offset) of the data"
        case .invalidBase64: return "malformed data: URL: invalid base64 data"
        }
    }
}
