import CGIF
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes GIF with giflib: a still picture, or an animation frame by frame
/// (``makeAnimationSession(size:loopCount:options:)``).
///
/// GIF stores at most 256 colours a frame and one-bit transparency: pixels with alpha below
/// 128 become transparent, the others opaque. Each frame gets its own palette (``Palette``),
/// exact when its pixels have few enough colours, otherwise by median cut, mapped with
/// Floyd–Steinberg dithering unless ``dithering`` says not (`GIFQuantizer`). No GPL
/// quantiser is involved.
///
/// Animations are written small, as gifsicle's `-O` writes them: each frame stores only the
/// rectangle that changed since the one before, unchanged pixels inside it as transparent (so
/// they keep the colour already shown), and an identical frame lengthens the one before it. A
/// frame that makes a shown pixel transparent has the frame before it cleared ("restore to
/// background") and is then stored whole. The session holds two frames and the bytes written.
public struct GIFEncoder: AnimationEncoding {
    /// Error diffusion when a frame has more colours than its palette.
    public enum Dithering: String, Hashable, Sendable {
        /// Floyd–Steinberg: smooth gradients, a little noise. The default.
        case floydSteinberg
        /// Each pixel its nearest colour: flat areas stay flat, gradients band.
        case none
    }

    /// Where the palette lives.
    public enum Palette: String, Hashable, Sendable {
        /// A local colour table for every frame: the best colours. The default.
        case perFrame
        /// One global table, made from the first frame, for every frame: smaller files for
        /// animations whose colours do not change.
        case global
    }

    /// `ImageFormat.gif`.
    public var format: ImageFormat { .gif }
    /// Error diffusion. Default ``Dithering/floydSteinberg``.
    public var dithering: Dithering
    /// Palette per frame or global. Default ``Palette/perFrame``.
    public var palette: Palette

    /// An encoder with these choices.
    public init(dithering: Dithering = .floydSteinberg, palette: Palette = .perFrame) {
        self.dithering = dithering
        self.palette = palette
    }

    /// GIF's side limit (16-bit fields).
    public static let maximumSide = 65_535

    /// A one-frame GIF of `bitmap` (`options` other than the common range checks do not apply).
    /// - Throws: `EncodingError`.
    public func encode(_ bitmap: Bitmap, options: EncodeOptions) throws -> Data {
        let session = try makeAnimationSession(size: bitmap.size, loopCount: nil, options: options)
        try session.add(bitmap, durationMilliseconds: 0)
        return try session.finish()
    }

    /// Starts a GIF of `size` frames; `loopCount` 0 loops forever (a NETSCAPE2.0 block),
    /// `nil` plays once (no block).
    /// - Throws: `EncodingError`.
    public func makeAnimationSession(size: PixelSize, loopCount: Int?, options: EncodeOptions) throws -> any AnimationEncodingSession {
        try validateCommonOptions(options)
        guard size.isValid, size.width <= Self.maximumSide, size.height <= Self.maximumSide else {
            throw EncodingError.unsupported(format: .gif, message: "\(size.width)×\(size.height) (GIF's sides are 1–65535)")
        }
        return try GIFAnimationSession(size: size, loopCount: loopCount, dithering: dithering, palette: palette)
    }
}

/// The bytes giflib writes, through `EGifOpen`'s write callback.
private final class GIFOutput {
    var data = Data()
}

private let writeGIF: OutputFunc = { file, buffer, count in
    guard let file, let buffer, count > 0, let user = file.pointee.UserData else { return 0 }
    Unmanaged<GIFOutput>.fromOpaque(user).takeUnretainedValue().data.append(buffer, count: Int(count))
    return count
}

