import Foundation
import PipelineTestSupport
import Testing

/// `--fail-on none|truncated|error|warning` (issue 41): libvips's `fail_on`, its default
/// (`none`) included, checked against `vips thumbnail … --fail-on` on the same cut and damaged
/// files. Where the two differ, the difference is listed and checked to still be one.
@Suite("imgpipe --fail-on against libvips", .serialized, .tags(.cpuBound))
struct ImgpipeFailOnTests {
    static let levels = ["none", "truncated", "error", "warning"]

    /// Cut and damaged copies of the samples, written to `folder`: name → bytes.
    static func inputs(in folder: URL) throws -> [String] {
        func sample(_ name: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: Imgpipe.samples.appendingPathComponent(name))) }
        var files: [String: [UInt8]] = [:]
        for name in ["mandelbrot.jpg", "dunes-progressive.jpg", "aurora.png", "glass-alpha.webp", "orbit.gif"] {
            let bytes = try sample(name)
            files["half-" + name] = Array(bytes.prefix(bytes.count / 2))
        }
        let gif = try sample("orbit.gif")
        files["fifth-orbit.gif"] = Array(gif.prefix(gif.count / 5))
        // libjpeg's "Corrupt JPEG data: premature end of data segment", not a cut.
        var damaged = try sample("mandelbrot.jpg")
        damaged[damaged.count / 2] = 0xFF
        damaged[damaged.count / 2 + 1] = 0xD0
        files["marker-mandelbrot.jpg"] = damaged
        for (name, bytes) in files { try Data(bytes).write(to: folder.appendingPathComponent(name)) }
        return files.keys.sorted()
    }

    /// Where imgpipe and libvips 8.14 part, and why: libspng returns the rows of a cut PNG,
    /// libpng cannot (ours fails at every level); libnsgif draws what a cut GIF holds without a
    /// word (ours reports the truncation: `none` shows the frame, the others fail).
    static let differences: Set<String> = ["half-aurora.png none", "fifth-orbit.gif none", "half-orbit.gif truncated",
                                           "half-orbit.gif error", "half-orbit.gif warning"]

    @Test func eachLevelFailsWhereLibvipsFails() async throws {
        let folder = try TemporaryDirectory()
        let names = try Self.inputs(in: folder.url)
        let vips = ExternalTool.exists(vipsTool)
        var ours: [String: Bool] = [:]
        for name in names {
            let input = folder.url.appendingPathComponent(name).path
            for level in Self.levels {
                let output = folder.url.appendingPathComponent("ours-\(level)-\(name).png").path
                let run = try await Imgpipe.run(["thumb", input, "-s", "32", "--fail-on", level, "-o", output])
                #expect(run.status == 0 || run.status == 1, "\(name) \(level): \(run.stderr)")
                ours["\(name) \(level)"] = run.status == 0
                if run.status != 0 { #expect(run.stderr.contains("cannot decode"), "\(name) \(level): \(run.stderr)") }
            }
        }
        // What imgpipe does, whether or not vips is here to compare with.
        for level in Self.levels {
            #expect(ours["half-mandelbrot.jpg \(level)"] == (level == "none"), "a cut JPEG: grey rows at none only")
            #expect(ours["half-dunes-progressive.jpg \(level)"] == (level == "none"))
            #expect(ours["marker-mandelbrot.jpg \(level)"] == (level != "warning"), "libjpeg's corrupt data is a warning")
            #expect(ours["half-orbit.gif \(level)"] == (level == "none"))
            #expect(ours["half-aurora.png \(level)"] == false)
        }
        guard vips else {
            print("ImgpipeFailOnTests: vips (libvips-tools) is absent: the comparison with libvips is skipped")
            return
        }
        for name in names {
            for level in Self.levels {
                let output = folder.url.appendingPathComponent("vips-\(level)-\(name).png").path
                let run = try await ExternalTool.run(vipsTool, ["thumbnail", folder.url.appendingPathComponent(name).path, output, "32",
                                                                "--fail-on", level])
                let case_ = "\(name) \(level)"
                if Self.differences.contains(case_) {
                    #expect(ours[case_] != (run.status == 0), "\(case_): listed as a difference, but imgpipe and vips agree now")
                } else {
                    #expect(ours[case_] == (run.status == 0), "\(case_): imgpipe \(ours[case_] == true ? "wrote" : "failed"), vips exit \(run.status)")
                }
            }
        }
    }

    @Test func anUnknownLevelIsAUsageError() async throws {
        let run = try await Imgpipe.run(["thumb", Imgpipe.samples.appendingPathComponent("aurora.png").path, "--fail-on", "never"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--fail-on must be one of none, truncated, error, warning, got 'never'"), "\(run.stderr)")
    }
}
