import CodecGIF
import Foundation
import GIFFixtureWriter
import PipelineCore
import PipelineTestSupport
import Testing

/// Disposal, transparency, interlacing and clipping on GIFs made here, checked pixel by pixel
/// against what browsers show.
@Suite(.tags(.cpuBound))
struct GIFCompositingTests {
    static let palette: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 0, 255), (0, 255, 0), (255, 255, 255)]
    static let red = [UInt8]([255, 0, 0, 255]), blue = [UInt8]([0, 0, 255, 255]), green = [UInt8]([0, 255, 0, 255])
    static let white = [UInt8]([255, 255, 255, 255]), clear = [UInt8]([0, 0, 0, 0])

    func frames(_ data: Data) throws -> [AnimationFrame] {
        let decoder = try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
        var frames: [AnimationFrame] = []
        while let frame = try decoder.nextFrame(size: nil) { frames.append(frame) }
        return frames
    }

    func pixel(_ bitmap: Bitmap, _ x: Int, _ y: Int) -> [UInt8] {
        let p = bitmap.pixel(x: x, y: y)
        return [p.r, p.g, p.b, p.a]
    }

    @Test func disposalNoneBackgroundAndPrevious() throws {
        let data = GIFWriter.gif(width: 4, height: 4, palette: Self.palette, loopCount: 0, frames: [
            .init(width: 4, height: 4, indices: [UInt8](repeating: 0, count: 16), delayCentiseconds: 0, disposal: 1),
            .init(x: 1, y: 1, width: 2, height: 2, indices: [1, 1, 1, 1], delayCentiseconds: 1, disposal: 3),
            .init(x: 0, y: 0, width: 1, height: 1, indices: [2], delayCentiseconds: 5, disposal: 2),
            .init(x: 3, y: 3, width: 1, height: 1, indices: [3], delayCentiseconds: 20, disposal: 0),
        ])
        let info = try GIFDecoder().readInfo(data)
        #expect(info.frameCount == 4)
        let decoder = try GIFDecoder().makeAnimationDecoder(for: data, options: DecodeOptions())
        #expect(decoder.animationInfo.loopCount == 0)
        #expect(decoder.animationInfo.totalDurationMilliseconds == 260)
        let f = try frames(data)
        try #require(f.count == 4)
        #expect(pixel(f[1].bitmap, 1, 1) == Self.blue && pixel(f[1].bitmap, 0, 0) == Self.red)
        // Frame 1 disposed to previous: its blue is gone before frame 2 draws.
        #expect(pixel(f[2].bitmap, 1, 1) == Self.red && pixel(f[2].bitmap, 0, 0) == Self.green)
        // Frame 2 disposed to background: its pixel is transparent, the rest stays.
        #expect(pixel(f[3].bitmap, 0, 0) == Self.clear)
        #expect(pixel(f[3].bitmap, 3, 3) == Self.white)
        #expect(pixel(f[3].bitmap, 1, 1) == Self.red)
        // Delays as stored; 0 and 10 ms are shown for 100 ms.
        #expect(f.map(\.delayMilliseconds) == [0, 10, 50, 200])
        #expect(f.map(\.displayMilliseconds) == [100, 100, 50, 200])
    }

    @Test func transparentIndexKeepsTheCanvasAndFramesAreClipped() throws {
        let data = GIFWriter.gif(width: 3, height: 1, palette: Self.palette, frames: [
            .init(width: 3, height: 1, indices: [0, 0, 0], disposal: 1),
            .init(x: 1, y: 0, width: 4, height: 2, indices: [1, 3, 3, 3, 3, 3, 3, 3], disposal: 1, transparentIndex: 1),
        ])
        let f = try frames(data)
        try #require(f.count == 2)
        #expect(pixel(f[1].bitmap, 0, 0) == Self.red && pixel(f[1].bitmap, 1, 0) == Self.red && pixel(f[1].bitmap, 2, 0) == Self.white)
        // Transparency on the first frame leaves the canvas clear; the still picture is that frame.
        let first = GIFWriter.gif(width: 2, height: 1, palette: Self.palette, frames: [
            .init(width: 2, height: 1, indices: [3, 1], transparentIndex: 1),
        ])
        let still = try GIFDecoder().decode(first, options: DecodeOptions())
        #expect(pixel(still.bitmap, 0, 0) == Self.white && pixel(still.bitmap, 1, 0) == Self.clear)
        #expect(try GIFDecoder().readInfo(first).hasAlpha)
    }

    /// A single opaque frame has alpha only when it leaves part of the canvas uncovered.
    @Test func aFirstFrameThatLeavesTheCanvasPartlyUncoveredHasAlpha() throws {
        let full = GIFWriter.gif(width: 2, height: 2, palette: Self.palette, frames: [.init(width: 2, height: 2, indices: [0, 1, 2, 3])])
        let partial = GIFWriter.gif(width: 2, height: 2, palette: Self.palette, frames: [.init(x: 1, width: 1, height: 2, indices: [0, 1])])
        let grown = GIFWriter.gif(width: 1, height: 1, palette: Self.palette, frames: [.init(width: 2, height: 1, indices: [0, 1])])
        #expect(try !GIFDecoder().readInfo(full).hasAlpha)
        #expect(try GIFDecoder().readInfo(partial).hasAlpha)
        // A first frame larger than the screen grows the canvas and covers it.
        let info = try GIFDecoder().readInfo(grown)
        #expect(info.size == PixelSize(width: 2, height: 1) && !info.hasAlpha)
        let still = try GIFDecoder().decode(partial, options: DecodeOptions())
        #expect(pixel(still.bitmap, 0, 0) == Self.clear && pixel(still.bitmap, 1, 1) == Self.blue)
    }

    @Test func interlacedEqualsProgressiveAndLocalPalettesApply() throws {
        let indices = (0..<(5 * 11)).map { UInt8($0 % 4) }
        let plain = GIFWriter.gif(width: 5, height: 11, palette: Self.palette, frames: [.init(width: 5, height: 11, indices: indices)])
        let interlaced = GIFWriter.gif(width: 5, height: 11, palette: Self.palette,
                                       frames: [.init(width: 5, height: 11, indices: indices, interlaced: true)])
        #expect(try GIFDecoder().readInfo(interlaced).isProgressive)
        #expect(try frames(plain)[0].bitmap == frames(interlaced)[0].bitmap)
        let local = GIFWriter.gif(width: 1, height: 1, palette: Self.palette, frames: [
            .init(width: 1, height: 1, indices: [0], localPalette: [(1, 2, 3)]),
        ])
        #expect(pixel(try frames(local)[0].bitmap, 0, 0) == [1, 2, 3, 255])
    }

    @Test func aCutFrameIsATypedErrorAfterTheFramesThatDecoded() throws {
        let data = GIFWriter.gif(width: 20, height: 20, palette: Self.palette, frames: [
            .init(width: 20, height: 20, indices: [UInt8](repeating: 1, count: 400)),
            .init(width: 20, height: 20, indices: [UInt8](repeating: 2, count: 400)),
        ])
        let cut = data.prefix(data.count - 200)
        let decoder = try GIFDecoder().makeAnimationDecoder(for: cut, options: DecodeOptions())
        #expect(try decoder.nextFrame(size: nil) != nil)
        #expect(throws: ImagePipelineError.self) { try decoder.nextFrame(size: nil) }
        #expect(try decoder.nextFrame(size: nil) == nil)
    }
}
