import CacheDisk
import CodecJPEG
import Foundation
import LoaderHTTP
import PipelineCore
import PipelineTestSupport
import Testing

/// A 256×192 picture with detail at every scale (so each scan of its progressive encoding
/// visibly refines it), encoded by our JPEG encoder, and where its scans start.
private struct ProgressiveFixture {
    let data: Data
    let file: URL
    /// The offset of every start-of-scan marker (FF DA), in order.
    let scanStarts: [Int]

    static func make(progressive: Bool = true, in directory: URL) throws -> ProgressiveFixture {
        let width = 256, height = 192
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                let checker = ((x / 8) + (y / 8)) % 2 == 0
                pixels[i] = UInt8(x)
                pixels[i + 1] = UInt8((y * 255) / height)
                pixels[i + 2] = checker ? 230 : UInt8((x * y) % 200)
            }
        }
        let bitmap = try #require(Bitmap(width: width, height: height, bytesPerRow: width * 4, pixelFormat: .rgba8Straight,
                                         bytes: pixels))
        let data = try JPEGEncoder().encode(bitmap, options: EncodeOptions(quality: 90, progressive: progressive))
        let file = directory.appendingPathComponent(progressive ? "progressive.jpg" : "baseline.jpg")
        try data.write(to: file)
        // In entropy-coded data FF is followed by 00 or a restart marker, so FF DA is a real SOS.
        let bytes = [UInt8](data)
        let starts = (0..<bytes.count - 1).filter { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA }
        return ProgressiveFixture(data: data, file: file, scanStarts: starts)
    }

    /// Cuts that end each piece just past the start of the next scan: piece k completes scan
    /// k + 1 (the marker after it has arrived), and the last piece brings the rest.
    var cutsAfterEachScan: [Int] { scanStarts.dropFirst().map { $0 + 2 } }

    /// `/steps` serving this file cut at `cuts` (no cut: in one piece), under the hold name `name`.
    func stepsPath(_ name: String, cuts: [Int]) -> String {
        let pieces = cuts.isEmpty ? "chunk=\(data.count)" : "cuts=\(cuts.map(String.init).joined(separator: ","))"
        return "/steps/\(name)?file=\(file.path)&\(pieces)"
    }
}

/// A pipeline with the real HTTP loader (``heldBodyLoader()``: the tests hold each piece of the
/// body until they have seen the last preview) and JPEG decoder, previews on, every chance
/// taken unless a `policy` is given (no interval, no growth: the test paces the body itself).
private func previewPipeline(diskCache: (any DataCaching)? = nil, previews: Bool = true,
                             policy: ImagePipeline.PreviewPolicy = .init(minimumInterval: 0, minimumGrowth: 1),
                             events: EventRecorder? = nil) -> ImagePipeline {
    var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry([JPEGDecoder()]),
                                                    loaders: LoaderRegistry([heldBodyLoader()]),
                                                    diskCache: diskCache, maxConcurrentDecodes: 2, negativeCacheLifetime: 0,
                                                    eventHandler: events?.handler)
    configuration.previewPolicy = previews ? policy : nil
    return ImagePipeline(configuration: configuration)
}

/// Follows `task`'s previews, releasing the next of `pieces` held pieces of `/steps/<name>`
/// after each one (so each piece arrives only once the preview before it was seen), until the
/// task ends; returns the previews, each passed to `check` first.
private func previewsReleasingAfterEach(_ task: ImageTask, pieces: Int, name: String, server: FixtureServer,
                                        check: (ImageResponse) -> Void = { _ in }) async throws -> [ImageResponse] {
    var previews: [ImageResponse] = []
    var released = 0
    for await preview in task.previews {
        check(preview)
        previews.append(preview)
        if released < pieces {
            released += 1
            try await server.release("\(name).\(released)")
        }
    }
    return previews
}

