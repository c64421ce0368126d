/// Something a decoder saw in a picture it still decoded: the data ends early, the codec met
/// damage it recovered from, or a lesser warning. Decoders report what their C library tells
/// them in ``DecodedImage/issues``; the pipeline carries the issues up to
/// ``ImageResponse/issues`` and refuses the decode where the request's
/// ``DecodingStrictness`` says so (libvips's `fail_on`).
public struct DecodeIssue: Hashable, Sendable, CustomStringConvertible {
    /// How bad an issue is, from least to most: libvips's order, where failing on one level
    /// fails on every level above it too.
    public enum Severity: Int, Hashable, Sendable, Comparable, CustomStringConvertible {
        /// A problem that leaves the pixels as the file means them (an ICC profile ignored, a
        /// bad checksum in an ancillary chunk, data after the end).
        case warning
        /// Damaged data the codec recovered from: some pixels may be wrong (libjpeg's
        /// "Corrupt JPEG data"), but the file is whole.
        case error
        /// The data ends before the picture does: the missing part is filled (grey for JPEG,
        /// transparent or the last row elsewhere). A cut download or upload looks like this.
        case truncated

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        public var description: String {
            switch self {
            case .warning: return "warning"
            case .error: return "error"
            case .truncated: return "truncated"
            }
        }
    }

    /// How bad it is.
    public var severity: Severity
    /// The codec's words for it (a C library's message, unescaped: escape it to print it).
    public var message: String

    /// Creates an issue.
    public init(_ severity: Severity, _ message: String) {
        self.severity = severity
        self.message = message
    }

    /// A ``Severity/warning``.
    public static func warning(_ message: String) -> DecodeIssue { DecodeIssue(.warning, message) }
    /// A ``Severity/error`` the codec recovered from.
    public static func error(_ message: String) -> DecodeIssue { DecodeIssue(.error, message) }
    /// Data that ends early (``Severity/truncated``).
    public static func truncated(_ message: String) -> DecodeIssue { DecodeIssue(.truncated, message) }

    public var description: String { "\(severity): \(message)" }
}

extension Sequence where Element == DecodeIssue {
    /// Whether one of the issues says the data ends early: the picture is not complete.
    public var includesTruncation: Bool { contains { $0.severity == .truncated } }
}
