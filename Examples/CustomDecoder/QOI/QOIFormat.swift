import PipelineCore

extension ImageFormat {
    /// QOI, the "Quite OK Image" format: a format PipelineCore has never heard of, declared by
    /// the plugin that decodes it.
    public static let qoi = ImageFormat("qoi", mimeType: "image/qoi", fileExtension: "qoi")
}

/// The layout constants of QOI (<https://qoiformat.org/qoi-specification.pdf>).
enum QOI {
    /// `qoif`, the first four bytes of every file.
    static let magic: [UInt8] = Array("qoif".utf8)
    /// Magic, width and height (u32 big-endian), channels, colorspace.
    static let headerSize = 14
    /// Seven `0x00` bytes and one `0x01`.
    static let endMarker: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]

    static let opRGB: UInt8 = 0xFE
    static let opRGBA: UInt8 = 0xFF
    static let opIndex: UInt8 = 0x00  // 0b00xxxxxx
    static let opDiff: UInt8 = 0x40   // 0b01xxxxxx
    static let opLuma: UInt8 = 0x80   // 0b10xxxxxx
    static let opRun: UInt8 = 0xC0    // 0b11xxxxxx, run length 1...62 stored with a bias of -1
    static let mask: UInt8 = 0xC0
    /// The longest run one `QOI_OP_RUN` holds (63 and 64 would collide with the RGB/RGBA tags).
    static let maxRun = 62

    /// The slot of a pixel in the 64-entry index of recently seen pixels.
    @inline(__always)
    static func hash(_ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8) -> Int {
        (Int(r) &* 3 &+ Int(g) &* 5 &+ Int(b) &* 7 &+ Int(a) &* 11) & 63
    }
}