/// Releases each held piece of `/steps/<name>` once the bytes before it have arrived (as the
/// task's progress shows), until the task ends; returns how many previews the task delivered
/// (counted from the start, beside the releases: a finished task holds none).
private func previewCountReleasingByProgress(_ task: ImageTask, cuts: [Int], name: String, server: FixtureServer) async throws -> Int {
    let previews = task.previews  // subscribed now, before any piece is released
    let counting = Task {
        var count = 0
        for await _ in previews { count += 1 }
        return count
    }
    var released = 0
    for await progress in task.progress where released < cuts.count && progress.completed >= Int64(cuts[released]) {
        released += 1
        try await server.release("\(name).\(released)")
    }
    return await counting.value
}

/// Runs `body` with a fresh fixture (progressive unless told), the fixture server and a
/// directory for the test's files, removed afterwards.
private func withPreviewFixture<T>(progressive: Bool = true,
                                   _ body: (ProgressiveFixture, FixtureServer, URL) async throws -> T) async throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let fixture = try ProgressiveFixture.make(progressive: progressive, in: directory.url)
    return try await withFixtureServer { server in try await body(fixture, server, directory.url) }
}

@Suite("Progressive previews over a real HTTP server", .timeLimit(.minutes(3)))
struct ProgressivePreviewTests {
    /// The server sends one more scan only after the test saw the preview of the last one: a
    /// preview per completed scan arrives, in order, each closer to the final picture, all
    /// flagged as previews and at the requested size; nothing is in the memory cache until the
    /// final, which is the whole picture and is what the memory and disk caches then hold.
    @Test func previewsArriveInOrderImproveAndAreNeverCached() async throws {
        try await withPreviewFixture { fixture, server, directory in
            let cuts = fixture.cutsAfterEachScan
            #expect(cuts.count >= 5, "the encoder's progressive script has several scans: \(fixture.scanStarts)")
            let disk = try DiskCache(directory: directory.appendingPathComponent("cache"))
            let events = EventRecorder()
            let pipeline = previewPipeline(diskCache: disk, events: events)
            let request = ImageRequest(url: server.url(fixture.stepsPath("order", cuts: cuts)), width: 128, height: 96)
            let task = pipeline.imageTask(for: request)
            let previews = try await previewsReleasingAfterEach(task, pieces: cuts.count, name: "order", server: server) { preview in
                #expect(preview.isPreview)
                #expect(preview.bitmap.size == PixelSize(width: 128, height: 96))
                #expect(pipeline.cachedImage(for: request) == nil, "a preview is never the cached picture")
            }
            let final = try await task.response
            #expect(!final.isPreview)
            #expect(final.source == .network)
            var late = 0
            for await _ in task.previews { late += 1 }
            #expect(late == 0, "a finished task holds no preview (a late stream ends at once)")
            let quality = previews.map { psnr($0.bitmap, final.bitmap) }
            print("previews: \(previews.count) for \(cuts.count + 1) scans; PSNR to the final: "
                  + quality.map { String(format: "%.1f", $0) }.joined(separator: ", "))
            #expect(previews.count == cuts.count, "one preview per completed scan before the last")
            let reported = events.all.compactMap { event -> Int? in
                if case .previewDecoded(_, let steps, let seconds) = event, seconds >= 0 { return steps }
                return nil
            }
            #expect(reported == Array(1...cuts.count), "each preview's decode is reported with its steps")
            #expect(zip(quality, quality.dropFirst()).allSatisfy { $0 <= $1 + 0.5 }, "each preview is closer: \(quality)")
            #expect((quality.first ?? 99) < (quality.last ?? 0), "\(quality)")
            let cached = try #require(pipeline.cachedImage(for: request))
            #expect(!cached.isPreview)
            #expect(cached.bitmap.bytes == final.bitmap.bytes)
            let stored = try #require(await disk.cachedData(for: request.url))
            #expect(stored.data == fixture.data, "the disk keeps the whole body, never a prefix")
        }
    }

