import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The info endpoint's answer: what a source is, as JSON, without the picture (imagor's `/meta`,
/// imgproxy Pro's `/info`).
///
/// `GET /info/<signature>/<options>/plain/<source>` (or a base64url source): the route of
/// imgproxy Pro's info URLs. What follows `/info` is a picture URL's path, parsed and signed the
/// same way (the signature covers everything after its own segment) and its source checked
/// against the same allowed schemes and prefixes; the errors are the picture route's. Of the
/// options, `auto_rotate`, `rotate` and `flip` say which way up the size and the hashes are,
/// `max_src_resolution` refuses a larger source (422); the others are read (a bad one is 400)
/// and change nothing here.
///
/// The answer, one JSON object with sorted keys:
/// `{"alpha":false,"blurhash":"…","content_type":"image/jpeg","format":"jpeg","frames":1,
/// "height":480,"orientation":6,"thumbhash":"…","width":320}` — `width` × `height` as a
/// picture URL with the same options would see the source (upright, then turned), `orientation`
/// the file's EXIF value, `frames` the header's count. The ThumbHash (base64) and the BlurHash
/// (4 × 3) are made from one small decode (fit in 100 × 100, shrunk on load): the source is never
/// decoded at full size for them. Nothing of the source's bytes or metadata text is quoted.
struct SourceInfo: Sendable {
    var width: Int
    var height: Int
    var format: ImageFormat
    var orientation: ImageOrientation
    var frames: Int
    var alpha: Bool
    var thumbHash: ThumbHash
    var blurHash: BlurHash

    /// The JSON body.
    var json: Data {
        let object: [String: Any] = [
            "width": width, "height": height, "format": format.rawValue, "content_type": format.mimeType ?? "application/octet-stream",
            "orientation": orientation.rawValue, "frames": frames, "alpha": alpha,
            "thumbhash": thumbHash.base64, "blurhash": blurHash.string,
        ]
        return Data(((try? jsonText(object)) ?? "{}").utf8)
    }
}

extension Renderer {
    /// `source`'s ``SourceInfo`` as `options` turn it; errors as ``render(_:source:choice:)``'s.
    func info(_ options: RenderOptions, source: URL) async throws(ServerError) -> SourceInfo {
        do {
            return try await describe(options, source: source)
        } catch let error as ServerError {
            throw error
        } catch {
            throw Self.serverError(error, source: source)
        }
    }

    private func describe(_ options: RenderOptions, source: URL) async throws -> SourceInfo {
        var request = ImageRequest(url: source, decoding: .strict)
        request.processing.appliesOrientation = options.autoRotate
        request.processing.transform = options.transform
        request.processing.pixelFormat = .rgba8Straight
        let header = try await pipeline.info(for: request)
        let size = options.orientedSize(of: header)
        if let megapixels = options.maxSourceResolution, Double(size.width) * Double(size.height) > megapixels * 1_000_000 {
            throw ServerError(.unprocessable, "source is \(size.width)×\(size.height), over max_src_resolution \(megapixels) megapixels: "
                              + MessageText.url(source))
        }
        // The placeholders' small decode: both hashes read at most 100 × 100 pixels.
        let side = ThumbHash.maxEncodedSide
        request.targetSize = .pixels(PixelSize(width: side, height: side))
        let small = try await pipeline.image(for: request).bitmap
        return SourceInfo(width: size.width, height: size.height, format: header.format, orientation: header.orientation,
                          frames: header.frameCount, alpha: header.hasAlpha, thumbHash: ThumbHash(bitmap: small),
                          blurHash: BlurHash(bitmap: small))
    }
}
