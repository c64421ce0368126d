import CodecPNG
import CodecSVG
import Foundation
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// The `svg-worker` built beside the test bundle, else in `.build/debug`.
let svgWorkerExecutable: URL = {
    let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("svg-worker")
    if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug/svg-worker")
        .standardizedFileURL
}()

/// SVG decoded in a worker process (`SVGDecoder.Isolation.worker`): the reproductions of issue
/// 41 (a librsvg panic, an endless filter, a nested picture past the pixel limit, parse bombs)
/// each end as a typed error in bounded time with this process alive, a cancelled decode frees
/// its slot, and a normal document draws the same bytes as in this process.
@Suite(.enabled(if: ExternalTool.exists(svgWorkerExecutable.path), "svg-worker is not built: skipped"), .tags(.cpuBound))
struct SVGWorkerTests {
    static let ns = "xmlns=\"http://www.w3.org/2000/svg\""

    /// A decoder whose worker lives at most `seconds` and may allocate `memory` bytes.
    static func decoder(seconds: Double = 20, memory: Int = 128 << 20) -> SVGDecoder {
        SVGDecoder(isolation: .worker(SVGWorker(executable: svgWorkerExecutable.path, timeLimit: seconds, memoryLimit: memory)))
    }

    /// Measures `body`'s wall-clock seconds.
    static func seconds(_ body: () -> Void) -> Double {
        let clock = ContinuousClock(), start = clock.now
        body()
        let elapsed = clock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    @Test func aDocumentThatPanicsLibrsvgFailsWithACrashAndThisProcessLives() throws {
        #expect {
            _ = try Self.decoder().readInfo(HostileSVG.convolution21)
        } throws: { error in
            guard case SVGWorkerError.crashed(let signal) = error else { return false }
            return signal == SIGABRT && "\(error)".contains("crashed with signal 6")
        }
        // This process is alive, and the next document decodes.
        #expect(try Self.decoder().decode(HostileSVG.circle, options: DecodeOptions()).bitmap.size == PixelSize(width: 8, height: 8))
    }

