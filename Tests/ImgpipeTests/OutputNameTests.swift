import Foundation
import PipelineTestSupport
import Testing

@testable import imgpipe

/// A name taken from a URL is one path component of the output folder (issue 41's re-probe
/// wrote one and two levels above it through `%2F..%2F`, and put a newline in a name through
/// `%0A`), and an overlay offset of `Int.min` is a usage error, not a trap.
@Suite("imgpipe output names", .timeLimit(.minutes(2)))
struct OutputNameTests {
    @Test(arguments: [
        ("https://h/a%2F..%2F..%2Fescape.jpg", "a_.._.._escape"),
        ("https://h/%2E%2E.jpg", "picture"),
        ("https://h/..%2F.jpg", ".._"),
        ("https://h/line%0Abreak.png", "line_break"),
        ("https://h/bell%07%1B%7F%C2%85.png", "bell____"),
        ("https://h/sep%E2%80%A8rtl%E2%80%AE.png", "sep_rtl_"),
        ("https://h/photo%20one.jpg", "photo one"),
        ("https://h/caf%C3%A9.jpg", "café"),
        ("https://h/", "picture"),
    ])
    func aURLsNameIsOneSafeComponent(url: String, stem: String) throws {
        let source = try #require(URL(string: url))
        #expect(ThumbnailBatch.stem(of: source) == stem)
        let (paths, _) = ThumbnailBatch.outputPaths(for: [source], folder: { _ in "/out/thumbs" }, name: { "tn_\($0).jpg" })
        let path = try #require(paths.first)
        #expect((path as NSString).deletingLastPathComponent == "/out/thumbs", "\(path) left the folder")
        #expect(!path.unicodeScalars.contains { $0.value < 0x20 }, "a control character in \(path.debugDescription)")
    }

    @Test func anOverlayOffsetOfIntMinIsAUsageError() async throws {
        let source = Imgpipe.samples.appendingPathComponent("aurora.png").path
        for offset in ["\(Int.min),0", "0,\(Int.min)", "100001,0"] {
            let result = try await Imgpipe.run(["thumb", source, "-s", "64", "--overlay", source, "--overlay-offset", offset,
                                                "-o", "/dev/null"])
            #expect(!result.terminatedBySignal && result.status == 2, "\(offset): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("--overlay-offset needs X,Y in whole pixels"), "\(result.stderr)")
        }
    }
}