    /// Two callers of one picture share its previews; when one cancels after the first
    /// preview, its stream ends, and the other still gets the rest and the final.
    @Test func coalescedWaitersShareThePreviewsAndOneCancellingStopsOnlyItsOwn() async throws {
        try await withPreviewFixture { fixture, server, _ in
            let cuts = fixture.cutsAfterEachScan
            let pipeline = previewPipeline()
            let request = ImageRequest(url: server.url(fixture.stepsPath("shared", cuts: cuts)), width: 64, height: 48)
            let staying = pipeline.imageTask(for: request)
            let leaving = pipeline.imageTask(for: request)
            var leavingPreviews = 0
            for await _ in leaving.previews {
                leavingPreviews += 1
                leaving.cancel()
            }
            #expect(leavingPreviews == 1)
            await #expect(throws: CancellationError.self) { try await leaving.response }
            let stayingPreviews = try await previewsReleasingAfterEach(staying, pieces: cuts.count, name: "shared", server: server) {
                #expect($0.isPreview)
            }
            let final = try await staying.response
            #expect(!final.isPreview)
            #expect(stayingPreviews.count == cuts.count, "the first preview (seen late, as the latest) and one per later scan")
            #expect(try await server.hits("/steps/shared") == 1, "one download for both")
        }
    }

    /// The last caller cancelling stops the preview decoding with the download: its stream
    /// ends at once and the server sees the client go away while most of the body is unsent.
    @Test func cancellingTheOnlyCallerStopsThePreviews() async throws {
        try await withPreviewFixture { fixture, server, _ in
            let pipeline = previewPipeline()
            let request = ImageRequest(url: server.url(fixture.stepsPath("cancel", cuts: fixture.cutsAfterEachScan)),
                                       width: 64, height: 48)
            let task = pipeline.imageTask(for: request)
            var seen = 0
            for await _ in task.previews {
                seen += 1
                task.cancel()
            }
            #expect(seen == 1)
            await #expect(throws: CancellationError.self) { try await task.response }
            // The decode work and its download are cancelled with their last waiter: a new
            // caller starts a new download.
            let again = pipeline.imageTask(for: request)
            for await _ in again.previews { again.cancel() }
            let hits = try await server.hits("/steps/cancel")
            #expect(hits == 2)
        }
    }

    /// A baseline JPEG's rows arrive top to bottom: no preview, however the body arrives.
    @Test func aBaselineJPEGGivesNoPreview() async throws {
        try await withPreviewFixture(progressive: false) { fixture, server, _ in
            let size = fixture.data.count
            let cuts = [size / 4, size / 2, size * 3 / 4]
            let pipeline = previewPipeline()
            let request = ImageRequest(url: server.url(fixture.stepsPath("baseline", cuts: cuts)), width: 64, height: 48)
            let task = pipeline.imageTask(for: request)
            let previews = try await previewCountReleasingByProgress(task, cuts: cuts, name: "baseline", server: server)
            _ = try await task.response
            #expect(previews == 0)
        }
    }

    /// With the default growth (2), a preview needs twice the bytes of the one before: however
    /// many scans complete, the previews' bytes form a geometric series (the first at the
    /// first scan, then at most one per doubling).
    @Test func eachPreviewNeedsTwiceTheBytesOfTheLast() async throws {
        try await withPreviewFixture { fixture, server, _ in
            let cuts = fixture.cutsAfterEachScan
            let pipeline = previewPipeline(policy: ImagePipeline.PreviewPolicy(minimumInterval: 0))
            let request = ImageRequest(url: server.url(fixture.stepsPath("growth", cuts: cuts)), width: 64, height: 48)
            let task = pipeline.imageTask(for: request)
            let previews = try await previewCountReleasingByProgress(task, cuts: cuts, name: "growth", server: server)
            _ = try await task.response
            let doublings = Int(log2(Double(fixture.data.count) / Double(cuts[0])))
            print("growth 2: \(previews) previews for \(cuts.count) complete scans (\(doublings) doublings of the first)")
            #expect(previews >= 1)
            #expect(previews <= doublings + 1)
            #expect(previews < cuts.count)
        }
    }