    @Test func anEndlessFilterPassesItsTimeLimitAndIsKilled() throws {
        let elapsed = Self.seconds {
            #expect {
                _ = try Self.decoder(seconds: 1).decode(HostileSVG.turbulence, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 64)))
            } throws: { error in
                guard case SVGWorkerError.timedOut(let seconds) = error else { return false }
                return seconds == 1 && SVGWorkerError.timedOut(seconds: 1).failureKind == .timedOut
            }
        }
        #expect(elapsed < 10, "took \(elapsed) s for a 1 s limit")
    }

    /// Two endless documents fill both decode slots; their callers cancel; a PNG asked for next
    /// is decoded at once, long before the workers' 120 s limit.
    @Test func cancelledEndlessDecodesFreeTheirSlots() async throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let slow = (0..<2).map { folder.url.appendingPathComponent("turbulence-\($0).svg") }, png = folder.url.appendingPathComponent("dot.png")
        try slow.forEach { try HostileSVG.turbulence.write(to: $0) }
        try PNGEncoder().encode(Bitmap(zeroed: PixelSize(width: 4, height: 4))).write(to: png)
        let started = AsyncStream<Void>.makeStream()
        let decoders = DecoderRegistry()
            .registering(DrawingSignal(inner: Self.decoder(seconds: 120), started: started.continuation))
            .registering(PNGDecoder())
        let pipeline = makePipeline(loader: FileDataLoader(), decoders: decoders, maxConcurrentDecodes: 2)
        let hung = slow.map { url in Task { try await pipeline.image(for: ImageRequest(url: url, width: 64, height: 64)) } }
        var signals = started.stream.makeAsyncIterator()
        for _ in 0..<2 { _ = await signals.next() }  // both workers are drawing: both slots taken
        hung.forEach { $0.cancel() }
        let clock = ContinuousClock(), start = clock.now
        let response = try await withDeadline(60) { try await pipeline.image(for: ImageRequest(url: png)) }
        #expect(response.bitmap.size == PixelSize(width: 4, height: 4))
        #expect(clock.now - start < .seconds(30))
        for task in hung {
            await #expect(throws: CancellationError.self) { _ = try await task.value }
        }
    }

    @Test func anEmbeddedPictureOverThePixelLimitIsRefusedBeforeDrawing() throws {
        // Only the header: its IHDR says 20000 × 20000 (as the reproduction's 1.5 MB document did).
        let document = HostileSVG.embedding(HostileSVG.pngHeader(width: 20_000, height: 20_000))
        for decoder in [SVGDecoder(), Self.decoder()] {
            #expect {
                _ = try decoder.decode(document, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 64)))
            } throws: { error in
                guard case ImagePipelineError.tooManyPixels(let size, _) = error else { return false }
                return size == PixelSize(width: 20_000, height: 20_000)
            }
        }
    }

    /// A 2048 × 2048 embedded picture (16 MiB decoded by gdk-pixbuf, under the pixel limit) in a
    /// worker allowed 8 MiB: it runs out of its memory limit (or draws without the picture),
    /// never past it.
    @Test func anEmbeddedPictureIsBoundedByTheWorkersMemoryLimit() throws {
        let png = try PNGEncoder().encode(Bitmap(zeroed: PixelSize(width: 2048, height: 2048)))
        let document = HostileSVG.embedding(png)
        do {
            let bitmap = try Self.decoder(memory: 8 << 20).decode(document, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 64))).bitmap
            #expect(bitmap.size == PixelSize(width: 64, height: 64))
        } catch let error as SVGWorkerError {
            #expect(error == .outOfMemory(limit: 8 << 20), "\(error)")
        }
        // With room, it draws as in this process.
        let options = DecodeOptions(targetSize: PixelSize(width: 64, height: 64))
        #expect(try Self.decoder().decode(document, options: options).bitmap == SVGDecoder().decode(document, options: options).bitmap)
    }

    /// A compressed document of 400,000 elements: parsing it (for its size alone, as `info`
    /// does) runs out of a 32 MiB limit instead of taking a gigabyte.
    @Test func aParseBombRunsOutOfTheWorkersMemoryLimit() throws {
        let elements = String(repeating: "<g><rect/></g>", count: 200_000)
        let packed = try ExternalTool.runBlocking("/bin/gzip", ["-c", "-n"], input: Data("<svg \(Self.ns)>\(elements)</svg>".utf8)).output
        let elapsed = Self.seconds {
            #expect(throws: SVGWorkerError.outOfMemory(limit: 32 << 20)) { _ = try Self.decoder(memory: 32 << 20).readInfo(packed) }
        }
        #expect(elapsed < 20, "took \(elapsed) s")
    }

    /// The corpus's valid documents draw the same bytes in a worker as in this process, at their
    /// natural size and fitted in 64 × 64, straight and premultiplied; their info is the same.
    @Test(.enabled(if: Corpus.has("svg"), Corpus.missing("svg")))
    func aWorkerDrawsTheSameBytesAsThisProcess() throws {
        let references = try SVGReferences.load()
        let worker = Self.decoder()
        for name in references.valid.keys.sorted().prefix(12) {
            let data = try Corpus.data("svg", name)
            let info = try SVGDecoder().readInfo(data)
            #expect(try worker.readInfo(data) == info, "\(name)")
            for size in [nil, PixelSize(width: 64, height: 64)] {
                for format in [PixelFormat.rgba8Straight, .rgba8Premultiplied] {
                    let options = DecodeOptions(targetSize: size, pixelFormat: format)
                    #expect(try worker.decode(data, options: options).bitmap == SVGDecoder().decode(data, options: options).bitmap,
                            "\(name) at \(size.map { "\($0)" } ?? "natural size"), \(format)")
                }
            }
        }
    }

    @Test func aWorkerThatCannotStartIsATypedError() throws {
        let decoder = SVGDecoder(isolation: .worker(SVGWorker(executable: "/nonexistent/svg-worker")))
        #expect {
            _ = try decoder.readInfo(Data("<svg \(Self.ns)/>".utf8))
        } throws: { error in
            guard case SVGWorkerError.couldNotStart(let path, _) = error else { return false }
            return path == "/nonexistent/svg-worker"
        }
    }
}

/// The SVG decoder, telling `started` each time a drawing begins (its worker has parsed the
/// document and is about to draw).
struct DrawingSignal: ImageDecoding {
    let inner: SVGDecoder
    let started: AsyncStream<Void>.Continuation

    var signatures: [ImageSignature] { inner.signatures }
    func canDecode(_ data: Data) -> Bool { inner.canDecode(data) }

    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try inner.withSession(for: data) { try body(Session(inner: $0, started: started)) }
    }

    struct Session: ImageDecodingSession {
        let inner: any ImageDecodingSession
        let started: AsyncStream<Void>.Continuation

        var info: ImageInfo { inner.info }
        func estimatedPeakMemory(_ options: DecodeOptions) -> Int { inner.estimatedPeakMemory(options) }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            started.yield()
            return try inner.decode(options)
        }
    }
}
