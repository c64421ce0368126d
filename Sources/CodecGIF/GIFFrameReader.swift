import CGIF
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The bytes giflib reads, through `DGifOpen`'s read callback: a copy-on-write `Data` and a
/// cursor, so a reader may outlive the caller's buffer.
private final class GIFInput {
    let data: Data
    var offset = 0
    init(_ data: Data) { self.data = data }
}

/// giflib's read callback: copies up to `count` bytes at the cursor; fewer at the end of the data.
private let readGIF: InputFunc = { file, buffer, count in
    guard let file, let buffer, count > 0, let user = file.pointee.UserData else { return 0 }
    let input = Unmanaged<GIFInput>.fromOpaque(user).takeUnretainedValue()
    let n = max(0, min(Int(count), input.data.count - input.offset))
    guard n > 0 else { return 0 }
    let start = input.data.startIndex + input.offset
    input.data.copyBytes(to: buffer, from: start..<(start + n))
    input.offset += n
    return Int32(n)
}

/// One composited frame as the reader produces it.
struct GIFFrame {
    /// The canvas after this frame was drawn: RGBA8, alpha 0 or 255, transparent pixels zero
    /// (so straight and premultiplied at once).
    var canvas: Bitmap
    /// The stored delay in milliseconds, `nil` without a graphic control extension.
    var delayMilliseconds: Int?
}

/// Walks a GIF with giflib's low-level API (`DGifGetRecordType`, `DGifGetImageDesc`,
/// `DGifGetLine`) and composites one frame per call, as Chromium does: a transparent canvas
/// (the logical screen enlarged to contain the first frame, ``GIFStructure/canvas``, never
/// filled with the header's background colour); each frame's sub-rectangle (clipped to the
/// canvas) drawn with its local or the global colour table, skipping the transparent index;
/// then its disposal (none, background = its rectangle cleared to transparent, previous = its
/// rectangle restored; 4 is read as previous, 5–7 as none) applied before the next frame.
/// Interlaced frames are de-interlaced.
///
/// Memory: the compressed data (shared), the canvas, a copy of the rectangle a "previous"
/// frame covers (at most a canvas) only while its disposal needs it, and one frame row of
/// indices. The canvas is allocated at the first frame, after the caller checked the pixel
/// limit. The giflib handle is closed in `deinit`.
final class GIFFrameReader {
    private let input: GIFInput
    private let file: UnsafeMutablePointer<GifFileType>
    /// The canvas: the logical screen enlarged to contain the first frame (``GIFStructure/canvas``).
    let canvasSize: PixelSize
    private let maxPixelCount: Int
    private var canvas: [UInt8] = []
    /// What a "restore to previous" frame covers, saved before it draws: the rows of its
    /// (clipped) rectangle, restored after it.
    private var saved: [UInt8] = []
    private var disposal: (mode: Int, rect: (x: Int, y: Int, width: Int, height: Int))?
    /// Frames returned so far.
    private(set) var framesRead = 0
    private var finished = false

    /// Opens `data` (`DGifOpen` reads the screen descriptor and global colour table) to draw on
    /// a `canvas` (``GIFStructure/canvas`` of the same data).
    init(_ data: Data, canvas: PixelSize, maxPixelCount: Int) throws {
        input = GIFInput(data)
        self.maxPixelCount = maxPixelCount
        var error: Int32 = 0
        let user = Unmanaged.passUnretained(input).toOpaque()
        guard let file = DGifOpen(user, readGIF, &error) else {
            throw GIFError.make(error, "opening the file")
        }
        self.file = file
        canvasSize = canvas
    }

    deinit {
        var error: Int32 = 0
        DGifCloseFile(file, &error)
    }

    /// The next frame composited onto the canvas, or `nil` after the last one (the trailer,
    /// or the end of the data after at least one frame: a missing trailer is not an error).
    func nextFrame() throws -> GIFFrame? {
        guard !finished else { return nil }
        do {
            let frame = try readFrame()
            if frame == nil { finished = true } else { framesRead += 1 }
            return frame
        } catch {
            finished = true
            throw error
        }
    }