    /// Without a preview policy nothing is kept or decoded early: no preview.
    @Test func noPreviewsWithoutAPolicy() async throws {
        try await withPreviewFixture { fixture, server, _ in
            let cuts = fixture.cutsAfterEachScan
            let pipeline = previewPipeline(previews: false)
            let request = ImageRequest(url: server.url(fixture.stepsPath("off", cuts: cuts)), width: 64, height: 48)
            let task = pipeline.imageTask(for: request)
            let previews = try await previewCountReleasingByProgress(task, cuts: cuts, name: "off", server: server)
            #expect(!(try await task.response).isPreview)
            #expect(previews == 0)
        }
    }

    /// A processed request's previews go through its processors: a circle's corners are
    /// transparent in every preview, as in the final.
    @Test func aProcessedRequestsPreviewsAreProcessed() async throws {
        try await withPreviewFixture { fixture, server, _ in
            let cuts = fixture.cutsAfterEachScan
            let pipeline = previewPipeline()
            var request = ImageRequest(url: server.url(fixture.stepsPath("circle", cuts: cuts)), width: 64, height: 48)
            request.contentMode = .fill
            request.processors = [.circle]
            let task = pipeline.imageTask(for: request)
            let previews = try await previewsReleasingAfterEach(task, pieces: cuts.count, name: "circle", server: server) { preview in
                #expect(preview.isPreview)
                #expect(preview.bitmap.pixel(x: 0, y: 0).a == 0, "the corner is outside the circle")
                #expect(preview.bitmap.pixel(x: 32, y: 24).a == 255)
            }
            let final = try await task.response
            #expect(!final.isPreview)
            #expect(final.bitmap.pixel(x: 0, y: 0).a == 0)
            #expect(previews.count == cuts.count)
        }
    }

    /// A bound cell shows the placeholder (nil), each preview, then the final, and never a
    /// preview after it; rebound to another picture, it never shows the old one's previews.
    @Test func aBindingShowsEachPreviewThenTheFinalAndNothingOfAnOldRequest() async throws {
        try await withPreviewFixture { fixture, server, _ in try await Self.bindingScenario(server, fixture) }
    }

