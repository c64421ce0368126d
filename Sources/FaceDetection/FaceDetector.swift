import CFaceDetectionABI
import PipelineCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Frontal faces found by OpenCV's Haar cascade classifier (`CascadeClassifier`, Debian's
/// `libopencv-objdetect` 4.6), the detector thumbor's face detection uses: the picture in grey
/// (OpenCV's `RGB2GRAY` weights, 0.299 R + 0.587 G + 0.114 B), histogram-equalised, searched at
/// scales `scaleFactor` apart for boxes at least the cascade's window (20 × 20 pixels for the
/// default) that `minNeighbors` overlapping hits agree on.
///
/// A [`CropRegionDetecting`](/documentation/pipelinecore/cropregiondetecting): [`CropAnchor.faces`](/documentation/facedetection/pipelinecore/cropanchor/faces) uses the shared one. One
/// detector serves any number of threads: an OpenCV classifier is not safe for two searches at
/// once, so each search borrows a classifier of its own from the detector's idle ones (loading
/// another when none is idle) and gives it back.
///
/// OpenCV is not linked: the first search (or ``load()``) opens the `FaceDetectionOpenCV`
/// plugin, `libFaceDetectionOpenCV.so`, from the file ``pluginEnvironmentKey`` names, else from
/// beside the executable, else from beside the binary that holds this code; until then the
/// process maps no OpenCV. Without it a search throws ``FaceDetectionError/Kind/missingPlugin``.
public final class FaceDetector: CropRegionDetecting {
    /// `IMGPIPE_FACE_PLUGIN`: the environment variable that names the plugin's file, looked at
    /// before the folders of the executable and of this code.
    public static let pluginEnvironmentKey = "IMGPIPE_FACE_PLUGIN"

    /// `/usr/share/opencv4/haarcascades/haarcascade_frontalface_alt.xml` (Debian's `opencv-data`),
    /// the cascade thumbor uses.
    public static let defaultCascade = URL(fileURLWithPath: "/usr/share/opencv4/haarcascades/haarcascade_frontalface_alt.xml")

    /// A detector of the default cascade and parameters: the one [`CropAnchor.faces`](/documentation/facedetection/pipelinecore/cropanchor/faces) uses.
    public static let shared = FaceDetector()

    /// The cascade file (OpenCV's XML).
    public let cascade: URL
    /// The ratio between search scales: 1.1 by default (OpenCV's), kept in 1.01…2.
    public let scaleFactor: Double
    /// How many overlapping hits a box needs: 3 by default (OpenCV's), kept in 0…50.
    public let minNeighbors: Int

    /// Classifiers not in use. Each is used by one search at a time: taken out under the lock,
    /// put back after.
    private let idle = Mutex<[Classifier]>([])

    /// A detector of `cascade` (loaded at the first search; ``load()`` checks it sooner).
    /// Parameters out of their range are clamped to it.
    public init(cascade: URL = FaceDetector.defaultCascade, scaleFactor: Double = 1.1, minNeighbors: Int = 3) {
        self.cascade = cascade
        self.scaleFactor = scaleFactor.isNaN ? 1.1 : min(2, max(1.01, scaleFactor))
        self.minNeighbors = min(50, max(0, minNeighbors))
    }

    /// `opencv-haar(PATH,SCALE,NEIGHBORS)`: what changes the boxes.
    public var identifier: String { "opencv-haar(\(cascade.path),\(scaleFactor),\(minNeighbors))" }

    /// Loads the OpenCV plugin and one classifier now (kept for the first search): a missing
    /// plugin or a missing or unreadable cascade is reported at start-up rather than by the first request.
    public func load() throws(FaceDetectionError) {
        let classifier = try Classifier(cascade)
        idle.withLock { $0.append(classifier) }
    }

    /// The faces in `bitmap`, in its pixels, in OpenCV's order.
    public func faces(in bitmap: Bitmap) throws(FaceDetectionError) -> [PixelRect] {
        let grey = Self.grey(bitmap)
        let classifier: Classifier
        if let borrowed = idle.withLock({ $0.popLast() }) { classifier = borrowed } else { classifier = try Classifier(cascade) }
        defer { idle.withLock { $0.append(classifier) } }
        return try classifier.detect(grey, width: bitmap.width, height: bitmap.height, scaleFactor: scaleFactor,
                                     minNeighbors: minNeighbors)
    }

