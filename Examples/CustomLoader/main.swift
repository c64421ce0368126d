// CustomLoader: a custom `asset://` loader backed by an in-memory dictionary, plus CodecPNG.
// A loader is one property and one method (AssetLoader.swift); register it and the whole
// pipeline (coalescing, memory cache, resizing) works for the new scheme. A missing asset is
// the core's `.notFound(url)`; the loader's own `AssetError` reaches the caller unchanged, and
// the pipeline remembers a failure for a while when the error says it is permanent.
//
//   swift run CustomLoader
import CodecPNG
import Foundation
import PipelineCore

/// A 256×256 radial gradient, encoded as PNG: the "asset catalogue".
func makeLogo() throws -> Data {
    var bitmap = Bitmap(zeroed: PixelSize(width: 256, height: 256))
    bitmap.withUnsafeMutableBytes { bytes in
        for y in 0..<256 {
            for x in 0..<256 {
                let d = min(1, ((Double(x) - 128) * (Double(x) - 128) + (Double(y) - 128) * (Double(y) - 128)).squareRoot() / 128)
                let i = (y * 256 + x) * 4
                bytes[i] = UInt8(255 * (1 - d)); bytes[i + 1] = UInt8(80 + 100 * d); bytes[i + 2] = 200; bytes[i + 3] = 255
            }
        }
    }
    return try PNGEncoder().encode(bitmap)
}

let pipeline = ImagePipeline(configuration: .init(
    decoders: DecoderRegistry().registering(PNGDecoder()),
    loaders: LoaderRegistry().registering(AssetLoader(catalogue: ["logo": try makeLogo()],
                                                      withdrawn: ["old-logo"], unpacking: ["banner"]))))

let logo = try await pipeline.image(for: ImageRequest(url: URL(string: "asset://logo")!, width: 64, height: 64))
print("asset://logo: \(logo.originalSize) → \(logo.bitmap.size) from \(logo.source)")
let again = try await pipeline.image(for: ImageRequest(url: URL(string: "asset://logo")!, width: 64, height: 64))
print("asked again: from \(again.source)")
for name in ["missing", "old-logo", "banner"] {
    do {
        _ = try await pipeline.image(for: ImageRequest(url: URL(string: "asset://\(name)")!))
    } catch let error as ImagePipelineError {
        let own = error.underlyingError as? AssetError
        print("asset://\(name): \(error)\(own.map { " (AssetError, permanent: \($0.isPermanent))" } ?? "")")
    }
}
