#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why encoding failed. Encoders throw these (wrapped in nothing: the caller knows which
/// bitmap it asked to write).
public enum EncodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// No registered encoder writes `format`.
    case noEncoder(format: ImageFormat)
    /// The encoder exists but cannot run here, e.g. libheif was built without an AVIF encoder.
    case unsupported(format: ImageFormat, message: String)
    /// An option is out of range or meaningless for the format (quality 120, lossless JPEG).
    case invalidOptions(format: ImageFormat, message: String)
    /// The codec library refused; `message` is its own.
    case failed(format: ImageFormat, message: String)
    /// The codec's library, opened on first use, is not installed: ``MissingLibrary`` names it
    /// and the package to install.
    case libraryUnavailable(format: ImageFormat, MissingLibrary)

    /// A sentence naming the format and the reason.
    public var description: String {
        switch self {
        case .noEncoder(let format):
            return "no encoder is registered for \(format)"
        case .unsupported(let format, let message):
            return "cannot encode \(format) here: \(message)"
        case .invalidOptions(let format, let message):
            return "invalid \(format) encoding options: \(message)"
        case .failed(let format, let message):
            return "\(format) encoding failed: \(message)"
        case .libraryUnavailable(let format, let missing):
            return "cannot encode \(format): \(missing)"
        }
    }
}

extension EncodingError: LocalizedError {
    /// The same as ``description``.
    public var errorDescription: String? { description }
}
