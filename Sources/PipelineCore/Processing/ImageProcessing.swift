#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One step that transforms a decoded picture after resampling: a round avatar, a blur, a
/// sepia tone. Runs on the decode pool, never on the pipeline's actor.
///
/// ``identifier`` takes part in the memory key (``ImageKey/processors``): two processors with
/// the same identifier must produce the same pixels from the same input, and a processor whose
/// parameters change must change its identifier (put them in it: `"blur(r=4.0)"`).
public protocol ImageProcessing: Sendable {
    /// A stable name for this step and its parameters, part of every cache key.
    var identifier: String { get }
    /// Transforms `bitmap` (premultiplied RGBA8); throws to fail the request, which then
    /// reports ``ImagePipelineError/processingFailed(_:underlying:)``.
    func process(_ bitmap: Bitmap) throws -> Bitmap
    /// Whether ``process(_:)`` takes straight pixels as they are (and returns them straight),
    /// rather than premultiplied ones. Default `false`; the compositing built-ins (overlay,
    /// padding, flattening) say `true`, so compositing straight pixels loses no precision.
    var acceptsStraightAlpha: Bool { get }
}

extension ImageProcessing {
    /// `false`: a processor gets premultiplied pixels unless it says otherwise.
    public var acceptsStraightAlpha: Bool { false }
}
