import Foundation

extension ImagePipeline {
    /// When the pipeline decodes previews of a picture still downloading
    /// (``Configuration/previewPolicy``; Nuke's `isProgressiveDecodingEnabled` with its
    /// interval). A preview is decoded only from a format that refines the whole picture as it
    /// arrives (``ProgressiveDecoding``: a progressive JPEG), only when it shows more than the
    /// last one (more completed scans), only while a visible caller waits, on the decode pool,
    /// and only when the decode memory budget has room now (a preview never waits for memory).
    public struct PreviewPolicy: Hashable, Sendable {
        /// The shortest time between the starts of two preview decodes of one picture, in
        /// seconds; bytes that arrive sooner wait for the next chance (the next piece of the
        /// body). Default 0.2: five previews a second are more than a sharpening picture needs,
        /// and each preview decodes everything that has arrived so far again.
        public var minimumInterval: TimeInterval

        /// Creates a policy.
        public init(minimumInterval: TimeInterval = 0.2) {
            self.minimumInterval = minimumInterval
        }

        /// The defaults above.
        public static let `default` = PreviewPolicy()
    }
}