/// One GIF being written: the giflib handle (closed when the session ends), the frame waiting
/// for the next one (which decides its disposal), and the canvas the next frame is drawn over.
final class GIFAnimationSession: AnimationEncodingSession {
    private let size: PixelSize
    private let dithering: GIFEncoder.Dithering
    private let paletteScope: GIFEncoder.Palette
    private let output = GIFOutput()
    private var file: UnsafeMutablePointer<GifFileType>?
    /// The frame not yet written (straight RGBA, alpha 0 or 255) and how long it shows.
    private var pending: (pixels: [UInt8], duration: Int)?
    /// What is on screen before `pending` is drawn, as source colours (alpha 0 or 255).
    private var base: [UInt8]
    private var global: GIFQuantizer?
    private var written = 0

    init(size: PixelSize, loopCount: Int?, dithering: GIFEncoder.Dithering, palette: GIFEncoder.Palette) throws {
        self.size = size
        self.dithering = dithering
        paletteScope = palette
        base = [UInt8](repeating: 0, count: size.pixelCount * 4)
        var error: Int32 = 0
        let user = Unmanaged.passUnretained(output).toOpaque()
        guard let opened = EGifOpen(user, writeGIF, &error) else { throw Self.failure(error, "opening the writer") }
        file = opened
        EGifSetGifVersion(opened, true)
        self.loopCount = loopCount
    }

    private let loopCount: Int?
    private var headerWritten = false

    deinit { close() }

    private func close() {
        guard let file else { return }
        var error: Int32 = 0
        _ = EGifCloseFile(file, &error)  // frees the handle whatever it reports
        self.file = nil
    }

