#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ImagePipeline {
    /// When the pipeline decodes previews of a picture still downloading
    /// (``Configuration/previewPolicy``; Nuke's `isProgressiveDecodingEnabled` with its
    /// interval). A preview is decoded only from a format that refines the whole picture as it
    /// arrives (``ProgressiveDecoding``: a progressive JPEG), only when it shows more than the
    /// last one (more completed scans), only while a visible caller waits, on the decode pool,
    /// and only when the decode memory budget has room now (a preview never waits for memory).
    ///
    /// Each preview decodes everything that has arrived so far, so its cost grows with the
    /// bytes. ``minimumGrowth`` keeps the sum bounded however slow the download: with the
    /// default 2 the previews' bytes form a geometric series, and all of them together cost
    /// about one decode of the whole file or less, where a preview per completed scan would
    /// cost several.
    public struct PreviewPolicy: Hashable, Sendable {
        /// The shortest time between the starts of two preview decodes of one picture, in
        /// seconds; bytes that arrive sooner wait for the next chance (the next piece of the
        /// body). Default 0.2: five previews a second are more than a sharpening picture needs.
        public var minimumInterval: TimeInterval
        /// How many times the bytes of the last preview must have arrived before the next one
        /// is decoded (1: any more bytes do). Default 2 (see above). The first preview comes
        /// as soon as a first scan is complete.
        public var minimumGrowth: Double

        /// Creates a policy.
        public init(minimumInterval: TimeInterval = 0.2, minimumGrowth: Double = 2) {
            self.minimumInterval = minimumInterval
            self.minimumGrowth = minimumGrowth
        }

        /// The defaults above.
        public static let `default` = PreviewPolicy()
    }
}