    /// ``faces(in:)``, for [`CropAnchor.detected(by:fallback:)`](/documentation/pipelinecore/cropanchor/detected(by:fallback:)).
    public func regions(in bitmap: Bitmap) throws -> [PixelRect] { try faces(in: bitmap) }

    /// 8-bit grey by OpenCV's fixed-point `RGB2GRAY` (weights 4899, 9617 and 1868 of 2¹⁴), rows
    /// packed. Premultiplied pixels are taken as they are: transparent ones read as black.
    static func grey(_ bitmap: Bitmap) -> [UInt8] {
        var grey = [UInt8](repeating: 0, count: bitmap.width * bitmap.height)
        bitmap.withUnsafeBytes { bytes in
            for y in 0..<bitmap.height {
                var o = y * bitmap.bytesPerRow
                for x in 0..<bitmap.width {
                    let sum = 4899 * Int(bytes[o]) + 9617 * Int(bytes[o + 1]) + 1868 * Int(bytes[o + 2]) + 8192
                    grey[y * bitmap.width + x] = UInt8(sum >> 14)
                    o += 4
                }
            }
        }
        return grey
    }
}

/// One loaded OpenCV cascade classifier, freed in `deinit`, and the plugin's functions that run it.
///
/// `@unchecked Sendable`: it moves between threads only through ``FaceDetector``'s `idle`
/// list, whose `Mutex` hands each classifier to one search at a time.
private final class Classifier: @unchecked Sendable {
    private let handle: OpaquePointer
    private let cascade: URL
    private let plugin: OpenCVPlugin

    init(_ cascade: URL) throws(FaceDetectionError) {
        self.cascade = cascade
        guard FileManager.default.fileExists(atPath: cascade.path) else {
            throw FaceDetectionError(.missingCascade, cascade,
                                     "no face cascade at \(cascade.path) (Debian's opencv-data package installs it)")
        }
        let plugin = try OpenCVPlugin.load(for: cascade)
        var message = [CChar](repeating: 0, count: 256)
        var made: OpaquePointer?
        let status = plugin.create(cascade.path, &made, &message, message.count)
        guard status == FACESHIM_OK, let made else {
            throw Self.error(status, cascade: cascade, message: message, doing: "loading the cascade")
        }
        handle = made
        self.plugin = plugin
    }

    deinit { plugin.free(handle) }

    func detect(_ grey: [UInt8], width: Int, height: Int, scaleFactor: Double, minNeighbors: Int) throws(FaceDetectionError)
        -> [PixelRect] {
        // OpenCV's sizes are Int32: a picture past them has no faces we could search for.
        guard width > 0, height > 0, width <= Int(Int32.max), height <= Int(Int32.max) else { return [] }
        var message = [CChar](repeating: 0, count: 256)
        var boxes: UnsafeMutablePointer<faceshim_box>?
        var count = 0
        let status = grey.withUnsafeBufferPointer { pixels in
            plugin.detect(handle, pixels.baseAddress, Int32(width), Int32(height), width, scaleFactor, Int32(minNeighbors),
                            0, &boxes, &count, &message, message.count)
        }
        defer { plugin.freeBoxes(boxes) }
        guard status == FACESHIM_OK else { throw Self.error(status, cascade: cascade, message: message, doing: "searching") }
        guard let boxes else { return [] }
        return (0..<count).map { i in
            let box = boxes[i]
            return PixelRect(x: Double(box.x), y: Double(box.y), width: Double(box.width), height: Double(box.height))
        }
    }

    private static func error(_ status: Int32, cascade: URL, message: [CChar], doing: String) -> FaceDetectionError {
        let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        switch Int(status) {
        case Int(FACESHIM_BAD_CASCADE):
            return FaceDetectionError(.unreadableCascade, cascade, "\(cascade.path) is not an OpenCV cascade: \(reason)")
        case Int(FACESHIM_NO_MEMORY):
            return FaceDetectionError(.outOfMemory, cascade, "out of memory \(doing) for faces")
        default:
            return FaceDetectionError(.detectionFailed, cascade, "OpenCV failed \(doing) for faces: \(reason)")
        }
    }
}
