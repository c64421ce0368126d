import Foundation
import PipelineCore

/// A tiny made-up image format for testing the core without a real codec:
/// `"FAKE"`, width and height as UInt16 big-endian, then one RGBA colour; an optional trailing
/// `"BAD!"` makes the decoder fail as corrupt data.
public enum FakeImage {
    /// The magic bytes.
    public static let magic = Array("FAKE".utf8)

    /// The encoded bytes of a `width` × `height` picture filled with `color`.
    public static func data(width: Int, height: Int, color: (UInt8, UInt8, UInt8, UInt8) = (255, 0, 0, 255),
                            corrupt: Bool = false) -> Data {
        var bytes = magic
        bytes += [UInt8(width >> 8), UInt8(width & 0xFF), UInt8(height >> 8), UInt8(height & 0xFF)]
        bytes += [color.0, color.1, color.2, color.3]
        if corrupt { bytes += Array("BAD!".utf8) }
        return Data(bytes)
    }

    /// A colour derived from an integer, so each test picture can be told apart by its pixels.
    public static func color(for n: Int) -> (UInt8, UInt8, UInt8, UInt8) {
        (UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n &* 7 &+ 3), 255)
    }
}
