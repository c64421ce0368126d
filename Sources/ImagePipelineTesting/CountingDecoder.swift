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
    public let format: ImageFormat

    /// Creates a decoder; each decode sleeps `delay` seconds (on the decode pool's thread).
    public init(delay: TimeInterval = 0, format: ImageFormat = "fake") {
        self.delay = delay
        self.format = format
    }

    /// ``FakeImage/magic`` at the start.
    public var signatures: [ImageSignature] { [.magic(Array(FakeImage.magic), format: format)] }

    /// Reads the fake header.
    public func readFakeInfo(_ data: Data) throws -> ImageInfo {
        guard data.count >= 12, canDecode(data) else {
            throw ImagePipelineError.corruptData(format: nil, message: "not FAKE data")
        }
        let b = [UInt8](data.prefix(12))
        let size = PixelSize(width: Int(b[4]) << 8 | Int(b[5]), height: Int(b[6]) << 8 | Int(b[7]))
        return ImageInfo(format: format, size: size)
    }

    /// Opens a session over the fake header.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try body(Session(decoder: self, data: data, info: try readFakeInfo(data)))
    }

    private struct Session: ImageDecodingSession {
        let decoder: CountingDecoder
        let data: Data
        let info: ImageInfo
        func decode(_ options: DecodeOptions) throws -> DecodedImage { try decoder.decodeFake(data, info: info, options: options) }
    }

    /// "Decodes" to a bitmap of the target size (or full size) filled with the colour.
    private func decodeFake(_ data: Data, info: ImageInfo, options: DecodeOptions) throws -> DecodedImage {
        state.withLock {
            $0.decodeCount += 1
            $0.running += 1
            $0.peakRunning = max($0.peakRunning, $0.running)
            $0.targetSizes.append(options.targetSize)
        }
        defer { state.withLock { $0.running -= 1 } }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
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

    /// How many times a session decoded.
    public var decodeCount: Int { state.withLock { $0.decodeCount } }
    /// The most decodes that ran at the same time.
    public var peakConcurrentDecodes: Int { state.withLock { $0.peakRunning } }
    /// The target sizes asked for, in call order.
    public var targetSizes: [PixelSize?] { state.withLock { $0.targetSizes } }
}
