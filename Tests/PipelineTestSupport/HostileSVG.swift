import Foundation

/// The SVG reproductions of issue 41, made small: each is what librsvg 2.54 cannot survive in
/// the process that parses or draws it (CodecSVGTests decode them, ImgpipeTests run imgpipe on them).
public enum HostileSVG {
    static let ns = "xmlns=\"http://www.w3.org/2000/svg\""

    /// librsvg panics (`Data storage buffer dimension mismatch`) while parsing a convolution of
    /// order 21, and the process aborts (SIGABRT).
    public static let convolution21 = Data(("<svg \(ns) width=\"10\" height=\"10\"><filter id=\"f\"><feConvolveMatrix order=\"21\" "
        + "kernelMatrix=\"\(Array(repeating: "1", count: 441).joined(separator: " "))\"/></filter>"
        + "<rect width=\"10\" height=\"10\" filter=\"url(#f)\"/></svg>").utf8)

    /// Draws for hours at any size (10⁸ octaves of turbulence).
    public static let turbulence = Data(("<svg \(ns) width=\"64\" height=\"64\"><filter id=\"t\"><feTurbulence baseFrequency=\"0.05\" "
        + "numOctaves=\"100000000\"/></filter><rect width=\"64\" height=\"64\" filter=\"url(#t)\"/></svg>").utf8)

    /// A 64 × 64 document whose `<image>` is `picture`, as a base64 `data:` PNG URL.
    public static func embedding(_ picture: Data) -> Data {
        Data(("<svg \(ns) xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"64\" height=\"64\"><image width=\"64\" height=\"64\" "
            + "xlink:href=\"data:image/png;base64,\(picture.base64EncodedString(options: .lineLength76Characters))\"/></svg>").utf8)
    }

    /// The first 33 bytes of a PNG (signature and IHDR) declaring `width` × `height`: what librsvg's
    /// gdk-pixbuf would decode whole.
    public static func pngHeader(width: UInt32, height: UInt32) -> Data {
        var header = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]) + Data("IHDR".utf8)
        for side in [width, height] { withUnsafeBytes(of: side.bigEndian) { header += $0 } }
        return header + Data([8, 6, 0, 0, 0, 0, 0, 0, 0])
    }

    /// A small, ordinary document: a black circle on 8 × 8.
    public static let circle = Data("<svg \(ns) width=\"8\" height=\"8\"><circle cx=\"4\" cy=\"4\" r=\"3\"/></svg>".utf8)
}
