#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An image container format: an open value, so a plugin can name a format the core has never
/// heard of (`ImageFormat("farbfeld", mimeType: "image/x-farbfeld", fileExtension: "ff")`).
///
/// Two formats are equal when their identifiers are (compared lower-case); the MIME type and file
/// extension travel along for messages, writers and `Content-Type` checks. The formats that
/// ship with codec modules are static constants.
public struct ImageFormat: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The identifier, lower-case: `"jpeg"`, `"png"`, `"farbfeld"`.
    public let rawValue: String
    /// The MIME type (`"image/jpeg"`), if known.
    public let mimeType: String?
    /// The usual file extension without a dot (`"jpg"`), if known.
    public let fileExtension: String?

    /// A format by identifier, with the MIME type and extension of a known format of that name.
    public init(rawValue: String) {
        let id = rawValue.lowercased()
        let known = Self.known.first { $0.format.rawValue == id }?.format
        self.init(id: id, mimeType: known?.mimeType, fileExtension: known?.fileExtension)
    }

    /// A format with its MIME type and file extension: how a plugin declares a new one.
    public init(_ identifier: String, mimeType: String?, fileExtension: String?) {
        self.init(id: identifier.lowercased(), mimeType: mimeType, fileExtension: fileExtension)
    }

    private init(id: String, mimeType: String?, fileExtension: String?) {
        self.rawValue = id
        self.mimeType = mimeType
        self.fileExtension = fileExtension
    }

    /// A format by identifier: `let farbfeld: ImageFormat = "farbfeld"`.
    public init(stringLiteral value: String) { self.init(rawValue: value) }

    /// Equal identifiers make equal formats.
    public static func == (lhs: ImageFormat, rhs: ImageFormat) -> Bool { lhs.rawValue == rhs.rawValue }

    /// Hashes the identifier.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    /// The upper-case name used in messages: `"JPEG"`, `"HEIF"`.
    public var description: String { rawValue.uppercased() }

    /// JPEG (`FF D8 FF`).
    public static let jpeg = ImageFormat(id: "jpeg", mimeType: "image/jpeg", fileExtension: "jpg")
    /// PNG (8-byte signature `89 50 4E 47 0D 0A 1A 0A`).
    public static let png = ImageFormat(id: "png", mimeType: "image/png", fileExtension: "png")
    /// WebP (`RIFF....WEBP`).
    public static let webp = ImageFormat(id: "webp", mimeType: "image/webp", fileExtension: "webp")
    /// HEIC/HEIF (`....ftyp` with a HEIF brand).
    public static let heif = ImageFormat(id: "heif", mimeType: "image/heic", fileExtension: "heic")
    /// AVIF (`....ftyp` with an `avif`/`avis` brand).
    public static let avif = ImageFormat(id: "avif", mimeType: "image/avif", fileExtension: "avif")
    /// GIF (`GIF87a`/`GIF89a`).
    public static let gif = ImageFormat(id: "gif", mimeType: "image/gif", fileExtension: "gif")
    /// Windows bitmap (`BM`).
    public static let bmp = ImageFormat(id: "bmp", mimeType: "image/bmp", fileExtension: "bmp")
    /// TIFF (`II*\0` or `MM\0*`).
    public static let tiff = ImageFormat(id: "tiff", mimeType: "image/tiff", fileExtension: "tiff")

    /// How many leading bytes sniffing looks at, at most. Loaders may sniff after this many.
    public static let sniffLength = 32

    /// A format the core can recognise for messages, and the module that decodes it.
    struct Known: Sendable {
        let format: ImageFormat
        let signature: ImageSignature
        /// "link CodecJPEG and register `JPEGDecoder()`", when a module of this package decodes it.
        let hint: String?
    }

    /// The "what does this look like" table. Only for error messages: decoders declare their
    /// own ``ImageSignature``s, and ``DecoderRegistry`` chooses by those alone.
    static let known: [Known] = [
        Known(format: .jpeg, signature: .magic([0xFF, 0xD8, 0xFF], format: .jpeg),
              hint: "link CodecJPEG and register `JPEGDecoder()`"),
        Known(format: .png, signature: .magic([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], format: .png),
              hint: "link CodecPNG and register `PNGDecoder()`"),
        Known(format: .webp, signature: .riff(form: "WEBP", format: .webp),
              hint: "link CodecWebP and register `WebPDecoder()`"),
        Known(format: .gif, signature: ImageSignature(format: .gif) { bytes in
            ImageSignature.bytes(bytes, start: Array("GIF87a".utf8)) || ImageSignature.bytes(bytes, start: Array("GIF89a".utf8))
        }, hint: "link CodecGIF and register `GIFDecoder()`"),
        Known(format: .bmp, signature: ImageSignature(format: .bmp) { $0.count >= 14 && ImageSignature.bytes($0, start: Array("BM".utf8)) },
              hint: nil),
        Known(format: .tiff, signature: ImageSignature(format: .tiff) {
            ImageSignature.bytes($0, start: [0x49, 0x49, 0x2A, 0x00]) || ImageSignature.bytes($0, start: [0x4D, 0x4D, 0x00, 0x2A])
        }, hint: nil),
        Known(format: .avif, signature: .isoBaseMedia(majorBrands: ["avif", "avis"], compatibleBrands: ["avif", "avis"], format: .avif),
              hint: "link CodecHEIF and register `HEIFDecoder()` (AVIF needs libheif with an AV1 decoder)"),
        Known(format: .heif, signature: .isoBaseMedia(
            majorBrands: ["heic", "heix", "heim", "heis", "hevc", "hevx"],
            compatibleBrands: ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"], format: .heif),
              hint: "link CodecHEIF and register `HEIFDecoder()`"),
    ]

    /// What `data` looks like among the formats the core knows by name, or `nil`. For messages
    /// only ("GIF data, but no GIF decoder is registered"): decoding chooses by the signatures
    /// the registered decoders declare. Reads at most ``sniffLength`` bytes.
    public static func sniff(_ data: Data) -> ImageFormat? {
        data.withUnsafeBytes { sniff(UnsafeRawBufferPointer(rebasing: $0.prefix(sniffLength))) }
    }

    /// What the bytes in `bytes` look like, or `nil`.
    public static func sniff(_ bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        known.first { $0.signature.matches(bytes) }?.format
    }

    /// How to get a decoder for this format, if a module of this package has one.
    var registrationHint: String? { Self.known.first { $0.format == self }?.hint }
}

