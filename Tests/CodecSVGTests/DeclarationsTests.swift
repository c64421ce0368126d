import Foundation
import PipelineTestSupport
import Testing

/// `Sources/CRSVG/shim.h` declares the librsvg, cairo and GLib functions CodecSVG calls instead
/// of including their headers (see the comment there). Compiled after the real headers, every
/// prototype must agree with them: a C compiler rejects a conflicting redeclaration.
@Suite(.tags(.cpuBound))
struct DeclarationsTests {
    static let shim = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/CRSVG/shim.h").standardizedFileURL

    static let tools = ["/usr/bin/cc", "/usr/bin/pkg-config"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }

    @Test(.enabled(if: tools, "cc or pkg-config is not installed: skipped"))
    func theShimAgreesWithLibrsvgsCairosAndGLibsHeaders() throws {
        let flags = try Self.run("/usr/bin/pkg-config", ["--cflags", "librsvg-2.0"]).output
            .split(whereSeparator: \.isWhitespace).map(String.init)
        let source = "#include <librsvg/rsvg.h>\n#include <cairo.h>\n#include <gio/gio.h>\n#include \"\(Self.shim.path)\"\n"
        let result = try Self.run("/usr/bin/cc", ["-fsyntax-only", "-Wall", "-Werror", "-x", "c", "-"] + flags, input: source)
        #expect(result.status == 0, "\(result.output)")
    }

    static func run(_ tool: String, _ arguments: [String], input: String = "") throws -> (status: Int32, output: String) {
        let result = try ExternalTool.runBlocking(tool, arguments, input: Data(input.utf8))
        return (result.status, result.stdout + result.stderr)
    }
}