    /// What a graphic control extension said about the image that follows it.
    private struct Control {
        var delay: Int?
        var transparentIndex = -1
        var disposalMode = 0
    }

    private func readFrame() throws -> GIFFrame? {
        try checkCanvas()
        if canvas.isEmpty { canvas = [UInt8](repeating: 0, count: canvasSize.pixelCount * 4) }
        applyDisposal()
        guard let control = try nextImage() else { return nil }
        try drawImage(control)
        let bitmap = Bitmap(width: canvasSize.width, height: canvasSize.height, bytesPerRow: canvasSize.width * 4, bytes: canvas)
        guard let bitmap else { throw ImagePipelineError.corruptData(format: .gif, message: "empty canvas") }
        return GIFFrame(canvas: bitmap, delayMilliseconds: control.delay)
    }

    private func checkCanvas() throws {
        guard canvasSize.isValid else {
            throw ImagePipelineError.corruptData(format: .gif, message: "the header gives a size of \(canvasSize)")
        }
        guard canvasSize.pixelCount <= maxPixelCount else { throw ImagePipelineError.tooManyPixels(canvasSize, limit: maxPixelCount) }
    }

    /// Reads blocks up to the next image descriptor (`DGifGetImageDesc` done), or `nil` at the end.
    private func nextImage() throws -> Control? {
        var control = Control()
        while true {
            var record = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(file, &record) == GIF_OK else {
                // A file that just stops after a frame: the frames before it stand.
                if framesRead > 0, file.pointee.Error == D_GIF_ERR_READ_FAILED || file.pointee.Error == D_GIF_ERR_EOF_TOO_SOON {
                    return nil
                }
                throw GIFError.make(file.pointee.Error, "reading a block type")
            }
            switch record {
            case EXTENSION_RECORD_TYPE:
                var code: Int32 = 0
                var block: UnsafeMutablePointer<GifByteType>?
                guard DGifGetExtension(file, &code, &block) == GIF_OK else {
                    throw GIFError.make(file.pointee.Error, "reading an extension")
                }
                if code == GRAPHICS_EXT_FUNC_CODE, let block, block[0] >= 4 {
                    // 4–7 are "to be defined"; some encoders write 4 for "restore to previous",
                    // and Chromium reads it so (Wuffs `decode_gc`, Blink's GIFImageReader before
                    // it); 5–7 keep the frame, as 0 and 1 do.
                    let method = Int((block[1] >> 2) & 7)
                    control.disposalMode = method == 4 ? 3 : method
                    control.delay = (Int(block[2]) | Int(block[3]) << 8) * 10
                    control.transparentIndex = block[1] & 1 != 0 ? Int(block[4]) : -1
                }
                while block != nil {
                    guard DGifGetExtensionNext(file, &block) == GIF_OK else {
                        throw GIFError.make(file.pointee.Error, "reading an extension")
                    }
                }
            case IMAGE_DESC_RECORD_TYPE:
                guard DGifGetImageDesc(file) == GIF_OK else { throw GIFError.make(file.pointee.Error, "reading an image descriptor") }
                return control
            case TERMINATE_RECORD_TYPE:
                return nil
            default:
                throw GIFError.make(D_GIF_ERR_WRONG_RECORD, "reading a block type")
            }
        }
    }

