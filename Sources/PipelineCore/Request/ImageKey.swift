import Foundation

/// The memory-cache key: one decoded result per fetch URL, size, mode and processing.
///
/// Two requests with equal keys share one decode and one cache entry. The download and
/// the disk cache are keyed more coarsely, by ``fetchURL`` alone.
public struct ImageKey: Hashable, Sendable {
    /// The URL that is actually fetched (after the URL builder picked a width bucket).
    public var fetchURL: URL
    /// The size asked for.
    public var targetSize: TargetSize
    /// Fit or fill (ignored, and normalised to `.fit`, for ``TargetSize/original``).
    public var contentMode: ContentMode
    /// Options that change the pixels.
    public var processing: ProcessingOptions

    /// Creates the key for `request` fetched from `fetchURL`.
    public init(request: ImageRequest, fetchURL: URL) {
        self.fetchURL = fetchURL
        self.targetSize = request.targetSize
        self.contentMode = request.targetSize == .original ? .fit : request.contentMode
        self.processing = request.processing
    }
}
