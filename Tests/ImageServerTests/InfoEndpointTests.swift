import Foundation
import ImagePipelineKit
import PipelineCore
import PipelineTestSupport
import Testing

@testable import ImageServer

/// The info endpoint, `GET /info/<signature>/<options>/plain/<source>`, through
/// ``ImageServer/respond(to:)``: a signed, allowed source answers JSON with its size, format,
/// orientation, frames and its two placeholder hashes, made from the small decode; the errors
/// are the picture route's.
@Suite("ImageServer info endpoint")
struct InfoEndpointTests {
    static let signing: URLSigning = {
        (try? URLSigning(keys: ["736563726574"], salts: ["68656C6C6F"])) ?? URLSigning()
    }()

    static func server(allowedSources: [String] = []) throws -> ImageServer {
        let loaders = LoaderRegistry().registering(try RootedFileLoader(root: RenderFixture.root.appendingPathComponent("Samples")))
        let pipeline = ImagePipeline(configuration: .init(decoders: RenderFixture.decoders, loaders: loaders))
        var configuration = ImageServer.Configuration(pipeline: pipeline, encoders: .standard)
        configuration.signing = signing
        configuration.allowedSchemes = ["local"]
        configuration.allowedSources = allowedSources
        configuration.timeout = 300  // no deadline a starved test machine reaches
        return ImageServer(configuration: configuration)
    }

    static func info(_ server: ImageServer, _ path: String) async -> (ServerResponse, [String: Any]) {
        let response = await server.respond(to: ServerRequest(path: "/info" + signing.signedPath(path)))
        let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any] ?? [:]
        return (response, object)
    }

    @Test func aSignedSourceAnswersItsInfoAndPlaceholders() async throws {
        let server = try Self.server()
        let (response, json) = await Self.info(server, "/plain/local:///balloon-exif6.jpg")
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.headers["Cache-Control"] == "public, max-age=31536000")
        let data = try Data(contentsOf: RenderFixture.sample("balloon-exif6.jpg"))
        let header = try RenderFixture.decoders.requireDecoder(for: data).withSession(for: data) { $0.info }
        #expect(json["width"] as? Int == header.uprightSize.width && json["height"] as? Int == header.uprightSize.height)
        #expect(json["format"] as? String == "jpeg" && json["content_type"] as? String == "image/jpeg")
        #expect(json["orientation"] as? Int == 6 && json["frames"] as? Int == 1 && json["alpha"] as? Bool == false)
        // The hashes are those of the placeholders' small decode (upright, fit in 100 × 100).
        let pipeline = ImagePipeline(configuration: .init(decoders: RenderFixture.decoders,
                                                          loaders: LoaderRegistry().registering(FileDataLoader())))
        var request = ImageRequest(url: RenderFixture.sample("balloon-exif6.jpg"), targetSize: .pixels(PixelSize(width: 100, height: 100)))
        request.processing.pixelFormat = .rgba8Straight
        let small = try await pipeline.image(for: request).bitmap
        #expect(json["thumbhash"] as? String == ThumbHash(bitmap: small).base64)
        #expect(json["blurhash"] as? String == BlurHash(bitmap: small).string)
        // Nothing but these keys: no text of the file is quoted.
        #expect(Set(json.keys) == ["width", "height", "format", "content_type", "orientation", "frames", "alpha", "thumbhash", "blurhash"])
    }

    @Test func rotationAndAutoRotateTurnTheSizeAndTheHashes() async throws {
        let server = try Self.server()
        let (_, upright) = await Self.info(server, "/plain/local:///balloon-exif6.jpg")
        let (_, turned) = await Self.info(server, "/rot:90/plain/local:///balloon-exif6.jpg")
        let (_, stored) = await Self.info(server, "/ar:0/plain/local:///balloon-exif6.jpg")
        #expect(turned["width"] as? Int == upright["height"] as? Int && turned["height"] as? Int == upright["width"] as? Int)
        #expect(stored["width"] as? Int == turned["width"] as? Int, "a quarter turn of EXIF 6's upright is stored-shaped")
        let uprightHash = try #require(ThumbHash(base64: upright["thumbhash"] as? String ?? ""))
        let turnedHash = try #require(ThumbHash(base64: turned["thumbhash"] as? String ?? ""))
        #expect(uprightHash.aspectRatio < 1 && turnedHash.aspectRatio > 1)
        #expect(upright["blurhash"] as? String != turned["blurhash"] as? String)
        // An animation reports its frames; an alpha picture its alpha.
        let (_, gif) = await Self.info(server, "/plain/local:///orbit.gif")
        #expect((gif["frames"] as? Int ?? 0) > 1 && gif["format"] as? String == "gif")
        let (_, png) = await Self.info(server, "/plain/local:///glass-alpha.png")
        #expect(png["alpha"] as? Bool == true)
    }

    @Test func errorsAreThePictureRoutes() async throws {
        let server = try Self.server(allowedSources: ["local:///balloon"])
        func status(_ path: String) async -> (Int, String) {
            let response = await server.respond(to: ServerRequest(path: path))
            return (response.status, String(decoding: response.body, as: UTF8.self))
        }
        #expect(await status("/info/insecure/plain/local:///balloon-exif6.jpg").0 == 403, "unsigned")
        #expect(await status("/info/AAAA/plain/local:///balloon-exif6.jpg").0 == 403, "wrong signature")
        let refused = await status("/info" + Self.signing.signedPath("/plain/local:///orbit.gif"))
        #expect(refused.0 == 403 && refused.1.contains("not under the allowed sources"), "\(refused)")
        #expect(await status("/info" + Self.signing.signedPath("/plain/local:///balloon-missing.jpg")).0 == 404)
        let bad = await status("/info" + Self.signing.signedPath("/rot:45/plain/local:///balloon-exif6.jpg"))
        #expect(bad.0 == 400 && bad.1.contains("multiple of 90"))
        let large = await status("/info" + Self.signing.signedPath("/msr:0.01/plain/local:///balloon-exif6.jpg"))
        #expect(large.0 == 422 && large.1.contains("max_src_resolution"), "\(large)")
        let post = await server.respond(to: ServerRequest(method: "POST", path: "/info" + Self.signing.signedPath("/plain/local:///balloon-exif6.jpg")))
        #expect(post.status == 405)
    }
}
