#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A decoder that can show a picture before all of its bytes have arrived: a progressive JPEG,
/// whose every completed scan refines the whole picture.
///
/// The pipeline hands it the bytes received so far while a download runs. The decoder answers
/// with bytes that decode, through its ordinary ``ImageDecoding/withSession(for:_:)``, to the
/// picture as the completed part shows it. So a preview goes down the same path as the final
/// decode: the pixel limit, orientation, colour management, scaling straight to the requested
/// size and the decode memory budget. A format whose rows arrive top to bottom (a baseline
/// JPEG) gives no preview: the final decode shows it soon enough.
public protocol ProgressiveDecoding: ImageDecoding {
    /// What the first `partial.count` bytes of a picture still arriving show, or `nil` when they
    /// show nothing worth a preview yet (no complete refinement step, a picture that is not
    /// progressive, or bytes that are not this format). Cheap next to a decode: it only walks
    /// the structure. Called on the decode pool.
    func preview(of partial: Data) -> ProgressivePreview?
}

/// A decodable stand-in for a picture still arriving (``ProgressiveDecoding/preview(of:)``).
public struct ProgressivePreview: Sendable {
    /// Bytes that decode as a whole picture: the completed part, closed so it decodes without
    /// warnings (a progressive JPEG's complete scans, then an end-of-image marker).
    public var data: Data
    /// How many refinement steps `data` holds (a progressive JPEG's scans): a later preview
    /// with more shows more, one with as many shows nothing new.
    public var steps: Int

    /// Creates a preview.
    public init(data: Data, steps: Int) {
        self.data = data
        self.steps = steps
    }
}
