import PipelineCore

/// Why a QOI file cannot be decoded: the plugin's own error type. The pipeline hands it to
/// callers unchanged inside ``PipelineCore/ImagePipelineError/decodingFailed(_:underlying:)``
/// and, as every case is ``PipelineFailure/isPermanent``, remembers the failure in its
/// negative cache (the same bytes will not decode better a second later).
public enum QOIError: PipelineFailure, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the 14-byte header (or no `qoif` magic).
    case truncatedHeader(byteCount: Int)
    /// The header gives a width or height of 0.
    case emptySize(width: Int, height: Int)
    /// The header's channel count is not 3 (RGB) or 4 (RGBA).
    case badChannels(Int)
    /// The header's colorspace is not 0 (sRGB, linear alpha) or 1 (all linear).
    case badColorspace(Int)
    /// The pixel data ends before every pixel is decoded (checked up front against the least
    /// data that many pixels could take, so a lying header allocates nothing).
    case truncatedPixels(expected: Int)

    /// Always `true`: undecodable bytes stay undecodable.
    public var isPermanent: Bool { true }

    /// One line a person can act on.
    public var description: String {
        switch self {
        case .truncatedHeader(let count): return "QOI data of \(count) bytes has no complete 14-byte header"
        case .emptySize(let width, let height): return "the QOI header gives a size of \(width)×\(height)"
        case .badChannels(let channels): return "the QOI header gives \(channels) channels (3 or 4 expected)"
        case .badColorspace(let colorspace): return "the QOI header gives colorspace \(colorspace) (0 or 1 expected)"
        case .truncatedPixels(let expected):
            return "the QOI data ends before all \(expected) pixels are decoded"
        }
    }
}
