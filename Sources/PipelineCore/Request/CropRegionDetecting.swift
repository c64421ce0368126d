/// Finds the regions of a picture a fill's window should keep (faces, say): the seam through
/// which a module outside the core gives ``CropAnchor/detected(by:fallback:)`` its boxes, so
/// the core links no detection library (the `FaceDetection` product's OpenCV detector is one).
///
/// Called on a decode thread with the picture as the decoder gave it (already shrunk towards
/// the output size, upright; shrunk further to the whole picture at the fill's scale when the
/// decoder stopped above it), once per decode that crops; several decodes can call one detector
/// at once, so an implementation that is not reentrant guards itself.
public protocol CropRegionDetecting: Sendable {
    /// A stable name for this detector and the parameters that change its boxes: part of the
    /// anchor's identity, so of the memory key and the disk-rendition key.
    var identifier: String { get }

    /// The regions to keep in `bitmap` (premultiplied RGBA8), in its pixels; empty when there is
    /// none (the anchor's fallback then places the window). Each box counts for its part inside
    /// the picture; one with no part there, or with a coordinate that is not finite, is dropped.
    /// Throws to fail the request.
    func regions(in bitmap: Bitmap) throws -> [PixelRect]
}
