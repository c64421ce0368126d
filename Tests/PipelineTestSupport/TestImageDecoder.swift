import Foundation
import PipelineCore

/// Decodes the fixture server's test format: `TIMG`, width and height (UInt16, big-endian),
/// one RGBA colour, padding. The loaders are real; this stands in for a codec under a format of its own (`timg`), which the core has never heard of.
public struct TestImageDecoder: ImageDecoding {
    /// `timg`, a format the core has never heard of.
    public static let format = ImageFormat("timg", mimeType: "image/x-test", fileExtension: "timg")

    /// Creates the decoder.
    public init() {}

    /// `TIMG` and at least 12 bytes.
    public var signatures: [ImageSignature] {
        [ImageSignature(format: Self.format) { $0.count >= 12 && ImageSignature.bytes($0, start: Array("TIMG".utf8)) }]
    }

    /// Opens the 12-byte header.
    public func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        guard canDecode(data) else { throw ImagePipelineError.corruptData(format: Self.format, message: "not TIMG") }
        let bytes = [UInt8](data.prefix(12))
        let width = Int(bytes[4]) << 8 | Int(bytes[5]), height = Int(bytes[6]) << 8 | Int(bytes[7])
        return try body(Session(data: data, info: ImageInfo(format: Self.format, size: PixelSize(width: width, height: height))))
    }

    private struct Session: ImageDecodingSession {
        let data: Data
        let info: ImageInfo

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let colour = [UInt8](data[data.startIndex + 8..<data.startIndex + 12])
            let bytes = (0..<info.size.pixelCount).flatMap { _ in colour }
            guard let bitmap = Bitmap(width: info.size.width, height: info.size.height,
                                      bytesPerRow: info.size.width * 4, bytes: bytes) else {
                throw ImagePipelineError.corruptData(format: Self.formatName, message: "bad size")
            }
            return DecodedImage(bitmap: bitmap, info: info)
        }

        static let formatName = TestImageDecoder.format
    }
}
