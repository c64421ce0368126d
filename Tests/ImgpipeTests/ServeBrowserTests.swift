import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Debian's Chromium.
private let chromium = "/usr/bin/chromium"

/// Headless Chromium (Debian's `chromium`) loads a page of `<img>` tags served through
/// `imgpipe serve`, with no format in their URLs: the server sees Chromium's own `Accept`
/// (its access log), answers AVIF (or WebP) with `Vary: Accept`, and every picture decodes in the
/// browser (the page writes `ok <decoded>/<all>` into its title once loaded; `--dump-dom`
/// prints it). The page comes from a Python server on another loopback port, so the pictures
/// are cross-origin requests as on a real site. Chromium resolves no name but 127.0.0.1 and
/// uses no proxy. Skipped when chromium is absent.
@Suite("imgpipe serve in Chromium", .tags(.cpuBound), .timeLimit(.minutes(3)),
       .enabled(if: ExternalTool.exists(chromium) && Curl.exists, "needs chromium and curl (scripts/bootstrap)"))
struct ServeBrowserTests {
    /// Each picture: a sample and the box it is fitted in (sizes as the sample's aspect gives them).
    static let pictures: [(name: String, box: Int)] = [
        ("aurora.png", 160), ("glass-alpha.png", 120), ("mandelbrot.jpg", 100), ("orbit.gif", 64), ("rings.png", 90), ("dunes-progressive.jpg", 140),
    ]

    @Test func chromiumGetsAVIFOrWebPWithVaryAndDecodesEveryPicture() async throws {
        let folder = try Serve.folder("serve-browser")
        defer { try? FileManager.default.removeItem(at: folder) }
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": Imgpipe.samples.path]) { server in
            let paths = Self.pictures.map { Serve.path("rs:fit:\($0.box):\($0.box)", "local:///\($0.name)") }
            let images = paths.map { "<img src=\"\(server.url($0))\">" }.joined(separator: "\n")
            let page = """
                <!doctype html><html><head><title>pending</title></head><body>
                \(images)
                <script>
                window.addEventListener('load', () => {
                  const all = [...document.images];
                  const decoded = all.filter(image => image.complete && image.naturalWidth > 0).length;
                  document.title = 'ok ' + decoded + '/' + all.length;
                });
                </script></body></html>
                """
            let site = folder.appendingPathComponent("site")
            try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
            try Data(page.utf8).write(to: site.appendingPathComponent("index.html"))
            let pageServer = try StaticServer(directory: site)
            defer { pageServer.stop() }

            let run = try await ExternalTool.run(chromium, [
                "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
                "--user-data-dir=\(folder.appendingPathComponent("profile").path)", "--no-proxy-server",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--virtual-time-budget=20000", "--dump-dom", pageServer.url("index.html"),
            ], timeout: 90)
            #expect(run.status == 0 && !run.terminatedBySignal, "chromium: \(run.stderr.suffix(400))")
            #expect(run.stdout.contains("<title>ok \(paths.count)/\(paths.count)</title>"), "\(run.stdout.prefix(300))")

            // The access log: one 200 per picture, each with Chromium's own Accept.
            let logged = await server.waitForLog { lines in paths.allSatisfy { path in lines.contains { $0.contains(" \(path) ") } } }
            #expect(logged, "\(server.lines)")
            var accepts = Set<String>()
            var sizes: [String: String] = [:]
            for path in paths {
                let line = try #require(server.lines.first { $0.contains(" \(path) ") })
                #expect(line.contains(" \(path) 200 "), "\(line)")
                let accept = try #require(line.components(separatedBy: " accept=").last)
                // Chromium's own: the formats it decodes, APNG among them (curl's is */*).
                #expect(accept.contains("image/avif") && accept.contains("image/webp") && accept.contains("image/apng"), "\(line)")
                accepts.insert(accept)
                sizes[path] = line.components(separatedBy: " \(path) 200 ").last?.split(separator: " ").first.map(String.init)
            }
            #expect(accepts.count == 1, "one Accept for every picture: \(accepts)")

            // What Chromium was answered: the same URLs with its Accept.
            let accept = try #require(accepts.first)
            for (path, picture) in zip(paths, Self.pictures) {
                let answer = try await Curl.get(server.url(path), headers: ["Accept": accept])
                #expect(answer.status == 200)
                #expect(answer[header: "Vary"] == "Accept")
                let info = try Serve.info(answer.body)
                #expect([ImageFormat.avif, .webp].contains(info.format), "\(picture.name): \(info)")
                #expect(answer[header: "Content-Type"] == info.format.mimeType, "\(picture.name)")
                #expect(max(info.size.width, info.size.height) == picture.box, "\(picture.name): \(info)")
                #expect(sizes[path] == "\(answer.body.count)B", "Chromium was sent these bytes: \(picture.name)")
            }
        }
    }
}
