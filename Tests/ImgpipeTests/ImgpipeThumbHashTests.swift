import Foundation
import ImagePipelineKit
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// `imgpipe info --thumbhash [--json]`: each source's placeholder hash, from the picture as the
/// pipeline decodes it at 100 px.
struct ImgpipeThumbHashTests {
    static func sample(_ name: String) -> String { Imgpipe.samples.appendingPathComponent(name).path }

    static func rows(_ result: Imgpipe.Result) throws -> [[String: Any]] {
        try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
    }

    @Test func infoPrintsEachSourcesHashInTextAndJSON() async throws {
        let names = ["balloon-exif6.jpg", "glass-alpha.png", "glass-alpha.webp", "orbit.gif", "moon-gray.jpg"]
        let json = try await Imgpipe.run(["info", "--thumbhash", "--json"] + names.map(Self.sample))
        #expect(json.status == 0, "\(json.stderr)")
        let rows = try Self.rows(json)
        #expect(rows.count == names.count)
        var hashes: [String: ThumbHash] = [:]
        for (name, row) in zip(names, rows) {
            let text = try #require(row["thumbhash"] as? String, "\(name): no thumbhash key")
            let hash = try #require(ThumbHash(base64: text), "\(name): \(text) is not a hash")
            hashes[name] = hash
        }
        // Upright: the EXIF-6 balloon is 320 × 480 once rotated, so its hash is portrait.
        #expect(try #require(hashes["balloon-exif6.jpg"]).aspectRatio < 1)
        // Alpha kept; gray stays gray.
        #expect(try #require(hashes["glass-alpha.png"]).averageColor.alpha < 255)
        let moon = try #require(hashes["moon-gray.jpg"]).averageColor
        #expect(abs(Int(moon.red) - Int(moon.green)) <= 4 && abs(Int(moon.green) - Int(moon.blue)) <= 4)
        // The same picture as PNG and as WebP: a near hash (lossy WebP moves a step at most).
        let png = try #require(hashes["glass-alpha.png"]).bitmap(), webp = try #require(hashes["glass-alpha.webp"]).bitmap()
        #expect(absoluteDifference(png, webp).mean <= 3.1)

        // The text form ends each line with the same hash.
        let text = try await Imgpipe.run(["info", "--thumbhash"] + names.map(Self.sample))
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.count == names.count)
        for (name, line) in zip(names, lines) {
            #expect(line.hasSuffix(", thumbhash \(hashes[name]?.base64 ?? "?")"), "\(line)")
        }
    }

    @Test func theHashIsThePipelinesHundredPixelDecodeHashed() async throws {
        let file = Self.sample("glass-alpha.png")
        let json = try await Imgpipe.run(["info", "--thumbhash", "--json", file])
        let printed = try #require(try Self.rows(json).first?["thumbhash"] as? String)
        let pipeline = ImagePipeline(configuration: .init(decoders: .standard, loaders: LoaderRegistry([FileDataLoader()])))
        var request = ImageRequest(url: URL(fileURLWithPath: file), targetSize: .pixels(PixelSize(width: 100, height: 100)))
        request.processing.pixelFormat = .rgba8Straight
        let bitmap = try await pipeline.image(for: request).bitmap
        #expect(max(bitmap.width, bitmap.height) == ThumbHash.maxEncodedSide)
        #expect(printed == ThumbHash(bitmap: bitmap).base64)
    }

    /// `--blurhash`: the BlurHash of the same 100-pixel decode, alone or beside the ThumbHash,
    /// in text and in JSON (key `blurhash`).
    @Test func blurhashIsThePipelinesHundredPixelDecodeHashed() async throws {
        let file = Self.sample("balloon-exif6.jpg")
        let json = try await Imgpipe.run(["info", "--blurhash", "--thumbhash", "--json", file])
        #expect(json.status == 0, "\(json.stderr)")
        let row = try #require(try Self.rows(json).first)
        let printed = try #require(row["blurhash"] as? String)
        #expect(row["thumbhash"] is String)
        let pipeline = ImagePipeline(configuration: .init(decoders: .standard, loaders: LoaderRegistry([FileDataLoader()])))
        var request = ImageRequest(url: URL(fileURLWithPath: file), targetSize: .pixels(PixelSize(width: 100, height: 100)))
        request.processing.pixelFormat = .rgba8Straight
        let bitmap = try await pipeline.image(for: request).bitmap
        #expect(printed == BlurHash(bitmap: bitmap).string)
        #expect(BlurHash(string: printed)?.components.x == 4 && BlurHash(string: printed)?.components.y == 3)
        let text = try await Imgpipe.run(["info", "--blurhash", file])
        #expect(text.status == 0 && text.stdout.hasSuffix(", blurhash \(printed)\n"), "\(text.stdout)")
        let alone = try await Imgpipe.run(["info", "--blurhash", "--json", file])
        #expect(try Self.rows(alone).first?["thumbhash"] == nil)
    }

    @Test func withoutTheOptionInfoDecodesNothingAndPrintsNoHash() async throws {
        let json = try await Imgpipe.run(["info", "--json", Self.sample("glass-alpha.png")])
        #expect(try Self.rows(json).first?["thumbhash"] == nil)
        #expect(try Self.rows(json).first?["blurhash"] == nil)
        let text = try await Imgpipe.run(["info", Self.sample("glass-alpha.png")])
        #expect(text.status == 0 && !text.stdout.contains(", thumbhash "))
    }
}
