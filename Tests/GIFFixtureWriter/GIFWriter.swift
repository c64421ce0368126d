import Foundation

/// Writes small GIFs for the GIF tests and the bundled samples (`scripts/SampleMaker`): 8-bit
/// indices sent as uncompressed LZW (9-bit codes, a clear code every 254 pixels so the code
/// table never widens), any frame geometry, disposal, transparency and interlacing.
public enum GIFWriter {
    /// One image of the file and its graphic control extension.
    public struct Frame {
        /// The frame's place on the canvas and its size, in pixels.
        public var x: Int, y: Int, width: Int, height: Int
        /// Row-major indices, `width × height` of them (in display order; interlacing reorders).
        public var indices: [UInt8]
        /// How long the frame shows, in hundredths of a second.
        public var delayCentiseconds: Int
        /// The disposal method (0–3), as the file stores it.
        public var disposal: Int
        /// The palette index drawn as transparent, if any.
        public var transparentIndex: UInt8?
        /// Whether the rows are stored interlaced (in GIF's four passes).
        public var interlaced: Bool
        /// A palette of the frame's own (256 entries written), else the global one.
        public var localPalette: [(UInt8, UInt8, UInt8)]?
        /// The LZW data stored for the frame instead of ``indices`` encoded (damaged data for
        /// robustness tests), split into sub-blocks as written; `nil` encodes ``indices``.
        public var lzwData: [UInt8]?

        /// A frame; everything but the size and indices defaults to a plain full-size frame.
        public init(x: Int = 0, y: Int = 0, width: Int, height: Int, indices: [UInt8], delayCentiseconds: Int = 0,
                    disposal: Int = 0, transparentIndex: UInt8? = nil, interlaced: Bool = false,
                    localPalette: [(UInt8, UInt8, UInt8)]? = nil, lzwData: [UInt8]? = nil) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
            self.indices = indices
            self.delayCentiseconds = delayCentiseconds
            self.disposal = disposal
            self.transparentIndex = transparentIndex
            self.interlaced = interlaced
            self.localPalette = localPalette
            self.lzwData = lzwData
        }
    }

    /// A GIF89a file of `width × height` with the global `palette` (256 entries written), a
    /// NETSCAPE2.0 loop extension when `loopCount` is given (0: forever), and `frames`.
    public static func gif(width: Int, height: Int, palette: [(UInt8, UInt8, UInt8)], loopCount: Int? = nil, frames: [Frame]) -> Data {
        var out = Array("GIF89a".utf8)
        func word(_ v: Int) { out += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func table(_ colors: [(UInt8, UInt8, UInt8)]) {
            for i in 0..<256 { let c = i < colors.count ? colors[i] : (0, 0, 0); out += [c.0, c.1, c.2] }
        }
        word(width); word(height)
        out += [0xF7, 0, 0]
        table(palette)
        if let loopCount {
            out += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1]
            word(loopCount); out.append(0)
        }
        for frame in frames {
            out += [0x21, 0xF9, 4, UInt8(frame.disposal << 2) | (frame.transparentIndex == nil ? 0 : 1)]
            word(frame.delayCentiseconds)
            out += [frame.transparentIndex ?? 0, 0]
            out.append(0x2C)
            word(frame.x); word(frame.y); word(frame.width); word(frame.height)
            out.append((frame.localPalette == nil ? 0 : 0x87) | (frame.interlaced ? 0x40 : 0))
            if let local = frame.localPalette { table(local) }
            out.append(8)
            out += subBlocks(frame.lzwData ?? lzw(storedOrder(frame)))
        }
        out.append(0x3B)
        return Data(out)
    }

    /// The frame's indices in the order the file stores its rows (GIF's four passes when interlaced).
    private static func storedOrder(_ frame: Frame) -> [UInt8] {
        var rows = Array(0..<frame.height)
        if frame.interlaced {
            rows = [(0, 8), (4, 8), (2, 4), (1, 2)].flatMap { stride(from: $0.0, to: frame.height, by: $0.1) }
        }
        return rows.flatMap { frame.indices[($0 * frame.width)..<(($0 + 1) * frame.width)] }
    }

    /// 9-bit codes: clear, up to 254 literals, clear, …, end.
    private static func lzw(_ pixels: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [], buffer = 0, bits = 0
        func emit(_ code: Int) {
            buffer |= code << bits; bits += 9
            while bits >= 8 { bytes.append(UInt8(buffer & 0xFF)); buffer >>= 8; bits -= 8 }
        }
        for (i, pixel) in pixels.enumerated() {
            if i % 254 == 0 { emit(256) }
            emit(Int(pixel))
        }
        emit(257)
        if bits > 0 { bytes.append(UInt8(buffer & 0xFF)) }
        return bytes
    }

    private static func subBlocks(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < data.count {
            let n = min(255, data.count - i)
            out.append(UInt8(n)); out += data[i..<(i + n)]; i += n
        }
        return out + [0]
    }
}