    /// The first frame resampled to `output` without a canvas: canvas rows (clear but where the
    /// frame lies) stream through a ``PipelineCore/RowResampler`` as giflib decodes them.
    /// Memory is one canvas row, the output, and for an interlaced frame its indices (a quarter
    /// of a canvas at most). Only before any ``nextFrame()``.
    func firstFrame(resampledTo output: PixelSize, filter: ResamplingFilter = .default) throws -> Bitmap {
        try checkCanvas()
        guard framesRead == 0, let control = try nextImage() else {
            throw ImagePipelineError.corruptData(format: .gif, message: "the file has no frame")
        }
        framesRead = 1
        finished = true
        let image = file.pointee.Image
        let left = Int(image.Left), top = Int(image.Top), width = Int(image.Width), height = Int(image.Height)
        guard width * height <= maxPixelCount else {
            throw ImagePipelineError.tooManyPixels(PixelSize(width: width, height: height), limit: maxPixelCount)
        }
        let x0 = min(left, canvasSize.width), x1 = min(left + width, canvasSize.width)
        let palette = palette(control.transparentIndex)
        var line = [GifPixelType](repeating: 0, count: max(1, width))
        func readLine(into target: UnsafeMutablePointer<GifPixelType>) throws {
            guard DGifGetLine(file, target, Int32(width)) == GIF_OK else {
                throw GIFError.make(file.pointee.Error, "decoding frame 1")
            }
        }
        // An interlaced frame's rows come in pass order: gather its indices first.
        var indices: [GifPixelType] = []
        if image.Interlace, width > 0, height > 0 {
            indices = [GifPixelType](repeating: 0, count: width * height)
            try indices.withUnsafeMutableBufferPointer { all in
                for (start, step) in [(0, 8), (4, 8), (2, 4), (1, 2)] {
                    for row in stride(from: start, to: height, by: step) {
                        guard let base = all.baseAddress else { return }
                        try readLine(into: base + row * width)
                    }
                }
            }
        }
        var resampler = RowResampler(sourceSize: canvasSize, outputSize: output, filter: filter)
        let transparent = [UInt8](repeating: 0, count: canvasSize.width * 4)
        var row = transparent
        for y in 0..<canvasSize.height {
            let frameRow = y - top
            guard frameRow >= 0, frameRow < height, width > 0 else {
                transparent.withUnsafeBufferPointer { resampler.push(row: $0) }
                continue
            }
            if !image.Interlace {
                try line.withUnsafeMutableBufferPointer { buffer in
                    guard let base = buffer.baseAddress else { return }
                    try readLine(into: base)
                }
            }
            if x1 > x0 {
                row.withUnsafeMutableBufferPointer { pixels in
                    palette.withUnsafeBufferPointer { colors in
                        for x in x0..<x1 {
                            let index = Int(image.Interlace ? indices[frameRow * width + x - left] : line[x - left]) * 4
                            for c in 0..<4 { pixels[x * 4 + c] = colors[index + c] }
                        }
                    }
                }
            }
            row.withUnsafeBufferPointer { resampler.push(row: $0) }
        }
        return resampler.finish()
    }

    /// The current image's colour table as RGBA: indices past the table are opaque black, the
    /// transparent index is clear.
    private func palette(_ transparentIndex: Int) -> [UInt8] {
        var palette = [UInt8](repeating: 0, count: 256 * 4)
        for i in 0..<256 { palette[i * 4 + 3] = 255 }
        if let map = file.pointee.Image.ColorMap ?? file.pointee.SColorMap, let colors = map.pointee.Colors {
            for i in 0..<min(256, Int(map.pointee.ColorCount)) {
                palette[i * 4] = colors[i].Red
                palette[i * 4 + 1] = colors[i].Green
                palette[i * 4 + 2] = colors[i].Blue
            }
        }
        if transparentIndex >= 0 { for c in 0..<4 { palette[transparentIndex * 4 + c] = 0 } }
        return palette
    }

    /// Undoes the previous frame as its disposal method says.
    private func applyDisposal() {
        guard let (mode, rect) = disposal else { return }
        disposal = nil
        switch mode {
        case 2:
            let width = canvasSize.width
            canvas.withUnsafeMutableBufferPointer { pixels in
                for y in rect.y..<(rect.y + rect.height) {
                    let start = (y * width + rect.x) * 4
                    for i in start..<(start + rect.width * 4) { pixels[i] = 0 }
                }
            }
        case 3:
            copyRect(rect, restoring: true)
            saved = []
        default:
            break
        }
    }

