import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// `imgpipe serve` with a signing key answers the URLs someone else's builder signs — PyPI's
/// `imgproxy` 1.0.0 (see `ImgproxyURLPythonClientTests` for why that one) — with the format
/// and pixel size they ask for, and refuses a tampered signature or option with 403. Skipped,
/// with the reason printed, where `scripts/python-venv` cannot install it (no PyPI).
@Suite("imgpipe serve with PyPI's imgproxy URLs", .tags(.cpuBound), .timeLimit(.minutes(3)),
       .enabled(if: Curl.exists, "needs curl (scripts/bootstrap)"))
struct ServeURLBuilderTests {
    static let key = ImgproxyPythonClient.key, salt = ImgproxyPythonClient.salt
    static let python = ImgproxyPythonClient.python

    /// One URL the library builds (its constructor's keyword arguments and the advanced
    /// options), and what the answer must be for `local:///aurora.png` (480×320).
    struct Case: Encodable, Sendable {
        var resizing_type: String
        var width, height: Int
        var gravity: String, enlarge: Bool, `extension`: String
        var advanced: [String]
    }

    static let cases: [(Case, accept: String?, ImageFormat, PixelSize)] = [
        (Case(resizing_type: "fill", width: 100, height: 100, gravity: "sm", enlarge: false, extension: "png", advanced: []),
         nil, .png, PixelSize(width: 100, height: 100)),
        (Case(resizing_type: "fit", width: 120, height: 120, gravity: "no", enlarge: false, extension: "webp", advanced: ["q:70"]),
         nil, .webp, PixelSize(width: 120, height: 80)),
        (Case(resizing_type: "fill", width: 90, height: 60, gravity: "we", enlarge: false, extension: "jpg", advanced: ["q:60", "bl:1"]),
         nil, .jpeg, PixelSize(width: 90, height: 60)),
        (Case(resizing_type: "fit", width: 0, height: 64, gravity: "ce", enlarge: false, extension: "avif", advanced: []),
         nil, .avif, PixelSize(width: 96, height: 64)),
        (Case(resizing_type: "force", width: 50, height: 70, gravity: "ce", enlarge: false, extension: "", advanced: ["sm:1"]),
         "image/webp,*/*", .webp, PixelSize(width: 50, height: 70)),
        (Case(resizing_type: "fit", width: 960, height: 960, gravity: "ce", enlarge: true, extension: "png", advanced: ["pd:10"]),
         nil, .png, PixelSize(width: 980, height: 660)),
    ]

    @Test(.enabled(if: python != nil, "PyPI's imgproxy could not be installed (see the printed reason)"))
    func signedURLsFromPyPIsImgproxyAreServedWithTheirFormatAndSize() async throws {
        let python = try #require(Self.python)
        struct Job: Encodable {
            var key: String, salt: String, url: String, cases: [Case]
        }
        let job = try JSONEncoder().encode(Job(key: Self.key, salt: Self.salt, url: "local:///aurora.png", cases: Self.cases.map(\.0)))
        let program = """
            import json, sys
            from imgproxy import ImgProxy
            job = json.load(sys.stdin)
            paths = []
            for case in job["cases"]:
                advanced = case.pop("advanced")
                paths.append(ImgProxy(job["url"], key=job["key"], salt=job["salt"], **case)(*advanced))
            json.dump(paths, sys.stdout)
            """
        let outcome = try await ExternalTool.run(python, ["-c", program], input: job, timeout: 60)
        try #require(outcome.status == 0, "\(outcome.stderr)")
        let paths = try JSONDecoder().decode([String].self, from: outcome.output)
        try #require(paths.count == Self.cases.count)

        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": Imgpipe.samples.path, "IMGPIPE_KEY": Self.key,
                                     "IMGPIPE_SALT": Self.salt]) { server in
            for ((input, accept, format, size), path) in zip(Self.cases, paths) {
                let answer = try await Curl.get(server.url(path), headers: accept.map { ["Accept": $0] } ?? [:])
                try #require(answer.status == 200, "\(path): \(String(decoding: answer.body.prefix(200), as: UTF8.self))")
                let info = try Serve.info(answer.body)
                #expect(info.format == format && info.size == size, "\(path) → \(info.format) \(info.size)")
                #expect(answer[header: "Content-Type"] == format.mimeType)

                // Another signature, or the same one over another size, is refused.
                let signature = try #require(path.split(separator: "/").first)
                let flipped = String(signature.prefix(signature.count - 1)) + (signature.last == "A" ? "B" : "A")
                #expect(try await Curl.get(server.url("/" + flipped + path.dropFirst(signature.count + 1))).status == 403)
                let resized = path.replacingOccurrences(of: ":\(input.width):\(input.height):", with: ":\(input.width + 1):\(input.height):")
                #expect(resized != path)
                #expect(try await Curl.get(server.url(resized)).status == 403)
                #expect(try await Curl.get(server.url(Serve.path("rs:fit:10:10", "local:///aurora.png", format: "png"))).status == 403,
                        "unsigned URLs are refused once a key is set")
            }
        }
    }
}
