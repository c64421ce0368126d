import Foundation

/// A processing work's processors, run by the decode it waits on in the same decode-pool job,
/// straight after decoding: the processed picture follows its own decode at once instead of
/// queueing behind every decode not yet started (thirty round avatars asked for at once would
/// otherwise all wait for the thirtieth decode). Kept on the decode work by processed key
/// (``InFlightWork/followUps``). A waiter of the decode itself gets its picture once these
/// processors have run too: they are the small steps after a decode (a circle, a blur), a
/// fraction of its cost.
struct ProcessingFollowUp: Sendable {
    let processors: [ImageProcessor]
    let pixelFormat: PixelFormat
    /// The processed pixels and the seconds they took, or the processors' error; set when the
    /// decode ran them, and left `nil` when its job had started before they were asked for, or
    /// when it did not decode (the processing work then runs them in a job of its own).
    var outcome: Result<ProcessedPixels, any Error>?

    init(processors: [ImageProcessor], pixelFormat: PixelFormat) {
        self.processors = processors
        self.pixelFormat = pixelFormat
    }
}

/// Pixels a list of processors made, and the seconds it took.
struct ProcessedPixels: Sendable {
    let bitmap: Bitmap
    let seconds: TimeInterval
}
