import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// `imgpipe serve` through HTTP, as curl sees it: caching headers and 304s, negotiation, the
/// source rules (checked with inotify: a refused source is never opened), statuses, metrics,
/// the queue's 429, the deadline's 504, SIGTERM's drain, and one origin fetch however many
/// sizes and clients. Each test starts its own server (and origin) on loopback ports.
@Suite("imgpipe serve through HTTP", .timeLimit(.minutes(3)), .enabled(if: Curl.exists, "needs curl (scripts/bootstrap)"))
struct ServeBehaviourTests {
    /// A local root holding a copy of `Samples/aurora.png` (480×320), removed by the caller.
    static func root() throws -> URL {
        let root = try Serve.folder("serve-root")
        try FileManager.default.copyItem(at: Imgpipe.samples.appendingPathComponent("aurora.png"), to: root.appendingPathComponent("aurora.png"))
        return root
    }

    /// A source on `origin` whose headers and first 64 bytes come at once and the rest only
    /// after `origin.release("<name>.1")`: a request the test holds.
    static func held(_ origin: FixtureServer, _ name: String) -> String {
        let file = Imgpipe.samples.appendingPathComponent("aurora.png").path
        return origin.url("/steps/\(name)?file=\(file)&type=image/png&cuts=64").absoluteString
    }

    static let chromeAccept = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"

