import CodecJPEG
import Foundation
import PipelineCore
import QOIExample
import Synchronization
import Testing

/// The QOI fixtures: `NAME.rgba` (straight RGBA8 cropped from a bundled sample by Pillow) and
/// `NAME.qoi` (what the reference encoder, qoi.h, made of it); see `scripts/make-qoi-fixtures`.
struct QOIFixture {
    let name: String
    let size: PixelSize
    let channels: Int
    /// Straight RGBA8, `size.pixelCount × 4` bytes.
    let rgba: [UInt8]
    /// qoi.h's encoding.
    let qoi: Data

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let names = ["glass-edge", "aurora"]

    init(_ name: String) throws {
        let base = Self.folder.appendingPathComponent(name)
        let numbers = try String(contentsOf: base.appendingPathExtension("txt"), encoding: .utf8)
            .split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        try #require(numbers.count == 3)
        self.name = name
        size = PixelSize(width: numbers[0], height: numbers[1])
        channels = numbers[2]
        rgba = [UInt8](try Data(contentsOf: base.appendingPathExtension("rgba")))
        qoi = try Data(contentsOf: base.appendingPathExtension("qoi"))
        try #require(rgba.count == size.pixelCount * 4)
    }

    /// The reference pixels as the pipeline hands them out: premultiplied (opaque for 3 channels).
    var premultiplied: Bitmap {
        var bytes = rgba
        if channels == 3 { for i in stride(from: 3, to: bytes.count, by: 4) { bytes[i] = 255 } }
        bytes.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        return Bitmap(width: size.width, height: size.height, bytesPerRow: size.width * 4, bytes: bytes) ?? Bitmap(zeroed: size)
    }
}

/// A bundled sample picture (`Samples/NAME`).
func sample(_ name: String) throws -> Data {
    try Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Samples/\(name)").standardizedFileURL)
}

/// A 14-byte QOI header followed by `body` (no end marker unless `body` has one).
func qoiFile(width: UInt32, height: UInt32, channels: UInt8 = 4, colorspace: UInt8 = 0, body: [UInt8]) -> Data {
    var bytes = Array("qoif".utf8)
    for value in [width, height] {
        bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
    return Data(bytes + [channels, colorspace] + body)
}

/// QOI's end marker.
let qoiEnd: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]

/// A premultiplied bitmap from straight RGBA pixels.
func bitmap(_ size: PixelSize, straight pixels: [(UInt8, UInt8, UInt8, UInt8)]) -> Bitmap {
    var bytes = pixels.flatMap { [$0.0, $0.1, $0.2, $0.3] }
    bytes.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
    return Bitmap(width: size.width, height: size.height, bytesPerRow: size.width * 4, bytes: bytes) ?? Bitmap(zeroed: size)
}

/// Wraps a decoder and counts the sessions it opens and the decodes it runs: how a test sees
/// that a negatively cached failure is not decoded again, or that a newer decoder was chosen.
final class CountingWrapper<Wrapped: ImageDecoding>: ImageDecoding {
    let wrapped: Wrapped
    private let counts = Mutex((sessions: 0, decodes: 0))

    init(_ wrapped: Wrapped) { self.wrapped = wrapped }

    var signatures: [ImageSignature] { wrapped.signatures }
    var sessions: Int { counts.withLock { $0.sessions } }
    var decodes: Int { counts.withLock { $0.decodes } }

    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        counts.withLock { $0.sessions += 1 }
        return try wrapped.withSession(for: data) { inner in
            try body(Session(inner: inner, counted: { self.counts.withLock { $0.decodes += 1 } }))
        }
    }

    private struct Session: ImageDecodingSession {
        let inner: any ImageDecodingSession
        let counted: () -> Void
        var info: ImageInfo { inner.info }
        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            counted()
            return try inner.decode(options)
        }
    }
}

/// A third party's error type for its loader: one permanent case, one temporary.
enum ShelfError: PipelineFailure, Equatable {
    /// The item was taken off the shelf for good.
    case withdrawn
    /// The shelf is busy; ask again later.
    case busy

    var isPermanent: Bool { self == .withdrawn }
}

/// A third party's loader for `shelf://NAME`: bytes from a dictionary, its own error for some
/// names, and `.notFound(url)` for names it does not have. Counts loads per URL.
final class ShelfLoader: DataLoading {
    enum Item: Sendable {
        case bytes(Data, contentType: String? = nil)
        case failure(ShelfError)
    }

    private let items: [String: Item]
    private let loads = Mutex([URL: Int]())

    init(_ items: [String: Item]) { self.items = items }

    var schemes: Set<String> { ["shelf"] }

    func load(_ request: DataLoadRequest) async throws -> DataLoadResult {
        loads.withLock { $0[request.url, default: 0] += 1 }
        switch request.url.host.flatMap({ items[$0] }) {
        case .bytes(let data, let type)?: return .data(data, ResponseMetadata(contentType: type))
        case .failure(let error)?: throw error
        case nil: throw ImagePipelineError.notFound(request.url)
        }
    }

    func loadCount(_ url: URL) -> Int { loads.withLock { $0[url, default: 0] } }
}

/// `shelf://NAME`.
func shelf(_ name: String) -> URL { URL(string: "shelf://\(name)") ?? URL(fileURLWithPath: "/") }

extension DecoderRegistry {
    /// The shipped JPEG decoder and the QOI plugin (or `qoi`), registered as an app would.
    static func withQOI(_ qoi: any ImageDecoding = QOIDecoder()) -> DecoderRegistry {
        DecoderRegistry().registering(qoi).registering(JPEGDecoder())
    }
}

/// `nil` when `a` and `b` are the same bitmap, else where they first differ (a short message,
/// not two printed pixel arrays).
func difference(_ a: Bitmap, _ b: Bitmap) -> String? {
    guard a.size == b.size else { return "sizes \(a.size) and \(b.size)" }
    for y in 0..<a.height {
        for x in 0..<a.width where a.pixel(x: x, y: y) != b.pixel(x: x, y: y) {
            return "pixel (\(x), \(y)): \(a.pixel(x: x, y: y)) and \(b.pixel(x: x, y: y))"
        }
    }
    return nil
}
