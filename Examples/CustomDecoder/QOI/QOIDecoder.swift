import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Decodes QOI ("Quite OK Image") in pure Swift: an example of a decoder plugin for a format
/// PipelineCore has never heard of. Register it like a shipped codec:
/// `DecoderRegistry().registering(JPEGDecoder()).registering(QOIDecoder())`; the registry
/// picks it for data that starts with `qoif`.
///
/// A session reads the 14-byte header alone (so the pipeline refuses a picture over its pixel
/// limit before any pixel buffer exists). Decoding then checks that the data could hold that
/// many pixels at all (a run op covers at most 62), so a header that lies about its size
/// allocates nothing, and reads the ops row by row: asked for a smaller size, it shrinks while
/// it reads (memory: the output plus one row), like CodecPNG. QOI stores straight alpha; the
/// output is premultiplied. Bad data throws ``QOIError`` (or the core's pixel-limit error),
/// never traps.
public struct QOIDecoder: ImageDecoding {
    /// Creates a decoder. It holds no state; one value serves every thread.
    public init() {}

    /// QOI: the magic bytes `qoif` at offset 0.
    public var signatures: [ImageSignature] { [.magic(QOI.magic, format: .qoi)] }

    /// Parses the header of `data` once and runs `body` with a session over it.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        try body(Session(data: data, header: try QOIHeader(data)))
    }

    /// One QOI picture, its header read.
    struct Session: ImageDecodingSession {
        let data: Data
        let header: QOIHeader

        var info: ImageInfo {
            ImageInfo(format: .qoi, size: header.size, hasAlpha: header.channels == 4,
                      componentCount: header.channels, bitDepth: 8)
        }

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            try options.checkPixelLimit(info)  // the pipeline did already; a direct caller may not have
            let size = header.size, pixelCount = size.pixelCount
            return try data.withUnsafeBytes { raw in
                let body = UnsafeRawBufferPointer(rebasing: raw[QOI.headerSize...])
                let hasEndMarker = body.count >= QOI.endMarker.count && body.suffix(QOI.endMarker.count).elementsEqual(QOI.endMarker)
                let ops = UnsafeRawBufferPointer(rebasing: body.prefix(hasEndMarker ? body.count - QOI.endMarker.count : body.count))
                // Before allocating: one byte holds at most 62 pixels (a run).
                guard pixelCount / QOI.maxRun <= ops.count else { throw QOIError.truncatedPixels(expected: pixelCount) }

                var reader = QOIPixelReader(ops: ops, keepsAlpha: header.channels == 4, expected: pixelCount)
                let bitmap: Bitmap
                if let target = options.targetSize, target.isValid, target.width < size.width || target.height < size.height {
                    bitmap = try Self.readShrinking(&reader, size: size,
                                                    to: PixelSize(width: min(target.width, size.width), height: min(target.height, size.height)))
                } else {
                    bitmap = try Self.readWhole(&reader, size: size)
                }
                var warnings: [String] = []
                if !hasEndMarker {
                    warnings.append("the QOI end marker is missing")
                } else if reader.position < ops.count {
                    warnings.append("\(ops.count - reader.position) bytes of QOI data after the last pixel")
                }
                return DecodedImage(bitmap: bitmap, info: info, warnings: warnings)
            }
        }

        /// Every pixel into a full-size bitmap, premultiplied row by row.
        static func readWhole(_ reader: inout QOIPixelReader, size: PixelSize) throws -> Bitmap {
            var bitmap = Bitmap(zeroed: size)
            try bitmap.withUnsafeMutableBytes { bytes in
                let stride = size.width * 4
                for y in 0..<size.height {
                    let row = UnsafeMutableBufferPointer(rebasing: bytes[(y * stride)..<((y + 1) * stride)])
                    try reader.read(into: row)
                    if reader.keepsAlpha { Bitmap.premultiply(row) }
                }
            }
            return bitmap
        }

        /// Each row into a resampler as it is read: memory is the output plus one source row.
        static func readShrinking(_ reader: inout QOIPixelReader, size: PixelSize, to output: PixelSize) throws -> Bitmap {
            var resampler = RowResampler(sourceSize: size, outputSize: output)
            var row = [UInt8](repeating: 0, count: size.width * 4)
            for _ in 0..<size.height {
                try row.withUnsafeMutableBufferPointer { row in
                    try reader.read(into: row)
                    guard resampler.nextRowIsNeeded else { return }
                    if reader.keepsAlpha { Bitmap.premultiply(row) }
                    resampler.push(row: UnsafeBufferPointer(row))
                }
            }
            return resampler.finish()
        }
    }
}

