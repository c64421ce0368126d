import Foundation
import PipelineCore
import Synchronization

/// Decodes ``FakeImage`` data and counts what it does: calls, the sizes asked for, and the most
/// decodes that ever ran at once. An optional delay makes decodes overlap.
public final class CountingDecoder: ImageDecoding {
    private struct State {
        var decodeCount = 0
        var running = 0
        var peakRunning = 0
        var targetSizes: [PixelSize?] = []
    }

    private let state = Mutex(State())
    private let delay: TimeInterval
    /// The format this decoder claims (so registry tests can register several).
    public let formats: Set<ImageFormat>

    /// Creates a decoder; each decode sleeps `delay` seconds (on the decode pool's thread).
    public init(delay: TimeInterval = 0, formats: Set<ImageFormat> = [.bmp]) {
        self.delay = delay
        self.formats = formats
    }

    /// Accepts data that starts with ``FakeImage/magic``.
    public func canDecode(_ data: Data) -> Bool { data.starts(with: FakeImage.magic) }

    /// Reads the fake header.
    public func readInfo(_ data: Data) throws -> ImageInfo {
        guard data.count >= 12, canDecode(data) else {
            throw ImagePipelineError.corruptData(format: nil, message: "not FAKE data")
        }
        let b = [UInt8](data.prefix(12))
        let size = PixelSize(width: Int(b[4]) << 8 | Int(b[5]), height: Int(b[6]) << 8 | Int(b[7]))
        return ImageInfo(format: formats.first ?? .bmp, size: size)
    }

    /// "Decodes" to a bitmap of the target size (or full size) filled with the colour.
    public func decode(_ data: Data, options: DecodeOptions) throws -> DecodedImage {
        state.withLock {
            $0.decodeCount += 1
            $0.running += 1
            $0.peakRunning = max($0.peakRunning, $0.running)
            $0.targetSizes.append(options.targetSize)
        }
        defer { state.withLock { $0.running -= 1 } }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        let info = try readInfo(data)
        try options.checkPixelLimit(info)
        if data.count >= 16, data.suffix(4) == Data("BAD!".utf8) {
            throw ImagePipelineError.corruptData(format: info.format, message: "the fake data says it is bad")
        }
        let size = options.targetSize ?? info.size
        var bitmap = Bitmap(zeroed: size)
        let color = [UInt8](data[data.startIndex + 8..<data.startIndex + 12])
        bitmap.withUnsafeMutableBytes { bytes in
            for i in stride(from: 0, to: bytes.count, by: 4) {
                bytes[i] = color[0]; bytes[i + 1] = color[1]; bytes[i + 2] = color[2]; bytes[i + 3] = color[3]
            }
        }
        return DecodedImage(bitmap: bitmap, info: info)
    }

    /// How many times ``decode(_:options:)`` was called.
    public var decodeCount: Int { state.withLock { $0.decodeCount } }
    /// The most decodes that ran at the same time.
    public var peakConcurrentDecodes: Int { state.withLock { $0.peakRunning } }
    /// The target sizes asked for, in call order.
    public var targetSizes: [PixelSize?] { state.withLock { $0.targetSizes } }
}
