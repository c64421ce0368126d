import Foundation
import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// Signed URLs made by someone else's builder, PyPI's `imgproxy` (klen/imgproxy 1.0.0; the
/// newer `imgproxykit` needs Python 3.12, Debian 12 has 3.11), are verified and read as the
/// library meant. It writes `/<signature>/<advanced…>/g:<gravity>/rs:<type>:<w>:<h>:<enlarge>/<base64 source>[.<ext>]`.
/// Skipped, with a printed reason, where `scripts/python-venv` cannot install it (no PyPI).
@Suite struct ImgproxyURLPythonClientTests {
    /// imgproxy's documentation's example key and salt.
    static let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    /// The venv's python with the library, made once; `nil` (and a message) where it cannot be.
    static let python: String? = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/python-venv").path
        do {
            let outcome = try ExternalTool.runBlocking(script, ["imgproxy-client", "imgproxy==1.0.0"], timeout: 90)
            let path = outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            if outcome.status == 0, ExternalTool.exists(path) { return path }
            print("ImgproxyURLPythonClientTests skipped: scripts/python-venv could not install PyPI's imgproxy (no PyPI?): "
                  + outcome.stderr.split(separator: "\n").suffix(2).joined(separator: " | "))
        } catch {
            print("ImgproxyURLPythonClientTests skipped: scripts/python-venv did not run: \(error)")
        }
        return nil
    }()

    /// One URL the library builds: its constructor's arguments and the advanced options.
    /// (Python's keyword names.)
    struct Case: Encodable, Sendable {
        var url, resizing_type: String
        var width, height: Int
        var gravity: String, enlarge: Bool, `extension`: String
        var advanced: [String]
    }

    /// Each case and what the library meant by it.
    static let cases: [(Case, @Sendable (RenderOptions) -> Bool)] = [
        (Case(url: "https://example.com/images/curiosity.jpg", resizing_type: "fill", width: 300, height: 400, gravity: "sm",
              enlarge: false, extension: "png", advanced: []),
         { $0.resizingType == .fill && $0.width == 300 && $0.height == 400 && $0.gravity.anchor == .attention && !$0.enlarge && $0.format == .png }),
        (Case(url: "https://example.com/a.jpg", resizing_type: "fit", width: 100, height: 0, gravity: "no",
              enlarge: true, extension: "webp", advanced: ["q:80", "bl:2.5"]),
         { $0.resizingType == .fit && $0.width == 100 && $0.height == 0 && $0.enlarge && $0.gravity.anchor == .top && $0.format == .webp
             && $0.quality == 80 && $0.blur == 2.5 }),
        (Case(url: "http://cdn.example.org/p/q.png", resizing_type: "auto", width: 0, height: 200, gravity: "fp:0.25:0.75",
              enlarge: false, extension: "", advanced: ["pd:10:20", "bg:ff8000", "cb:v2"]),
         { $0.resizingType == .auto && $0.height == 200 && $0.gravity.anchor == .focalPoint(x: 0.25, y: 0.75) && $0.format == nil
             && $0.padding == RenderOptions.Padding(top: 10, right: 20, bottom: 10, left: 20)
             && $0.background == RGBAColor(red: 255, green: 128, blue: 0) && $0.cacheBuster == "v2" }),
        (Case(url: "https://example.com/big.jpg", resizing_type: "fill", width: 640, height: 480, gravity: "soea:10:5",
              enlarge: false, extension: "avif", advanced: ["c:1000:800:nowe", "t:10:ffffff:1:0", "ex:1:ce", "dpr:2"]),
         { $0.gravity == RenderOptions.Gravity(.bottomRight, offsetX: 10, offsetY: 5) && $0.format == .avif && $0.dpr == 2
             && $0.crop == RenderOptions.Crop(width: 1000, height: 800, gravity: RenderOptions.Gravity(.topLeft))
             && $0.trim == RenderOptions.TrimOptions(threshold: 10, color: .white, equalHorizontal: true) && $0.extend == RenderOptions.Gravity() }),
        (Case(url: "https://example.com/фото/ünï cödé.jpg?w=1&h=2#frag", resizing_type: "fit", width: 50, height: 50, gravity: "ce",
              enlarge: false, extension: "jpg", advanced: ["sm:0", "scp:0", "ar:0", "fq:webp:70:avif:40", "fn:cGljdHVyZQ:1", "att:1", "exp:4102444800"]),
         { !$0.stripMetadata && !$0.stripColorProfile && !$0.autoRotate && $0.formatQuality == [.webp: 70, .avif: 40] && $0.filename == "picture"
             && $0.returnAttachment && $0.expires == Date(timeIntervalSince1970: 4_102_444_800) && $0.format == .jpeg }),
        (Case(url: "local:///photos/a.jpg", resizing_type: "fill", width: 10, height: 10, gravity: "we",
              enlarge: false, extension: "gif", advanced: ["wm:0.5:soea:10:10:0.2", "msr:12.5", "maf:1", "pr:thumb"]),
         { $0.watermark == RenderOptions.Watermark(opacity: 0.5, position: RenderOptions.Gravity(.bottomRight, offsetX: 10, offsetY: 10), scale: 0.2)
             && $0.maxSourceResolution == 12.5 && $0.maxAnimationFrames == 1 && $0.quality == 55 && $0.gravity.anchor == .left && $0.format == .gif }),
        (Case(url: "https://example.com/" + String(repeating: "long-path-segment/", count: 30) + "x.heic", resizing_type: "fit",
              width: 16, height: 16, gravity: "ce", enlarge: false, extension: "heic", advanced: []),
         { $0.width == 16 && $0.format == .heif }),
    ]

    @Test(.enabled(if: python != nil, "PyPI's imgproxy could not be installed (see the printed reason)"))
    func signedURLsFromPyPIsImgproxyAreVerifiedAndRead() throws {
        let python = try #require(Self.python)
        struct Job: Encodable {
            var key: String, salt: String, cases: [Case]
        }
        let job = try JSONEncoder().encode(Job(key: Self.key, salt: Self.salt, cases: Self.cases.map(\.0)))
        let program = """
            import json, sys
            from imgproxy import ImgProxy
            job = json.load(sys.stdin)
            paths = []
            for case in job["cases"]:
                url, advanced = case.pop("url"), case.pop("advanced")
                paths.append(ImgProxy(url, key=job["key"], salt=job["salt"], **case)(*advanced))
            json.dump(paths, sys.stdout)
            """
        let outcome = try ExternalTool.runBlocking(python, ["-c", program], input: job, timeout: 30)
        try #require(outcome.status == 0, "\(outcome.stderr)")
        let paths = try JSONDecoder().decode([String].self, from: outcome.output)
        try #require(paths.count == Self.cases.count)

        // A second pair first: any configured pair may sign.
        let signing = try URLSigning(keys: ["00ff", Self.key], salts: ["ff00", Self.salt])
        let presets = try Presets(parsing: "thumb=q:55")
        for ((input, meant), path) in zip(Self.cases, paths) {
            let url = try ImgproxyURL.parse(path, signing: signing, presets: presets)
            #expect(url.source == input.url, "\(path)")
            #expect(meant(url.options), "\(path) → \(url.options)")

            // The same path with one option changed is not signed.
            let tampered = path.replacingOccurrences(of: "/rs:\(input.resizing_type):\(input.width):", with: "/rs:\(input.resizing_type):\(input.width + 1):")
            #expect(tampered != path)
            let error = #expect(throws: ServerError.self) { try ImgproxyURL.parse(tampered, signing: signing, presets: presets) }
            #expect(error?.kind == .forbidden)
        }
    }
}