    /// Copies the canvas rows of `rect` into ``saved`` or, `restoring`, back from it.
    private func copyRect(_ rect: (x: Int, y: Int, width: Int, height: Int), restoring: Bool) {
        let rowBytes = rect.width * 4, canvasWidth = canvasSize.width
        guard rowBytes > 0, rect.height > 0 else { return }
        if !restoring { saved = [UInt8](repeating: 0, count: rowBytes * rect.height) }
        guard saved.count == rowBytes * rect.height else { return }
        canvas.withUnsafeMutableBufferPointer { pixels in
            saved.withUnsafeMutableBufferPointer { copy in
                guard let pixelBase = pixels.baseAddress, let copyBase = copy.baseAddress else { return }
                for row in 0..<rect.height {
                    let onCanvas = pixelBase + ((rect.y + row) * canvasWidth + rect.x) * 4, inCopy = copyBase + row * rowBytes
                    if restoring {
                        onCanvas.update(from: inCopy, count: rowBytes)
                    } else {
                        inCopy.update(from: onCanvas, count: rowBytes)
                    }
                }
            }
        }
    }

    /// Decodes the current image's rows and draws them onto the canvas.
    private func drawImage(_ control: Control) throws {
        let transparentIndex = control.transparentIndex, disposalMode = control.disposalMode
        let image = file.pointee.Image
        let left = Int(image.Left), top = Int(image.Top), width = Int(image.Width), height = Int(image.Height)
        guard width * height <= maxPixelCount else {
            throw ImagePipelineError.tooManyPixels(PixelSize(width: width, height: height), limit: maxPixelCount)
        }
        // The part of the frame on the canvas.
        let x0 = min(left, canvasSize.width), x1 = min(left + width, canvasSize.width)
        let y0 = min(top, canvasSize.height), y1 = min(top + height, canvasSize.height)
        disposal = (disposalMode, (x0, y0, x1 - x0, y1 - y0))
        if disposalMode == 3 { copyRect((x0, y0, x1 - x0, y1 - y0), restoring: false) }
        guard width > 0, height > 0 else {
            try skipImageData()
            return
        }
        let palette = palette(transparentIndex)
        var line = [GifPixelType](repeating: 0, count: width)
        let canvasWidth = canvasSize.width
        for pass in 0..<(image.Interlace ? 4 : 1) {
            let (start, step) = image.Interlace ? [(0, 8), (4, 8), (2, 4), (1, 2)][pass] : (0, 1)
            var row = start
            while row < height {
                let ok = line.withUnsafeMutableBufferPointer { DGifGetLine(file, $0.baseAddress, Int32(width)) }
                guard ok == GIF_OK else { throw GIFError.make(file.pointee.Error, "decoding frame \(framesRead + 1)") }
                let y = top + row
                if y < y1, x1 > x0 {
                    canvas.withUnsafeMutableBufferPointer { pixels in
                        palette.withUnsafeBufferPointer { colors in
                            var offset = (y * canvasWidth + x0) * 4
                            for x in x0..<x1 {
                                let index = Int(line[x - left]) * 4
                                if index != transparentIndex * 4 {
                                    pixels[offset] = colors[index]
                                    pixels[offset + 1] = colors[index + 1]
                                    pixels[offset + 2] = colors[index + 2]
                                    pixels[offset + 3] = colors[index + 3]
                                }
                                offset += 4
                            }
                        }
                    }
                }
                row += step
            }
        }
    }

    /// Skips the compressed data of an image with no pixels.
    private func skipImageData() throws {
        var size: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        guard DGifGetCode(file, &size, &block) == GIF_OK else { throw GIFError.make(file.pointee.Error, "skipping an empty frame") }
        while block != nil {
            guard DGifGetCodeNext(file, &block) == GIF_OK else { throw GIFError.make(file.pointee.Error, "skipping an empty frame") }
        }
    }
}

/// giflib's error codes as typed errors with giflib's message.
enum GIFError {
    /// `corruptData` with giflib's message for `code` and what was being done.
    static func make(_ code: Int32, _ doing: String) -> ImagePipelineError {
        let message = GifErrorString(code).map { String(cString: $0) } ?? "giflib error \(code)"
        if code == D_GIF_ERR_NOT_ENOUGH_MEM {
            return .unsupported(format: .gif, message: "\(message) (\(doing))")
        }
        return .corruptData(format: .gif, message: "\(message) (\(doing))")
    }
}
