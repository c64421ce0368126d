import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// A door the gated decoder's header read waits at: it says when the read has come in, and
/// holds it (blocking its thread, as a long container walk does) until the test opens it.
private final class HeaderGate: Sendable {
    private let entered = Mutex(false)
    private let isOpen = Mutex(false)
    private let condition = NSCondition()
    private let arrivals: AsyncStream<Void>
    private let arrival: AsyncStream<Void>.Continuation

    init() { (arrivals, arrival) = AsyncStream.makeStream() }

    /// Called by the header read: announces it, then waits until ``open()``.
    func pass() {
        entered.withLock { $0 = true }
        arrival.yield()
        condition.lock()
        while !isOpen.withLock({ $0 }) { condition.wait() }
        condition.unlock()
    }

    /// Waits until a header read has come in.
    func waitForArrival() async {
        for await _ in arrivals { return }
    }

    func open() {
        condition.lock()
        isOpen.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }
}

/// A decoder of "GANI" data whose animation header read waits at a ``HeaderGate``.
private struct GatedAnimatedDecoder: AnimatedImageDecoding {
    static let format = ImageFormat("gani", mimeType: nil, fileExtension: nil)
    let gate: HeaderGate
    var signatures: [ImageSignature] { [.magic(Array("GANI".utf8), format: Self.format)] }

    private struct Session: ImageDecodingSession {
        var info: ImageInfo { ImageInfo(format: GatedAnimatedDecoder.format, size: PixelSize(width: 4, height: 4), frameCount: 3) }
        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            DecodedImage(bitmap: Bitmap(zeroed: PixelSize(width: 4, height: 4)), info: info)
        }
    }

    private final class Frames: AnimationFrameDecoding {
        let animationInfo = AnimationInfo(canvasSize: PixelSize(width: 4, height: 4), frameCount: 3)
        func nextFrame(size: PixelSize?) throws -> AnimationFrame? { nil }
    }

    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R { try body(Session()) }

    func makeAnimationDecoder(for data: Data, options: DecodeOptions) throws -> any AnimationFrameDecoding {
        gate.pass()
        return Frames()
    }
}

/// Issue 22, point 6: `animation(for:)` read the header on the pipeline's actor, so while a
/// 50,000-frame WebP was walked an unrelated 91-byte PNG waited 5.9 s. The read runs on the
/// decode pool now: a still request completes while a header read is held. (On the old code
/// the still request never gets the actor, and the deadline fails the test.)
@Suite("The animation header is read off the actor")
struct AnimationHeaderOffActorTests {
    @Test func aStillRequestCompletesWhileAnAnimationHeaderIsHeld() async throws {
        let gate = HeaderGate()
        let loader = HeldLoader(schemes: ["test", "ganim"]) { request in
            let data = request.url.scheme == "ganim" ? Data("GANI".utf8) : HeldLoader.fakeData(for: request.url)
            return .success(.data(data, ResponseMetadata()))
        }
        let pipeline = makePipeline(loader: loader,
                                    decoders: DecoderRegistry([GatedAnimatedDecoder(gate: gate), CountingDecoder()]))
        defer { gate.open() }  // whatever happens, the held read ends
        let animation = Task { try await pipeline.animation(for: ImageRequest(url: URL(string: "ganim:///held")!)) }
        try await withDeadline { await gate.waitForArrival() }

        let still: ImageResponse?
        do {
            still = try await withDeadline(60) { try await pipeline.image(for: ImageRequest(url: URL(string: "test:///8x8/1")!)) }
        } catch {
            Issue.record("the still request did not complete while the header read was held: \(error)")
            still = nil
        }
        gate.open()
        #expect(still?.bitmap.size == PixelSize(width: 8, height: 8))
        let opened = try await withDeadline { try await animation.value }
        #expect(opened.info.frameCount == 3)
    }
}
