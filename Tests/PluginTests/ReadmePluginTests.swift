import Foundation
import PipelineCore
import QOIExample
import Testing

/// The README's "Writing a plugin" section shows real, compiled code: its decoder is
/// `FarbfeldDecoder.swift` here (and works), its loader `Examples/CustomLoader/AssetLoader.swift`.
@Suite("README plugin section")
struct ReadmePluginTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The ```swift blocks of the README section `## Writing a plugin`.
    static func blocks() throws -> [String] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## Writing a plugin\n").dropFirst().first)
            .components(separatedBy: "\n## ")[0]
        return section.components(separatedBy: "```swift\n").dropFirst().map { $0.components(separatedBy: "\n```")[0] }
    }

    @Test func theSnippetsAreTheCompiledFilesAndUnder40Lines() throws {
        let blocks = try Self.blocks()
        try #require(blocks.count == 2)
        for (block, path) in zip(blocks, ["Tests/PluginTests/FarbfeldDecoder.swift", "Examples/CustomLoader/AssetLoader.swift"]) {
            let file = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
            #expect(block == file.trimmingCharacters(in: .newlines), "README block differs from \(path)")
            #expect(block.split(separator: "\n", omittingEmptySubsequences: false).count < 40, "\(path)")
        }
    }

    @Test func theFarbfeldDecoderWorksThroughThePipeline() async throws {
        // 2×1: opaque red, half-transparent white (16-bit samples, straight alpha).
        let pixels: [UInt16] = [0xFFFF, 0, 0, 0xFFFF, 0xFFFF, 0xFFFF, 0xFFFF, 0x8080]
        var bytes = Array("farbfeld".utf8) + [0, 0, 0, 2, 0, 0, 0, 1]
        for sample in pixels { bytes += [UInt8(sample >> 8), UInt8(sample & 0xFF)] }
        let loader = ShelfLoader(["ff": .bytes(Data(bytes)), "short": .bytes(Data(bytes.dropLast(4)))])
        let pipeline = ImagePipeline(configuration: .init(
            decoders: DecoderRegistry().registering(QOIDecoder()).registering(FarbfeldDecoder()),
            loaders: LoaderRegistry().registering(loader)))
        let response = try await pipeline.image(for: ImageRequest(url: shelf("ff")))
        #expect(response.format == .farbfeld && response.bitmap.size == PixelSize(width: 2, height: 1))
        #expect(response.bitmap.pixel(x: 0, y: 0) == (255, 0, 0, 255))
        #expect(response.bitmap.pixel(x: 1, y: 0) == (128, 128, 128, 128))
        await #expect(throws: ImagePipelineError.decodingFailed(shelf("short"), underlying:
            ImagePipelineError.corruptData(format: .farbfeld, message: "too short"))) {
            try await pipeline.image(for: ImageRequest(url: shelf("short")))
        }
    }
}