    /// The info endpoint over HTTP: `/info/<signature>/<options>/plain/<source>` answers JSON.
    @Test func theInfoEndpointAnswersJSONOverHTTP() async throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(at: root) }
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path]) { server in
            let answer = try await Curl.get(server.url("/info" + Serve.path("rot:90", "local:///aurora.png")))
            #expect(answer.status == 200)
            #expect(answer[header: "Content-Type"] == "application/json")
            let json = try #require(try JSONSerialization.jsonObject(with: answer.body) as? [String: Any])
            #expect(json["width"] as? Int == 320 && json["height"] as? Int == 480, "aurora is 480×320, turned")
            #expect(json["format"] as? String == "png")
            #expect((json["blurhash"] as? String).flatMap(BlurHash.init(string:)) != nil)
            #expect((json["thumbhash"] as? String).flatMap(ThumbHash.init(base64:)) != nil)
            let missing = try await Curl.get(server.url("/info" + Serve.path("w:1", "local:///missing.png")))
            #expect(missing.status == 404)
        }
    }

    @Test func picturesCarryCacheControlAStrongETagAndAnswer304ToIfNoneMatch() async throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(at: root) }
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path, "IMGPIPE_TTL": "1234"]) { server in
            let url = server.url(Serve.path("rs:fit:64:64", "local:///aurora.png", format: "png"))
            let first = try await Curl.get(url)
            #expect(first.status == 200)
            #expect(first[header: "Cache-Control"] == "public, max-age=1234")
            #expect(first[header: "Content-Type"] == "image/png")
            #expect(first[header: "Vary"] == nil, "the URL names the format: nothing to vary on")
            #expect(try Serve.info(first.body).size == PixelSize(width: 64, height: 43))
            let etag = try #require(first[header: "ETag"])
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count > 2, "a strong ETag: \(etag)")

            let again = try await Curl.get(url, headers: ["If-None-Match": etag])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            #expect(again[header: "ETag"] == etag)
            #expect(try await Curl.get(url, headers: ["If-None-Match": "\"other\""]).status == 200)
        }
    }

    /// librsvg can abort the process (issue 41): a server decodes SVG only when told to.
    @Test func svgSourcesAreRefusedUnlessAllowed() async throws {
        let root = try Serve.folder("serve-svg")
        defer { try? FileManager.default.removeItem(at: root) }
        let svg = #"<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect width="16" height="8" fill="red"/></svg>"#
        try Data(svg.utf8).write(to: root.appendingPathComponent("icon.svg"))
        let path = Serve.path("rs:fit:64:64", "local:///icon.svg", format: "png")
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path]) { server in
            let refused = try await Curl.get(server.url(path))
            #expect(refused.status == 422)
            #expect(!String(decoding: refused.body, as: UTF8.self).contains("<svg"), "no byte of the source is quoted")
        }
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path, "IMGPIPE_ALLOW_SVG": "true"]) { server in
            let drawn = try await Curl.get(server.url(path))
            #expect(drawn.status == 200)
            #expect(try Serve.info(drawn.body).size == PixelSize(width: 64, height: 64))
        }
    }

    @Test func withoutAFormatTheAnswerFollowsAcceptAndVariesOnIt() async throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(at: root) }
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path]) { server in
            let url = server.url(Serve.path("rs:fit:48:48", "local:///aurora.png"))
            for (accept, format) in [(Self.chromeAccept, ImageFormat.avif), ("image/webp,*/*", .webp), ("*/*", .png)] {
                let answer = try await Curl.get(url, headers: ["Accept": accept])
                #expect(answer.status == 200)
                #expect(answer[header: "Vary"] == "Accept", "Accept: \(accept)")
                #expect(try Serve.info(answer.body).format == format, "Accept: \(accept)")
                #expect(answer[header: "Content-Type"] == format.mimeType)
            }
        }
    }

    @Test func anExpiredURLIsNotFound() async throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(at: root) }
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path]) { server in
            let now = Int(Date().timeIntervalSince1970)
            let past = try await Curl.get(server.url(Serve.path("rs:fit:32:32/exp:\(now - 60)", "local:///aurora.png", format: "png")))
            #expect(past.status == 404)
            let future = try await Curl.get(server.url(Serve.path("rs:fit:32:32/exp:\(now + 600)", "local:///aurora.png", format: "png")))
            #expect(future.status == 200)
            let maxAge = try #require(future[header: "Cache-Control"].flatMap { Int($0.replacingOccurrences(of: "public, max-age=", with: "")) })
            #expect((500...600).contains(maxAge), "max-age runs to the expiry, not the TTL: \(maxAge)")
        }
    }

    @Test func allowedSourcesRefuseAnotherPrefix() async throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(at: root) }
        let inside = root.appendingPathComponent("allowed")
        try FileManager.default.createDirectory(at: inside, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: root.appendingPathComponent("aurora.png"), to: inside.appendingPathComponent("aurora.png"))
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path, "IMGPIPE_ALLOWED_SOURCES": "local:///allowed/"]) { server in
            let allowed = try await Curl.get(server.url(Serve.path("rs:fit:32:32", "local:///allowed/aurora.png", format: "png")))
            #expect(allowed.status == 200)
            let other = try await Curl.get(server.url(Serve.path("rs:fit:32:32", "local:///aurora.png", format: "png")))
            #expect(other.status == 403)
        }
    }

    /// A picture outside the root, watched with inotify: `file:`, `data:`, `..` (plain,
    /// percent-encoded, and as curl sends `/../` as is) and a symlink out of the root are
    /// refused with 403, its absolute path is looked for below the root (404), and the file is
    /// never opened. The watch itself is shown to work.
    @Test func refusedSourcesAreNeverRead() async throws {
        let folder = try Serve.folder("serve-outside")
        defer { try? FileManager.default.removeItem(at: folder) }
        let root = folder.appendingPathComponent("root")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let secret = folder.appendingPathComponent("secret.png")
        try FileManager.default.copyItem(at: Imgpipe.samples.appendingPathComponent("aurora.png"), to: secret)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("link.png"), withDestinationURL: secret)
        let png = try Data(contentsOf: secret).prefix(64).base64EncodedString()
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path]) { server in
            let watch = try ServeFileWatch(secret)
            let sources = ["file://\(secret.path)", "data:image/png;base64,\(png)", "local:///../secret.png", "local:///%2e%2e/secret.png",
                           "local:///link.png"]
            for source in sources {
                let answer = try await Curl.get(server.url(Serve.path("rs:fit:32:32", source, format: "png")))
                #expect(answer.status == 403, "\(source): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
            }
            let raw = try await Curl.get(server.url("/insecure/rs:fit:32:32/plain/local:///../secret.png@png"))
            #expect(raw.status == 403)
            // An absolute path names a file below the root, as imgproxy reads it: not there.
            let absolute = try await Curl.get(server.url(Serve.path("rs:fit:32:32", "local://\(secret.path)", format: "png")))
            #expect(absolute.status == 404)
            #expect(watch.events() == 0, "a refused source was opened or read")

            _ = try Data(contentsOf: secret)
            #expect(watch.events() > 0, "the watch sees an open")
        }
    }

    /// A missing file is 404; a file that is not a picture is 422, and neither the body nor
    /// the access log quotes any of its bytes.
    @Test func aMissingFileIsNotFoundAndANonPictureIsUnprocessableWithoutItsBytes() async throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(at: root) }
        let secret = "zqxj" + UUID().uuidString.replacingOccurrences(of: "-", with: "") + "jxqz"
        try Data((secret + "\n" + secret).utf8).write(to: root.appendingPathComponent("notes.png"))
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path]) { server in
            #expect(try await Curl.get(server.url(Serve.path("rs:fit:32:32", "local:///missing.png", format: "png"))).status == 404)
            let answer = try await Curl.get(server.url(Serve.path("rs:fit:32:32", "local:///notes.png", format: "png")))
            #expect(answer.status == 422)
            #expect(!answer.body.isEmpty)
            let body = String(decoding: answer.body, as: UTF8.self)
            let windows = (0...(secret.count - 6)).map { String(secret.dropFirst($0).prefix(6)) }
            #expect(!windows.contains { body.contains($0) }, "the body quotes the file: \(body)")
            #expect(await server.waitForLog { $0.contains { $0.contains(" 422 ") } })
            #expect(!windows.contains { window in server.lines.contains { $0.contains(window) } })
        }
    }

    @Test func healthAnswersAndMetricsCountWhatWasAsked() async throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(at: root) }
        try await ServeProcess.with(["IMGPIPE_LOCAL_FILESYSTEM_ROOT": root.path, "IMGPIPE_PROMETHEUS_BIND": "127.0.0.1:0"]) { server in
            #expect(try await Curl.get(server.url("/health")).status == 200)
            let good = Serve.path("rs:fit:32:32", "local:///aurora.png", format: "png")
            #expect(try await Curl.get(server.url(good)).status == 200)
            #expect(try await Curl.get(server.url(good)).status == 200)
            #expect(try await Curl.get(server.url(Serve.path("rs:fit:32:32", "local:///missing.png", format: "png"))).status == 404)
            #expect(try await Curl.get(server.url(Serve.path("rs:fit:32:32", "file:///etc/hostname", format: "png"))).status == 403)
            #expect(try await Curl.get(server.url("/insecure/nonsense:1/plain/local:///aurora.png")).status == 400)
            let text = try await server.metrics()
            #expect(Serve.metric("requests_total", in: text) == 5, "/health is not a picture request")
            #expect(Serve.metric("status_codes_total{status=\"200\"}", in: text) == 2)
            #expect(Serve.metric("status_codes_total{status=\"404\"}", in: text) == 1)
            #expect(Serve.metric("status_codes_total{status=\"403\"}", in: text) == 1)
            #expect(Serve.metric("status_codes_total{status=\"400\"}", in: text) == 1)
            #expect(try await Curl.get(server.metricsBase.map { $0 + "/other" } ?? "").status == 404)
        }
    }

    /// One worker, a queue of one, and six requests held at the origin: one runs, one waits,
    /// four answer 429 with `Retry-After` at once (before the origin is released).
    @Test func aFullQueueAnswers429WithRetryAfter() async throws {
        try await withFixtureServer { origin in
            let source = Self.held(origin, "queue")
            try await ServeProcess.with(["IMGPIPE_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true", "IMGPIPE_WORKERS": "1",
                                         "IMGPIPE_REQUESTS_QUEUE_SIZE": "1"]) { server in
                let urls = (1...6).map { server.url(Serve.path("rs:fit:\(10 * $0):\(10 * $0)", source, format: "png")) }
                let all = Task { try await Curl.parallel(urls) }
                let refused = await server.waitForLog { $0.filter { $0.contains(" 429 ") }.count >= 4 }
                try await origin.release("queue.1")
                let outcomes = try await all.value
                #expect(refused, "four 429s before the origin answered")
                #expect(outcomes.filter { $0.status == 429 }.count == 4, "\(outcomes)")
                #expect(outcomes.filter { $0.status == 429 }.allSatisfy { !$0.retryAfter.isEmpty }, "\(outcomes)")
                #expect(outcomes.filter { $0.status == 200 }.count == 2, "\(outcomes)")
            }
        }
    }

    @Test func aRequestPastItsTimeoutAnswers504() async throws {
        try await withFixtureServer { origin in
            let source = Self.held(origin, "late")
            try await ServeProcess.with(["IMGPIPE_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true", "IMGPIPE_TIMEOUT": "1"]) { server in
                let started = ContinuousClock.now
                let answer = try await Curl.get(server.url(Serve.path("rs:fit:32:32", source, format: "png")))
                let elapsed = ContinuousClock.now - started
                try await origin.release("late.1")
                #expect(answer.status == 504)
                #expect(elapsed >= .seconds(1) && elapsed < .seconds(15), "\(elapsed)")
            }
        }
    }

    /// SIGTERM while a request waits on the origin: the server says it stops, the request
    /// still completes once the origin answers (within the grace period), and it exits 0.
    @Test func sigtermLetsTheRequestInFlightFinish() async throws {
        try await withFixtureServer { origin in
            let source = Self.held(origin, "drain")
            try await ServeProcess.with(["IMGPIPE_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true"]) { server in
                let request = Task { try await Curl.get(server.url(Serve.path("rs:fit:40:40", source, format: "png"))) }
                try await origin.awaitHits("/steps/drain")
                kill(server.pid, SIGTERM)
                let stopping = await server.waitForLog { $0.contains { $0.contains("stopping") } }
                try await origin.release("drain.1")
                let answer = try await request.value
                let end = await server.stop(sending: nil)
                #expect(stopping)
                #expect(answer.status == 200)
                #expect(try Serve.info(answer.body).size == PixelSize(width: 40, height: 27))
                #expect(end.status == 0 && !end.bySignal, "\(end)")
            }
        }
    }

    /// Four sizes of one source asked at once while the origin holds it (released once all
    /// four are being made): one origin fetch, and none for a size asked later.
    ///
    /// The renderer reads the header (`ImagePipeline.info(for:)`), then asks for the pixels
    /// (`image(for:)`), each through the fetch stage; the header reads share the one download,
    /// and each caller returns only once its bytes are on disk (`PendingStore.storeOnce`), so
    /// no pixel request finds neither the download nor the entry (2 fetches in 1 run of 10
    /// before).
    @Test func fourSizesOfOneSourceFetchItOnce() async throws {
        try await withFixtureServer { origin in
            let source = Self.held(origin, "sizes")
            try await ServeProcess.with(["IMGPIPE_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true", "IMGPIPE_WORKERS": "4",
                                         "IMGPIPE_PROMETHEUS_BIND": "127.0.0.1:0"]) { server in
                let widths = [40, 80, 120, 160]
                let urls = widths.map { server.url(Serve.path("rs:fit:\($0):\($0)", source, format: "png")) }
                let all = Task { try await Curl.parallel(urls) }
                let arrived = try await server.awaitMetric("images_in_progress", atLeast: 4)
                try await origin.release("sizes.1")
                let outcomes = try await all.value
                #expect(arrived)
                #expect(outcomes.map(\.status) == [200, 200, 200, 200])
                let fetches = try await origin.hits("/steps/sizes")
                // Every caller that decoded the download returns only once its disk store has
                // landed (PendingStore.storeOnce), so no pixel request misses both.
                #expect(fetches == 1)
                let answer = try await Curl.get(server.url(Serve.path("rs:fit:120:120", source, format: "webp")))
                #expect(try Serve.info(answer.body).size == PixelSize(width: 120, height: 80))
                #expect(try await origin.hits("/steps/sizes") == fetches, "a later size is made from the disk cache")
            }
        }
    }

    /// Twenty clients asking one URL at once: one origin fetch, one render, twenty answers.
    @Test func twentyClientsOfOneURLMakeOneFetchAndOneRender() async throws {
        try await withFixtureServer { origin in
            let source = Self.held(origin, "crowd")
            try await ServeProcess.with(["IMGPIPE_ALLOW_LOOPBACK_SOURCE_ADDRESSES": "true", "IMGPIPE_PROMETHEUS_BIND": "127.0.0.1:0"]) { server in
                let url = server.url(Serve.path("rs:fit:64:64", source, format: "webp"))
                let all = Task { try await Curl.parallel(Array(repeating: url, count: 20)) }
                let arrived = try await server.awaitMetric("requests_in_progress", atLeast: 20)
                try await origin.release("crowd.1")
                let outcomes = try await all.value
                #expect(arrived)
                #expect(outcomes.count == 20 && outcomes.allSatisfy { $0.status == 200 }, "\(outcomes)")
                #expect(Set(outcomes.map(\.bytes)).count == 1, "one picture for all: \(outcomes)")
                #expect(try await origin.hits("/steps/crowd") == 1)
                let text = try await server.metrics()
                #expect(Serve.metric("request_span_duration_seconds_count{span=\"processing\"}", in: text) == 1, "one render")
            }
        }
    }
}
