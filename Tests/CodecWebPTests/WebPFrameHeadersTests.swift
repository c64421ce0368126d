@testable import CodecWebP
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Issue 22, point 6: an animation's total duration from one walk over the container's chunk
/// headers. Summing it with libwebp's frame iterator (O(n) per step) took 28 s for a 4.6 MB
/// file of 100,000 frames; the walk must give libwebp's own durations, in linear time.
@Suite(.tags(.cpuBound))
struct WebPFrameHeadersTests {
    /// One `ANMF` chunk per duration: the 64×64 frame of the limit tests' fixture at (0, 0).
    static func animation(durations: [Int]) throws -> Data {
        let chunk = WebPAnimationTests.chunk, le = WebPAnimationTests.le
        let bitstream = try WebPAnimationLimitTests.frameBitstream()
        let vp8x = chunk("VP8X", [0x02 | 0x10, 0, 0, 0] + le(63, 3) + le(63, 3))
        var body = Array("WEBP".utf8) + vp8x + chunk("ANIM", [0, 0, 0, 0] + le(0, 2))
        body.reserveCapacity(body.count + durations.count * (bitstream.count + 26))
        for duration in durations {
            body += chunk("ANMF", le(0, 3) + le(0, 3) + le(63, 3) + le(63, 3) + le(duration, 3) + [0] + bitstream)
        }
        return Data(Array("RIFF".utf8) + le(body.count, 4) + body)
    }

    static func walked(_ data: Data) -> (durations: [Int], complete: Bool) {
        var durations: [Int] = []
        let complete = data.withUnsafeBytes { WebPFrameHeaders.walk($0.bindMemory(to: UInt8.self)) { durations.append($0) } }
        return (durations, complete)
    }

    /// libwebp's durations: the delays of the frames its `WebPAnimDecoder` delivers.
    static func libwebpDurations(_ data: Data) throws -> [Int] {
        let frames = try WebPDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
        var delays: [Int] = []
        while let frame = try frames.nextFrame(size: PixelSize(width: 1, height: 1)) {
            delays.append(try #require(frame.delayMilliseconds))
        }
        return delays
    }

    /// A still WebP (lossy and lossless, no `ANMF` chunk) is one frame of duration 0, as
    /// libwebp's iterator gives, not an unknown duration.
    @Test(.enabled(if: Corpus.has("webp"), Corpus.missing("webp")), arguments: ["test.webp", "lossless1.webp"])
    func aStillPictureLastsZero(name: String) throws {
        let data = try Corpus.data("webp", name)
        let info = try WebPDecoder().makeAnimationDecoder(for: data, options: DecodeOptions()).animationInfo
        #expect(info.frameCount == 1 && info.totalDurationMilliseconds == 0)
    }

    /// The corpus's animations: the walk finds every frame, with libwebp's duration, and the
    /// total is their sum.
    @Test(.enabled(if: Corpus.has("webp-animated"), Corpus.missing("webp-animated")),
          arguments: ["anim-gr.webp", "beacon.webp", "gifplayer-muybridge.webp", "moon_impact.webp", "sample_big.webp"])
    func theWalkGivesLibwebpsDurationsOnTheCorpus(name: String) throws {
        let data = try Corpus.data("webp-animated", name)
        let reference = try Self.libwebpDurations(data)
        let walk = Self.walked(data)
        #expect(walk.complete)
        #expect(walk.durations == reference)
        let info = try WebPDecoder().makeAnimationDecoder(for: data, options: DecodeOptions()).animationInfo
        #expect(info.totalDurationMilliseconds == reference.reduce(0, +))
    }

    /// Made here with varied durations (24-bit values included), checked against libwebp.
    @Test func theWalkGivesLibwebpsDurationsForVariedFrames() throws {
        let durations = [0, 1, 100, 65_535, 65_536, 0xFF_FFFF, 40, 7]
        let data = try Self.animation(durations: durations)
        #expect(try Self.libwebpDurations(data) == durations)
        #expect(Self.walked(data).durations == durations)
    }

    /// 100,000 frames: the header gives the right count and total (the walk is one pass; the
    /// iterator's sum was quadratic and took half a minute).
    @Test func aHundredThousandFramesGiveTheirTotal() throws {
        let durations = (0..<100_000).map { $0 % 7 * 10 }
        let data = try Self.animation(durations: durations)
        let unlimited = DecodeOptions(maxAnimationFrameCount: .max, maxAnimationPixelCount: .max)
        let info = try WebPDecoder().makeAnimationDecoder(for: data, options: unlimited).animationInfo
        #expect(info.frameCount == 100_000)
        #expect(info.totalDurationMilliseconds == durations.reduce(0, +))
    }

    /// Every length is checked: a chunk running past the container, an `ANMF` too short for
    /// its header, or a file that is no WebP ends the walk as damaged, without reading past the
    /// bytes; the total is then unknown, never wrong.
    @Test func damagedContainersEndTheWalk() throws {
        var bytes = [UInt8](try Self.animation(durations: [10, 20, 30]))
        let truncated = Data(bytes.prefix(bytes.count - 5))
        #expect(!Self.walked(truncated).complete)
        #expect(Self.walked(Data("RIFF\u{0}\u{0}\u{0}\u{0}WEBX".utf8)).complete == false)
        #expect(Self.walked(Data()).complete == false)
        // The first ANMF's length (after RIFF, VP8X and ANIM chunks: offset 12 + 18 + 14 + 4)
        // declared as 2^32 - 1.
        bytes.replaceSubrange(48..<52, with: [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(!Self.walked(Data(bytes)).complete)
        bytes.replaceSubrange(48..<52, with: [8, 0, 0, 0])  // shorter than the frame header
        #expect(!Self.walked(Data(bytes)).complete)
        bytes.withUnsafeBufferPointer { #expect(WebPFrameHeaders.totalDuration($0, frameCount: 3) == nil) }
        let whole = try Self.animation(durations: [10, 20, 30])
        whole.withUnsafeBytes {
            #expect(WebPFrameHeaders.totalDuration($0.bindMemory(to: UInt8.self), frameCount: 3) == 60)
            #expect(WebPFrameHeaders.totalDuration($0.bindMemory(to: UInt8.self), frameCount: 4) == nil)
        }
    }
}
