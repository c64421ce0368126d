import PipelineCore

/// The few fixed-size messages the SVG worker and its parent exchange over the worker's stdin and
/// stdout, little-endian. Each starts with `magic` and a kind byte.
///
/// - parent → worker, once: `open` (the limits and the document's length), then the document.
/// - worker → parent: `size` (the natural size), or `failure`.
/// - parent → worker, optionally: `draw` (canvas, pixel format, the drawing's memory).
/// - worker → parent: `bitmap` then width × height × 4 bytes, or `failure`.
///
/// The parent closing the worker's stdin ends it.
enum SVGWorkerWire {
    static let magic: [UInt8] = Array("SVGW".utf8)

    /// A message's kind byte.
    enum Kind: UInt8 {
        case open = 1, size, draw, bitmap, failure
    }

    /// Bytes after the magic and kind byte, by kind.
    static func bodyLength(_ kind: Kind) -> Int {
        switch kind {
        case .open: return 8 + 4 + 8  // memory allowance, CPU seconds, document length
        case .size: return 8 + 8 + 1  // width, height (Double bits), size source
        case .draw: return 4 + 4 + 1 + 8  // width, height, pixel format, memory allowance
        case .bitmap: return 4 + 4 + 1  // width, height, pixel format
        case .failure: return 1 + 4  // error kind, message length
        }
    }

    /// The longest failure message a worker sends.
    static let maxMessageLength = 4096
    /// The largest document a worker takes (the pipeline's loaders stop far earlier).
    static let maxDocumentLength = 1 << 30

    /// What went wrong in the worker, as the decoder's error.
    enum FailureKind: UInt8 {
        case corrupt = 1, unsupported
    }

    /// Builds messages.
    struct Writer {
        private(set) var bytes: [UInt8]

        init(_ kind: Kind) { bytes = magic + [kind.rawValue] }

        mutating func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }

        mutating func append(_ value: Double) { append(value.bitPattern) }
    }

    /// Reads a message's body (after its magic and kind byte).
    struct Reader {
        let bytes: [UInt8]
        private var offset = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func read<T: FixedWidthInteger>(_: T.Type = T.self) -> T {
            var value = T.zero
            withUnsafeMutableBytes(of: &value) { raw in
                for index in 0..<raw.count { raw[index] = bytes[offset + index] }
            }
            offset += MemoryLayout<T>.size
            return T(littleEndian: value)
        }

        mutating func readDouble() -> Double { Double(bitPattern: read(UInt64.self)) }
    }

    /// The pixel format as its byte.
    static func code(_ format: PixelFormat) -> UInt8 { format == .rgba8Straight ? 1 : 0 }

    /// The pixel format of a byte, `nil` for an unknown one.
    static func pixelFormat(_ code: UInt8) -> PixelFormat? {
        switch code {
        case 0: return .rgba8Premultiplied
        case 1: return .rgba8Straight
        default: return nil
        }
    }
}
