// CustomDecoder: a decoder for a format PipelineCore has never heard of — QOI, the "Quite OK
// Image" format — written in Swift in this example (target QOIExample, Examples/CustomDecoder/QOI)
// and registered beside the shipped JPEG decoder by its magic bytes `qoif`.
//
//   swift run CustomDecoder [DIR]     (writes its files to DIR, default a temporary folder)
//
// It draws a 640×480 picture with transparent corners, writes it as QOI with the example's
// encoder, then loads it through the full pipeline: six concurrent requests for a thumbnail
// share one read and one decode (which shrinks while it reads), a second ask comes from the
// memory cache, and a damaged file fails with the plugin's own error type inside the
// pipeline's `decodingFailed`.
import CodecJPEG
import LoaderFile
import PipelineCore
import QOIExample
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts the pipeline's loads and decodes.
final class Counter: Sendable {
    private let counts = Mutex((loads: 0, decodes: 0))
    var handler: @Sendable (ImagePipelineEvent) -> Void {
        { event in
            switch event {
            case .loaded: self.counts.withLock { $0.loads += 1 }
            case .decoded: self.counts.withLock { $0.decodes += 1 }
            default: break
            }
        }
    }
    var loads: Int { counts.withLock { $0.loads } }
    var decodes: Int { counts.withLock { $0.decodes } }
}

/// 640×480: a colour wheel fading to transparent towards the corners.
func drawPicture() -> Bitmap {
    let size = PixelSize(width: 640, height: 480)
    var straight = [UInt8](repeating: 0, count: size.pixelCount * 4)
    for y in 0..<size.height {
        for x in 0..<size.width {
            let dx = Double(x - 320) / 320, dy = Double(y - 240) / 240
            let angle = atan2(dy, dx), distance = min(1, (dx * dx + dy * dy).squareRoot())
            let i = (y * size.width + x) * 4
            straight[i] = UInt8(127.5 + 127.5 * cos(angle))
            straight[i + 1] = UInt8(127.5 + 127.5 * cos(angle - 2.094))
            straight[i + 2] = UInt8(127.5 + 127.5 * cos(angle + 2.094))
            straight[i + 3] = UInt8(255 * (1 - distance * distance))
        }
    }
    straight.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
    return Bitmap(width: size.width, height: size.height, bytesPerRow: size.width * 4, bytes: straight) ?? Bitmap(zeroed: size)
}

let folder = CommandLine.arguments.count > 1
    ? URL(fileURLWithPath: CommandLine.arguments[1], isDirectory: true)
    : FileManager.default.temporaryDirectory.appendingPathComponent("CustomDecoder-\(getpid())", isDirectory: true)
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
let wheel = folder.appendingPathComponent("wheel.qoi"), damaged = folder.appendingPathComponent("damaged.qoi")
let encoded = QOIEncoder().encode(drawPicture())
try encoded.write(to: wheel)
try encoded.prefix(encoded.count / 2).write(to: damaged)  // cut in the middle of the pixels
print("wrote \(wheel.path): \(encoded.count) bytes (\(640 * 480 * 4) as raw RGBA)")

let counter = Counter()
let pipeline = ImagePipeline(configuration: .init(
    decoders: DecoderRegistry().registering(JPEGDecoder()).registering(QOIDecoder()),
    loaders: LoaderRegistry().registering(FileDataLoader()),
    eventHandler: counter.handler))

let request = ImageRequest(url: wheel, width: 160, height: 160)
let responses = try await withThrowingTaskGroup(of: ImageResponse.self) { group in
    for _ in 0..<6 { group.addTask { try await pipeline.image(for: request) } }
    var responses: [ImageResponse] = []
    for try await response in group { responses.append(response) }
    return responses
}
let first = responses[0]
print("6 concurrent requests: \(counter.loads) read, \(counter.decodes) decode; "
      + "\(first.format.description) \(first.originalSize) → \(first.bitmap.size), "
      + "all the same pixels: \(responses.allSatisfy { $0.bitmap == first.bitmap })")
let centre = first.bitmap.pixel(x: first.bitmap.width / 2, y: first.bitmap.height / 2)
let corner = first.bitmap.pixel(x: 0, y: 0)
print("centre pixel \(centre), corner pixel \(corner) (premultiplied; the corners are transparent)")

let again = try await pipeline.image(for: request)
print("asked again: from \(again.source), still \(counter.decodes) decode")

let thumbnail = folder.appendingPathComponent("wheel-thumb.qoi")
try QOIEncoder().encode(again.bitmap).write(to: thumbnail)
print("wrote \(thumbnail.path)")

do {
    _ = try await pipeline.image(for: ImageRequest(url: damaged, width: 160, height: 160))
} catch let error as ImagePipelineError {
    print("damaged.qoi: \(error)")
    if case .truncatedPixels(let expected) = error.underlyingError as? QOIError {
        print("  underlyingError is the plugin's own QOIError.truncatedPixels(expected: \(expected))")
    }
}
