#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Why ``FaceDetector`` found no answer.
public struct FaceDetectionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Hashable, Sendable {
        /// The cascade file is not there (Debian's `opencv-data` package installs the default).
        case missingCascade
        /// The cascade file is there but OpenCV cannot read it as a cascade.
        case unreadableCascade
        /// OpenCV failed while it searched (its message is in ``description``).
        case detectionFailed
        /// An allocation failed.
        case outOfMemory
        /// The `FaceDetectionOpenCV` plugin (`libFaceDetectionOpenCV.so`) is not where it is
        /// looked for, or did not load (OpenCV missing, another version's file): ``description``
        /// names the files and how to build it (`swift build --product FaceDetectionOpenCV`).
        case missingPlugin
    }

    /// What went wrong.
    public let kind: Kind
    /// The cascade file concerned.
    public let cascade: URL
    /// A one-line explanation.
    public let description: String

    init(_ kind: Kind, _ cascade: URL, _ description: String) {
        self.kind = kind
        self.cascade = cascade
        self.description = description
    }
}