    @MainActor private static func bindingScenario(_ server: FixtureServer, _ fixture: ProgressiveFixture) async throws {
            let cuts = fixture.cutsAfterEachScan
            let pipeline = previewPipeline()
            let (shown, display) = AsyncStream.makeStream(of: ImageResponse?.self)
            // A failure ends the stream, so the test fails instead of waiting for a display.
            let binding = ImageTargetBinding(
                pipeline: pipeline,
                onFailure: { request, error in
                    Issue.record("\(request.url) failed: \(error)")
                    display.finish()
                },
                display: { display.yield($0) })
            let first = ImageRequest(url: server.url(fixture.stepsPath("bound", cuts: cuts)), width: 64, height: 48)
            binding.bind(first)
            var sequence: [ImageResponse?] = []
            var released = 0
            for await response in shown {
                sequence.append(response)
                guard let response else { continue }
                if !response.isPreview { break }
                if released < cuts.count {
                    released += 1
                    try await server.release("bound.\(released)")
                }
            }
            #expect(sequence.count > 1 && sequence[0] == nil, "the placeholder first")
            let previews = sequence.compactMap { $0 }.filter(\.isPreview)
            #expect(previews.count == cuts.count)
            #expect(sequence.last??.isPreview == false, "the final comes last")
            #expect(binding.displayed?.isPreview == false)

            // A second picture starts arriving; after its first preview the cell is rebound to
            // a third, and the second's remaining pieces arrive: none of them is shown.
            let second = ImageRequest(url: server.url(fixture.stepsPath("dropped", cuts: cuts)), width: 32, height: 24)
            let third = ImageRequest(url: server.url(fixture.stepsPath("third", cuts: [])), width: 16, height: 12)
            binding.bind(second)
            var afterRebind: [ImageResponse?] = []
            var rebound = false
            for await response in shown {
                if rebound { afterRebind.append(response) }
                if !rebound, let response, response.isPreview {
                    rebound = true
                    binding.bind(third)
                    for piece in 1...cuts.count { try await server.release("dropped.\(piece)") }
                }
                if let response, !response.isPreview, rebound { break }
            }
            #expect(afterRebind.count > 1 && afterRebind[0] == nil)
            #expect(afterRebind.compactMap { $0 }.allSatisfy { $0.bitmap.size == PixelSize(width: 16, height: 12) },
                    "only the third picture shows once it is bound: \(afterRebind.compactMap { $0?.bitmap.size })")
            display.finish()
    }

    /// The hash of a decoded picture goes into its disk entry: a new pipeline over the same
    /// disk cache (a cold launch) answers `placeholder(for:)` with the same hash and makes no
    /// request; so does the first pipeline, from memory.
    @Test func thePlaceholderIsKeptWithTheDiskEntry() async throws {
        try await withPreviewFixture { fixture, server, directory in
            let cacheFolder = directory.appendingPathComponent("cache")
            let url = server.url("/slow/placeholder?file=\(fixture.file.path)&chunk=100000&interval_ms=0")
            let request = ImageRequest(url: url, width: 64, height: 48)
            let loaded = try await previewPipeline(diskCache: try DiskCache(directory: cacheFolder)).image(for: request)
            let hash = try #require(loaded.placeholder, "the decode made a placeholder")
            let cold = previewPipeline(diskCache: try DiskCache(directory: cacheFolder))
            #expect(cold.cachedImage(for: request) == nil)
            #expect(await cold.placeholder(for: request) == hash)
            var bigger = request
            bigger.targetSize = .pixels(PixelSize(width: 200, height: 150))
            #expect(await cold.placeholder(for: bigger) == hash, "the same entry for another size")
            let unknown = ImageRequest(url: server.url("/slow/never?file=\(fixture.file.path)"), width: 64, height: 48)
            #expect(await cold.placeholder(for: unknown) == nil)
            let hits = try await server.hits("/slow/placeholder")
            #expect(hits == 1, "placeholders never load")
            let stored = try #require(await DiskCache(directory: cacheFolder).cachedDigest(for: url))
            #expect(stored.info.placeholder == hash)
            try await Self.bindShowsThePlaceholderFirst(cold, request, hash)
        }
    }

    /// A binding with a placeholder handler over a cold pipeline: the cell is empty, then gets
    /// the hash, then the picture (from the disk); nothing after the picture.
    @MainActor private static func bindShowsThePlaceholderFirst(_ pipeline: ImagePipeline, _ request: ImageRequest,
                                                               _ hash: ThumbHash) async throws {
        enum Shown: Equatable { case empty, placeholder(ThumbHash), picture(ImageSource) }
        let (shown, sink) = AsyncStream.makeStream(of: Shown.self)
        let binding = ImageTargetBinding(
            pipeline: pipeline,
            onFailure: { request, error in
                Issue.record("\(request.url) failed: \(error)")
                sink.finish()
            },
            placeholder: { sink.yield(.placeholder($0)) },
            display: { response in
                sink.yield(response.map { .picture($0.source) } ?? .empty)
                if response != nil { sink.finish() }
            })
        binding.bind(request)
        var sequence: [Shown] = []
        for await item in shown { sequence.append(item) }
        #expect(sequence == [.empty, .placeholder(hash), .picture(.disk)])
    }
}
