import Foundation
import Testing

/// Code blocks marked `<!-- compiled: PATH -->` in README.md and in the DocC catalogs
/// (`Sources/*/*.docc/*.md`) are compiled files of this package: the whole file, or (for a file
/// with `// README begin` … `// README end`) its imports and the lines between the markers,
/// unindented. The README's app (`<!-- readme-app: PATH -->`) is built by `scripts/readme-app`.
@Suite("README and DocC blocks compiled by this package")
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The compiled files the documentation shows, and the page that shows each.
    static let shown = [
        "Tests/ImagePipelineKitTests/ReadmeTestingExample.swift": "Sources/PipelineCore/PipelineCore.docc/TestingWithImagePipelineTesting.md",
        "Tests/ImagePipelineKitTests/ReadmeKitExample.swift": "Sources/ImagePipelineKit/ImagePipelineKit.docc/ImagePipelineKit.md",
        "Tests/PluginTests/FarbfeldDecoder.swift": "Sources/PipelineCore/PipelineCore.docc/WritingADecoder.md",
        "Examples/CustomLoader/AssetLoader.swift": "Sources/PipelineCore/PipelineCore.docc/WritingALoader.md",
        "Tests/LoaderHTTPTests/ErrorStatusExample.swift": "Sources/PipelineCore/PipelineCore.docc/ErrorsAndFailures.md",
        "Tests/ImageServerTests/ImageServerPageExample.swift": "Sources/ImageServer/ImageServer.docc/ImageServer.md",
    ]

    /// README.md and every DocC catalog page, relative to the package root.
    static func documentationPages() throws -> [String] {
        let sources = root.appendingPathComponent("Sources")
        var pages = ["README.md"]
        for module in try FileManager.default.contentsOfDirectory(atPath: sources.path).sorted() {
            let catalog = "Sources/\(module)/\(module).docc"
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(catalog).path) else { continue }
            pages += names.filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
        }
        return pages
    }

    /// `(page, path, block)` for every marked ```swift block.
    static func markedBlocks() throws -> [(page: String, path: String, block: String)] {
        try documentationPages().flatMap { page in
            let text = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8)
            return text.components(separatedBy: "<!-- compiled: ").dropFirst().compactMap { part -> (page: String, path: String, block: String)? in
                guard let end = part.range(of: " -->\n```swift\n") else { return nil }
                let path = String(part[..<end.lowerBound])
                return (page, path, part[end.upperBound...].components(separatedBy: "\n```")[0])
            }
        }
    }

    /// What the documentation should show of `file`.
    static func expected(_ file: String) -> String {
        let lines = file.components(separatedBy: "\n")
        guard let begin = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "// README begin" }),
              let end = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "// README end" }), begin < end
        else { return file.trimmingCharacters(in: .newlines) }
        let imports = lines.filter { $0.hasPrefix("import ") }
        let body = lines[(begin + 1)..<end].map { $0.hasPrefix("    ") ? String($0.dropFirst(4)) : $0 }
        return (imports + [""] + body).joined(separator: "\n")
    }

    @Test func theMarkedBlocksAreTheCompiledFiles() throws {
        let blocks = try Self.markedBlocks()
        #expect(Dictionary(blocks.map { ($0.path, $0.page) }, uniquingKeysWith: { first, _ in first }) == Self.shown)
        #expect(blocks.count == Self.shown.count, "a compiled file is shown twice")
        for (page, path, block) in blocks {
            let file = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
            #expect(block == Self.expected(file), "\(page): block differs from \(path)")
        }
    }

    /// The plugin pages show a whole decoder and a whole loader: each stays short enough to read.
    @Test func thePluginSnippetsAreTheCompiledFilesAndUnder40Lines() throws {
        let blocks = try Self.markedBlocks().filter { $0.path.hasSuffix("FarbfeldDecoder.swift") || $0.path.hasSuffix("AssetLoader.swift") }
        try #require(blocks.count == 2)
        for (_, path, block) in blocks {
            #expect(block.split(separator: "\n", omittingEmptySubsequences: false).count < 40, "\(path)")
        }
    }

    /// Apps test with any framework: the published test support never imports one.
    @Test func thePublishedTestSupportLinksNoTestFramework() throws {
        let folder = Self.root.appendingPathComponent("Sources/ImagePipelineTesting")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for name in files {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            for framework in ["Testing", "XCTest"] {
                #expect(!text.contains("import \(framework)\n"), "\(name) imports \(framework)")
            }
        }
    }
}
