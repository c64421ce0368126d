import Foundation

/// An image container format, recognised by its magic bytes.
public enum ImageFormat: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// JPEG (`FF D8 FF`).
    case jpeg
    /// PNG (8-byte signature `89 50 4E 47 0D 0A 1A 0A`).
    case png
    /// WebP (`RIFF....WEBP`).
    case webp
    /// HEIC/HEIF (`....ftyp` with a HEIF brand).
    case heif
    /// AVIF (`....ftyp` with an `avif`/`avis` brand).
    case avif
    /// GIF (`GIF87a`/`GIF89a`).
    case gif
    /// Windows bitmap (`BM`).
    case bmp
    /// TIFF (`II*\0` or `MM\0*`).
    case tiff

    /// The upper-case name used in messages: `"JPEG"`, `"HEIF"`.
    public var description: String { rawValue.uppercased() }

    /// How many leading bytes ``sniff(_:)`` needs at most. Loaders may sniff after this many.
    public static let sniffLength = 32

    /// The format of `data` by its magic bytes, or `nil` when it is none of the known ones.
    ///
    /// Reads at most ``sniffLength`` bytes and never copies or consumes the data.
    public static func sniff(_ data: Data) -> ImageFormat? {
        data.withUnsafeBytes { sniff(UnsafeRawBufferPointer(rebasing: $0.prefix(sniffLength))) }
    }

    /// The format of the bytes in `bytes`, or `nil`.
    public static func sniff(_ bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        func starts(with magic: [UInt8], at offset: Int = 0) -> Bool {
            guard bytes.count >= offset + magic.count else { return false }
            for (index, byte) in magic.enumerated() where bytes[offset + index] != byte { return false }
            return true
        }
        if starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts(with: Array("RIFF".utf8)) && starts(with: Array("WEBP".utf8), at: 8) { return .webp }
        if starts(with: Array("GIF87a".utf8)) || starts(with: Array("GIF89a".utf8)) { return .gif }
        if starts(with: Array("BM".utf8)) && bytes.count >= 14 { return .bmp }
        if starts(with: [0x49, 0x49, 0x2A, 0x00]) || starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if starts(with: Array("ftyp".utf8), at: 4) { return isoBaseMediaFormat(bytes) }
        return nil
    }

    /// HEIF and AVIF share the ISO-BMFF `ftyp` box: the major brand, then the compatible
    /// brands, decide which one it is.
    private static func isoBaseMediaFormat(_ bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        let boxSize = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let end = Swift.min(bytes.count, Swift.max(16, boxSize))
        var brands: [String] = []
        var offset = 8
        while offset + 4 <= end {
            if offset != 12 {  // bytes 12..<16 are the minor version, not a brand
                brands.append(String(decoding: bytes[offset..<offset + 4], as: UTF8.self))
            }
            offset += 4
        }
        let avif: Set = ["avif", "avis"]
        let heif: Set = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"]
        if let major = brands.first {
            if avif.contains(major) { return .avif }
            if heif.contains(major) && major != "mif1" && major != "msf1" { return .heif }
        }
        if brands.contains(where: avif.contains) { return .avif }
        if brands.contains(where: heif.contains) { return .heif }
        return nil
    }
}
