import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What walking a GIF's blocks tells without decompressing any pixels: the canvas, the frame
/// count, the loop count and whether a frame declares a transparent colour.
///
/// The walk reads the header, the colour tables' sizes and every block's length bytes; it
/// consumes at least one byte per step, so a file of empty blocks ends at its last byte (no
/// endless loop), and it allocates nothing in proportion to the canvas. With animation limits
/// it stops counting one frame past what they allow (``countIsComplete`` `false`), so refusing
/// a 100,000-frame file walks no further than the frames allowed.
struct GIFStructure: Sendable {
    /// The canvas: the logical screen, enlarged to contain the first frame's rectangle as
    /// Chromium does (Wuffs' `decode_id_part0`, Blink's and Skia's `GIFImageReader`: "for the
    /// first frame, we can simply enlarge the image size"); later frames are clipped to it.
    var canvas: PixelSize
    /// Image descriptors seen (frames), including a last one cut short.
    var frameCount = 0
    /// The NETSCAPE2.0 loop count (0 = forever), `nil` without the extension.
    var loopCount: Int?
    /// A graphic control extension declares a transparent index.
    var hasTransparency = false
    /// The first frame covers the whole canvas (else the rest stays transparent).
    var firstFrameCoversCanvas = false
    /// A frame is interlaced.
    var hasInterlacedFrame = false
    /// Stored delays in milliseconds, one per frame (`nil` for a frame without a graphic control extension).
    var delays: [Int?] = []
    /// The walk ended before the trailer (truncated or damaged after the frames counted).
    var isTruncated = false
    /// The data ends inside a block (a descriptor, an extension or a frame's pixel data): the
    /// file was cut. Ending cleanly between blocks without the trailer, which browsers and
    /// libvips take as whole, does not count.
    var endsInsideBlock = false
    /// `false` when the walk stopped at one frame past the animation limits: ``frameCount`` is
    /// then a lower bound, and the later frames' delays are not read.
    var countIsComplete = true

    /// Walks `bytes`; with `animationLimits`, only until ``frameCount`` is one past
    /// ``PipelineCore/DecodeOptions/animationFramesAllowed(on:)``. Throws only when the header
    /// or logical screen descriptor is missing.
    init(_ bytes: UnsafeRawBufferPointer, animationLimits: DecodeOptions? = nil) throws {
        guard bytes.count >= 13, ImageSignature.bytes(bytes, start: Array("GIF".utf8)) else {
            throw ImagePipelineError.corruptData(format: .gif, message: "the file ends before the logical screen descriptor")
        }
        canvas = PixelSize(width: Int(bytes[6]) | Int(bytes[7]) << 8, height: Int(bytes[8]) | Int(bytes[9]) << 8)
        let allowed = animationLimits?.animationFramesAllowed(on: canvas) ?? .max
        let stopAt = allowed < .max ? allowed + 1 : .max
        var offset = 13
        if bytes[10] & 0x80 != 0 { offset += 3 << (Int(bytes[10] & 7) + 1) }
        var pendingDelay: Int?
        /// Skips data sub-blocks from `offset`; false when the data ends first.
        func skipSubBlocks(_ offset: inout Int) -> Bool {
            while offset < bytes.count {
                let length = Int(bytes[offset])
                offset += 1 + length
                if length == 0 { return offset <= bytes.count }
            }
            return false
        }
        walk: while true {
            guard offset < bytes.count else { isTruncated = true; break }
            switch bytes[offset] {
            case 0x2C:  // image descriptor
                guard offset + 10 <= bytes.count else { isTruncated = true; endsInsideBlock = true; frameCount += 1; delays.append(pendingDelay); break walk }
                let packed = bytes[offset + 9]
                if frameCount == 0 {
                    func word(_ at: Int) -> Int { Int(bytes[offset + at]) | Int(bytes[offset + at + 1]) << 8 }
                    let right = word(1) + word(5), bottom = word(3) + word(7)
                    canvas = PixelSize(width: max(canvas.width, right), height: max(canvas.height, bottom))
                    firstFrameCoversCanvas = word(1) == 0 && word(3) == 0 && right == canvas.width && bottom == canvas.height
                }
                if packed & 0x40 != 0 { hasInterlacedFrame = true }
                offset += 10
                if packed & 0x80 != 0 { offset += 3 << (Int(packed & 7) + 1) }
                frameCount += 1
                delays.append(pendingDelay)
                pendingDelay = nil
                if frameCount >= stopAt { countIsComplete = false; break walk }
                offset += 1  // LZW minimum code size
                guard offset <= bytes.count, skipSubBlocks(&offset) else { isTruncated = true; endsInsideBlock = true; break walk }
            case 0x21:  // extension
                guard offset + 2 <= bytes.count else { isTruncated = true; endsInsideBlock = true; break walk }
                let label = bytes[offset + 1]
                offset += 2
                let start = offset
                if label == 0xF9, start + 5 <= bytes.count, bytes[start] >= 4 {
                    if bytes[start + 1] & 1 != 0 { hasTransparency = true }
                    pendingDelay = (Int(bytes[start + 2]) | Int(bytes[start + 3]) << 8) * 10
                } else if label == 0xFF, start + 12 <= bytes.count, bytes[start] == 11,
                          ImageSignature.bytes(UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<(start + 12)]), start: Array("NETSCAPE2.0".utf8)),
                          start + 16 <= bytes.count, bytes[start + 12] >= 3, bytes[start + 13] == 1 {
                    loopCount = Int(bytes[start + 14]) | Int(bytes[start + 15]) << 8
                }
                guard skipSubBlocks(&offset) else { isTruncated = true; endsInsideBlock = true; break walk }
            case 0x3B:
                break walk
            default:
                isTruncated = true
                break walk
            }
        }
    }
}