    func add(_ frame: Bitmap, durationMilliseconds: Int) throws {
        guard file != nil else { throw EncodingError.failed(format: .gif, message: "the GIF is finished") }
        guard frame.size == size else { throw EncodingError.failed(format: .gif, message: "a \(frame.size) frame in a \(size) GIF") }
        var pixels = frame.unpremultipliedBytes()
        for i in stride(from: 0, to: pixels.count, by: 4) {
            if pixels[i + 3] < 128 { (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3]) = (0, 0, 0, 0) } else { pixels[i + 3] = 255 }
        }
        let duration = max(0, durationMilliseconds)
        if var waiting = pending {
            if waiting.pixels == pixels {  // the same picture: the one before shows longer
                waiting.duration += duration
                pending = waiting
                return
            }
            try write(waiting, next: pixels)
        }
        pending = (pixels, duration)
    }

    func finish() throws -> Data {
        guard let file, let waiting = pending else {
            throw EncodingError.failed(format: .gif, message: pending == nil ? "a GIF needs a frame" : "the GIF is finished")
        }
        try write(waiting, next: nil)
        pending = nil
        var error: Int32 = 0
        let closed = EGifCloseFile(file, &error)  // writes the trailer and frees the handle
        self.file = nil
        guard closed == GIF_OK else { throw Self.failure(error, "closing the file") }
        return output.data
    }

    /// Writes `frame`: its changed rectangle over ``base``, cleared afterwards when `next`
    /// makes a shown pixel transparent.
    private func write(_ frame: (pixels: [UInt8], duration: Int), next: [UInt8]?) throws {
        guard let file else { return }
        let w = size.width, h = size.height, pixels = frame.pixels
        if !headerWritten { try writeHeader(file, first: pixels) }
        // Restore to background (transparent) after this frame when the next hides a pixel it shows.
        let clears = next.map { next in stride(from: 3, to: pixels.count, by: 4).contains { pixels[$0] == 255 && next[$0] == 0 } } ?? false
        // The rectangle that changed since what is on screen (all of it for a cleared frame, so
        // clearing it leaves nothing behind; the first frame's too).
        var rect = (x: 0, y: 0, width: w, height: h)
        if !clears && written > 0 {
            var minX = w, minY = h, maxX = -1, maxY = -1
            for y in 0..<h {
                for x in 0..<w where !Self.same(pixels, base, (y * w + x) * 4) {
                    minX = min(minX, x); maxX = max(maxX, x); minY = min(minY, y); maxY = max(maxY, y)
                }
            }
            rect = maxX < 0 ? (0, 0, 1, 1) : (minX, minY, maxX - minX + 1, maxY - minY + 1)
        }
        // Inside it: unchanged pixels (already shown) and transparent ones are the transparent index.
        func keeps(_ i: Int) -> Bool { pixels[i * 4 + 3] == 0 || (written > 0 && Self.same(pixels, base, i * 4)) }
        var inRect = [UInt8](repeating: 0, count: rect.width * rect.height * 4)
        var needsTransparency = false
        for y in 0..<rect.height {
            for x in 0..<rect.width {
                let s = ((rect.y + y) * w + rect.x + x) * 4, d = (y * rect.width + x) * 4
                if keeps((rect.y + y) * w + rect.x + x) { needsTransparency = true; continue }
                for c in 0..<4 { inRect[d + c] = pixels[s + c] }
            }
        }
        let count = rect.width * rect.height
        func coloured(_ i: Int) -> Bool { inRect[i * 4 + 3] == 255 }
        var quantizer = global ?? GIFQuantizer(inRect, pixels: count, maxColours: needsTransparency ? 255 : 256, isColoured: coloured)
        let transparentIndex = global != nil ? 255 : (needsTransparency ? quantizer.count : -1)
        let indices = map(inRect, width: rect.width, height: rect.height, quantizer: &quantizer, transparent: transparentIndex)

        var control = GraphicsControlBlock()
        control.DisposalMode = clears ? DISPOSE_BACKGROUND : DISPOSE_DO_NOT
        control.UserInputFlag = false
        control.DelayTime = Int32(min(65_535, (frame.duration + 5) / 10))
        control.TransparentColor = Int32(transparentIndex)
        var extensionBytes = [GifByteType](repeating: 0, count: 4)
        let length = EGifGCBToExtension(&control, &extensionBytes)
        guard EGifPutExtension(file, GRAPHICS_EXT_FUNC_CODE, Int32(length), extensionBytes) == GIF_OK else {
            throw Self.failure(file.pointee.Error, "writing frame \(written)'s control block")
        }
        let local = global == nil ? try Self.colourMap(quantizer.palette, transparent: transparentIndex >= 0) : nil
        defer { if let local { GifFreeMapObject(local) } }
        guard EGifPutImageDesc(file, Int32(rect.x), Int32(rect.y), Int32(rect.width), Int32(rect.height), false, local) == GIF_OK else {
            throw Self.failure(file.pointee.Error, "writing frame \(written)'s descriptor")
        }
        var row = [GifPixelType](repeating: 0, count: rect.width)
        for y in 0..<rect.height {
            for x in 0..<rect.width { row[x] = GifPixelType(indices[y * rect.width + x]) }
            guard EGifPutLine(file, &row, Int32(rect.width)) == GIF_OK else {
                throw Self.failure(file.pointee.Error, "writing frame \(written)'s pixels")
            }
        }
        written += 1
        // What the next frame is drawn over.
        if clears {
            base = [UInt8](repeating: 0, count: pixels.count)
        } else {
            base = pixels
        }
    }

    /// The screen descriptor (with the global table, for ``GIFEncoder/Palette/global``) and the loop block.
    private func writeHeader(_ file: UnsafeMutablePointer<GifFileType>, first: [UInt8]) throws {
        headerWritten = true
        var map: UnsafeMutablePointer<ColorMapObject>?
        if paletteScope == .global {
            let made = GIFQuantizer(first, pixels: size.pixelCount, maxColours: 255) { first[$0 * 4 + 3] == 255 }
            global = made
            map = try Self.colourMap(made.palette + [UInt8](repeating: 0, count: (256 - made.count) * 3), transparent: false)
        }
        defer { if let map { GifFreeMapObject(map) } }
        guard EGifPutScreenDesc(file, Int32(size.width), Int32(size.height), 8, 0, map) == GIF_OK else {
            throw Self.failure(file.pointee.Error, "writing the screen descriptor")
        }
        guard let loopCount else { return }
        let netscape = Array("NETSCAPE2.0".utf8), loops = min(65_535, max(0, loopCount))
        let block: [GifByteType] = [1, GifByteType(loops & 0xFF), GifByteType(loops >> 8)]
        guard EGifPutExtensionLeader(file, APPLICATION_EXT_FUNC_CODE) == GIF_OK,
              EGifPutExtensionBlock(file, Int32(netscape.count), netscape) == GIF_OK,
              EGifPutExtensionBlock(file, Int32(block.count), block) == GIF_OK,
              EGifPutExtensionTrailer(file) == GIF_OK else {
            throw Self.failure(file.pointee.Error, "writing the loop count")
        }
    }

    /// Palette indices of `rgba` (`transparent` where alpha is 0), dithered when asked and needed.
    private func map(_ rgba: [UInt8], width: Int, height: Int, quantizer: inout GIFQuantizer, transparent: Int) -> [Int] {
        var indices = [Int](repeating: max(0, transparent), count: width * height)
        let diffuses = dithering == .floydSteinberg && !quantizer.isExact
        // The error carried to this row and the next, per channel, in 1/16ths.
        var current = [Int](repeating: 0, count: (width + 2) * 3), below = current
        for y in 0..<height {
            for x in 0..<width {
                let i = y * width + x
                guard rgba[i * 4 + 3] == 255 else { continue }
                var c = [Int(rgba[i * 4]), Int(rgba[i * 4 + 1]), Int(rgba[i * 4 + 2])]
                if diffuses { for k in 0..<3 { c[k] = min(255, max(0, c[k] + current[(x + 1) * 3 + k] / 16)) } }
                let index = quantizer.index(c[0], c[1], c[2])
                indices[i] = index
                guard diffuses else { continue }
                for k in 0..<3 {
                    let error = c[k] - Int(quantizer.palette[index * 3 + k])
                    current[(x + 2) * 3 + k] += error * 7
                    below[x * 3 + k] += error * 3
                    below[(x + 1) * 3 + k] += error * 5
                    below[(x + 2) * 3 + k] += error
                }
            }
            swap(&current, &below)
            for k in below.indices { below[k] = 0 }
        }
        return indices
    }

    /// A giflib colour map of `palette` (RGB triples), with one more black entry for the
    /// transparent index when `transparent`, padded to a power of two. The caller frees it.
    private static func colourMap(_ palette: [UInt8], transparent: Bool) throws -> UnsafeMutablePointer<ColorMapObject> {
        let entries = max(2, palette.count / 3 + (transparent ? 1 : 0))
        var size = 2
        while size < entries { size *= 2 }
        var colours = [GifColorType](repeating: GifColorType(Red: 0, Green: 0, Blue: 0), count: size)
        for c in 0..<(palette.count / 3) { colours[c] = GifColorType(Red: palette[c * 3], Green: palette[c * 3 + 1], Blue: palette[c * 3 + 2]) }
        guard let map = GifMakeMapObject(Int32(size), colours) else {
            throw EncodingError.failed(format: .gif, message: "out of memory for a colour table")
        }
        return map
    }

    /// Whether the pixels at `offset` of `a` and `b` look the same (both transparent, or equal).
    private static func same(_ a: [UInt8], _ b: [UInt8], _ offset: Int) -> Bool {
        if a[offset + 3] == 0 && b[offset + 3] == 0 { return true }
        return a[offset] == b[offset] && a[offset + 1] == b[offset + 1] && a[offset + 2] == b[offset + 2] && a[offset + 3] == b[offset + 3]
    }

    private static func failure(_ code: Int32, _ step: String) -> EncodingError {
        let text = GifErrorString(code).map { String(cString: $0) } ?? "error \(code)"
        return EncodingError.failed(format: .gif, message: "giflib failed \(step): \(text)")
    }
}
