/// What a request does with a damaged file the codec can still partly decode: a JPEG cut off
/// mid-download, a PNG with a bad checksum in a late chunk. The levels are libvips's `fail_on`
/// (`none`, `truncated`, `error`, `warning`), each failing on what the ones before it fail on
/// and more; the decoder's ``DecodeIssue``s are what they are checked against. The choice is
/// in every ``ImageRequest`` initialiser (`decoding:`) and is stored as
/// ``ProcessingOptions/decodingStrictness``, part of the memory key (a lenient result never
/// answers a stricter request).
///
/// The default is ``lenient``, as in Nuke, browsers and libvips: on a screen a partly grey
/// picture is better than none. A truncated picture is still never cached as if it were
/// complete (not in memory, not as a rendition, and its bytes not on disk): the next request
/// decodes it again. A server that writes what it decodes to files or caches (thumbnails,
/// renditions) should choose ``strict`` (or at least ``failsOnTruncation``): a truncated upload
/// then fails, and is retried or reported, instead of a grey picture being published; it can
/// make every request at least that strict with
/// ``ImagePipeline/Configuration/decodingStrictness``.
public enum DecodingStrictness: Int, Hashable, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Return what could be decoded (the missing rows of a truncated JPEG grey) with the codec's
    /// complaints in ``ImageResponse/issues``. The default: for display. libvips's `none`.
    case lenient
    /// Fail on data that ends early (``DecodeIssue/Severity/truncated``), nothing else.
    /// libvips's `truncated`.
    case failsOnTruncation
    /// Fail on data that ends early or damage the codec recovered from
    /// (``DecodeIssue/Severity/error``). libvips's `error`.
    case failsOnErrors
    /// Fail where the codec reports anything, warnings included:
    /// ``ImagePipelineError/decodingFailed(_:underlying:)`` with
    /// ``ImagePipelineError/truncatedData(format:message:)`` or
    /// ``ImagePipelineError/corruptData(format:message:)`` inside. For servers and tools that
    /// store or publish the result. libvips's `warning`.
    case strict

    /// Whether a decode that reported `issue` fails at this level.
    public func refuses(_ issue: DecodeIssue) -> Bool {
        switch self {
        case .lenient: return false
        case .failsOnTruncation: return issue.severity == .truncated
        case .failsOnErrors: return issue.severity >= .error
        case .strict: return true
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The case's name (`lenient`), so a ``ProcessingOptions`` prints short.
    public var description: String {
        switch self {
        case .lenient: return "lenient"
        case .failsOnTruncation: return "failsOnTruncation"
        case .failsOnErrors: return "failsOnErrors"
        case .strict: return "strict"
        }
    }
}
