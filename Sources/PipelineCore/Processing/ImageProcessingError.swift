#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why a built-in processor could not run.
public enum ImageProcessingError: Error, Sendable, Equatable, CustomStringConvertible, PipelineFailure {
    /// A crop rectangle that does not overlap the picture.
    case cropOutsideImage(PixelRect, PixelSize)
    /// A parameter out of range (a negative or non-finite radius), with its name.
    case invalidParameter(String)

    /// One line a person can act on.
    public var description: String {
        switch self {
        case .cropOutsideImage(let rect, let size):
            return "crop rectangle \(rect.x),\(rect.y) \(rect.width)×\(rect.height) lies outside the \(size) picture"
        case .invalidParameter(let name): return "invalid processor parameter: \(name)"
        }
    }

    /// Always `true`: the same pixels and parameters fail the same way.
    public var isPermanent: Bool { true }
}