/// How a decoder recognises its format from the first bytes: magic bytes at an offset, or any
/// predicate over at most ``ImageFormat/sniffLength`` leading bytes.
public struct ImageSignature: Sendable {
    /// The format these bytes are.
    public let format: ImageFormat
    private let predicate: @Sendable (UnsafeRawBufferPointer) -> Bool

    /// A signature from a predicate over the leading bytes (at most ``ImageFormat/sniffLength``).
    public init(format: ImageFormat, matches predicate: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool) {
        self.format = format
        self.predicate = predicate
    }

    /// `magic` at `offset`: `.magic(Array("farbfeld".utf8), format: farbfeld)`.
    public static func magic(_ magic: [UInt8], at offset: Int = 0, format: ImageFormat) -> ImageSignature {
        ImageSignature(format: format) { bytes($0, start: magic, at: offset) }
    }

    /// A RIFF container of form type `form` (`RIFF....WEBP`).
    public static func riff(form: String, format: ImageFormat) -> ImageSignature {
        ImageSignature(format: format) { bytes($0, start: Array("RIFF".utf8)) && bytes($0, start: Array(form.utf8), at: 8) }
    }

    /// An ISO base media file (`....ftyp`) whose major brand is one of `majorBrands`, or that
    /// lists one of `compatibleBrands` (as HEIF and AVIF are told apart).
    public static func isoBaseMedia(majorBrands: Set<String>, compatibleBrands: Set<String>,
                                    format: ImageFormat) -> ImageSignature {
        ImageSignature(format: format) { bytes in
            guard bytes.count >= 12, Self.bytes(bytes, start: Array("ftyp".utf8), at: 4) else { return false }
            let brands = ftypBrands(bytes)
            guard let major = brands.first else { return false }
            return majorBrands.contains(major) || brands.dropFirst().contains(where: compatibleBrands.contains)
        }
    }

    /// Whether `data` starts like this format.
    public func matches(_ data: Data) -> Bool {
        data.withUnsafeBytes { matches(UnsafeRawBufferPointer(rebasing: $0.prefix(ImageFormat.sniffLength))) }
    }

    /// Whether the leading bytes in `bytes` are this format's.
    public func matches(_ bytes: UnsafeRawBufferPointer) -> Bool {
        predicate(UnsafeRawBufferPointer(rebasing: bytes.prefix(ImageFormat.sniffLength)))
    }

    /// Whether `buffer` holds `magic` at `offset`.
    public static func bytes(_ buffer: UnsafeRawBufferPointer, start magic: [UInt8], at offset: Int = 0) -> Bool {
        guard offset >= 0, buffer.count >= offset + magic.count else { return false }
        for (index, byte) in magic.enumerated() where buffer[offset + index] != byte { return false }
        return true
    }

    /// The brands of an `ftyp` box: the major brand first, then the compatible ones (the
    /// minor version skipped), within the box and the bytes given.
    static func ftypBrands(_ bytes: UnsafeRawBufferPointer) -> [String] {
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
        return brands
    }
}
