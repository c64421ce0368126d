import Foundation
import Testing

/// README blocks marked `<!-- compiled: PATH -->` are the compiled files of this target: the
/// whole file, or (for a file with `// README begin` … `// README end`) its imports and the
/// lines between the markers, unindented.
@Suite("README blocks compiled by this target")
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `(path, block)` for every marked ```swift block.
    static func markedBlocks() throws -> [(String, String)] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        return readme.components(separatedBy: "<!-- compiled: ").dropFirst().compactMap { part in
            guard let end = part.range(of: " -->\n```swift\n") else { return nil }
            let path = String(part[..<end.lowerBound])
            return (path, part[end.upperBound...].components(separatedBy: "\n```")[0])
        }
    }

    /// What the README should show of `file`.
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
        #expect(Set(blocks.map(\.0)) == ["Tests/ImagePipelineKitTests/ReadmeTestingExample.swift",
                                         "Tests/ImagePipelineKitTests/ReadmeKitExample.swift"])
        for (path, block) in blocks {
            let file = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
            #expect(block == Self.expected(file), "README block differs from \(path)")
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