/// The 14-byte QOI header, checked: magic, a size of at least 1×1, 3 or 4 channels,
/// colorspace 0 or 1. Reads nothing past byte 14.
public struct QOIHeader: Hashable, Sendable {
    /// Width × height as stored (each up to 2³² − 1).
    public let size: PixelSize
    /// 3 (RGB) or 4 (RGBA).
    public let channels: Int
    /// 0: sRGB with linear alpha; 1: all channels linear. Informative only.
    public let colorspace: Int

    /// Parses the header at the start of `data`.
    public init(_ data: Data) throws {
        guard data.count >= QOI.headerSize, data.prefix(4).elementsEqual(QOI.magic) else {
            throw QOIError.truncatedHeader(byteCount: data.count)
        }
        let b = [UInt8](data.prefix(QOI.headerSize))
        func u32(_ at: Int) -> Int { Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3]) }
        let width = u32(4), height = u32(8)
        guard width > 0, height > 0 else { throw QOIError.emptySize(width: width, height: height) }
        guard b[12] == 3 || b[12] == 4 else { throw QOIError.badChannels(Int(b[12])) }
        guard b[13] <= 1 else { throw QOIError.badColorspace(Int(b[13])) }
        size = PixelSize(width: width, height: height)
        channels = Int(b[12])
        colorspace = Int(b[13])
    }
}

/// Reads QOI ops into straight RGBA8 pixels, any number at a time, keeping the decoder's state
/// (previous pixel, index of 64 recently seen pixels, pending run) between calls.
struct QOIPixelReader {
    let ops: UnsafeRawBufferPointer
    /// Whether alpha is kept (4 channels); a 3-channel picture is opaque whatever its ops say.
    let keepsAlpha: Bool
    let expected: Int
    private(set) var position = 0
    private var r: UInt8 = 0, g: UInt8 = 0, b: UInt8 = 0, a: UInt8 = 255
    private var run = 0
    private var index = [UInt8](repeating: 0, count: 64 * 4)

    init(ops: UnsafeRawBufferPointer, keepsAlpha: Bool, expected: Int) {
        self.ops = ops
        self.keepsAlpha = keepsAlpha
        self.expected = expected
    }

    /// Fills `out` (`out.count / 4` pixels) with the next pixels; throws
    /// ``QOIError/truncatedPixels(expected:)`` when the ops end first.
    mutating func read(into out: UnsafeMutableBufferPointer<UInt8>) throws {
        let ops = self.ops, count = ops.count
        var p = position, run = self.run
        var r = self.r, g = self.g, b = self.b, a = self.a
        defer { position = p; self.run = run; self.r = r; self.g = g; self.b = b; self.a = a }
        try index.withUnsafeMutableBufferPointer { index in
            var o = 0
            while o + 3 < out.count {
                if run > 0 {
                    run -= 1
                } else {
                    guard p < count else { throw QOIError.truncatedPixels(expected: expected) }
                    let b1 = ops[p]
                    p += 1
                    if b1 == QOI.opRGB {
                        guard p + 3 <= count else { throw QOIError.truncatedPixels(expected: expected) }
                        r = ops[p]; g = ops[p + 1]; b = ops[p + 2]
                        p += 3
                    } else if b1 == QOI.opRGBA {
                        guard p + 4 <= count else { throw QOIError.truncatedPixels(expected: expected) }
                        r = ops[p]; g = ops[p + 1]; b = ops[p + 2]; a = ops[p + 3]
                        p += 4
                    } else {
                        switch b1 & QOI.mask {
                        case QOI.opIndex:
                            let i = Int(b1) * 4
                            r = index[i]; g = index[i + 1]; b = index[i + 2]; a = index[i + 3]
                        case QOI.opDiff:
                            r = r &+ ((b1 >> 4) & 3) &- 2
                            g = g &+ ((b1 >> 2) & 3) &- 2
                            b = b &+ (b1 & 3) &- 2
                        case QOI.opLuma:
                            guard p < count else { throw QOIError.truncatedPixels(expected: expected) }
                            let b2 = ops[p]
                            p += 1
                            let dg = (b1 & 0x3F) &- 32
                            r = r &+ dg &- 8 &+ (b2 >> 4)
                            g = g &+ dg
                            b = b &+ dg &- 8 &+ (b2 & 0x0F)
                        default:  // QOI_OP_RUN: this pixel and `run` more
                            run = Int(b1 & 0x3F)
                        }
                    }
                    let slot = QOI.hash(r, g, b, a) * 4
                    index[slot] = r; index[slot + 1] = g; index[slot + 2] = b; index[slot + 3] = a
                }
                out[o] = r; out[o + 1] = g; out[o + 2] = b; out[o + 3] = keepsAlpha ? a : 255
                o += 4
            }
        }
    }
}
