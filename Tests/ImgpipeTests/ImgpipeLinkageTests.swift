import Foundation
import PipelineTestSupport
import Testing

/// imgpipe links FoundationEssentials and not the rest of Foundation (libFoundation's 6 MiB of
/// mappings, ICU's data through libFoundationInternationalization): every module it is built
/// from imports FoundationEssentials on Linux.
@Suite("imgpipe linkage")
struct ImgpipeLinkageTests {
    /// The binary the tests run, and the release binary when one was built since (an older one
    /// may come from another checkout's sources).
    static let binaries: [URL] = {
        func modified(_ url: URL) -> Date? { try? FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date }
        let release = Imgpipe.root.appendingPathComponent(".build/release/imgpipe")
        var binaries = [Imgpipe.binary].filter { FileManager.default.isExecutableFile(atPath: $0.path) }
        if let built = modified(release), let tested = modified(Imgpipe.binary), built >= tested { binaries.append(release) }
        return binaries
    }()

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/readelf") && !binaries.isEmpty,
                   "readelf (binutils) or a built imgpipe is missing: skipped"))
    func imgpipeNeedsNoFullFoundation() throws {
        for binary in Self.binaries {
            let dynamic = try ExternalTool.runBlocking("/usr/bin/readelf", ["-d", binary.path])
            #expect(dynamic.status == 0, "\(dynamic.stderr)")
            let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }
            #expect(needed.contains { $0.contains("[libFoundationEssentials.so]") }, "\(binary.path): \(needed)")
            #expect(!needed.contains { $0.contains("[libFoundation.so]") || $0.contains("[libFoundationInternationalization.so]") },
                    "\(binary.path) needs full Foundation: \(needed)")
        }
    }
}
