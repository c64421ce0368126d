import Foundation
import PipelineCore

extension ImageFormat {
    /// farbfeld: `farbfeld`, width and height (u32 big-endian), then RGBA16 big-endian pixels.
    static let farbfeld = ImageFormat("farbfeld", mimeType: "image/x-farbfeld", fileExtension: "ff")
}

/// A decoder for a format the core has never heard of, chosen by its magic bytes.
struct FarbfeldDecoder: ImageDecoding {
    var signatures: [ImageSignature] { [.magic(Array("farbfeld".utf8), format: .farbfeld)] }

    /// Reads the header once; the pipeline checks the pixel limit from `info` before `decode`.
    func withSession<R>(for data: Data, _ body: (any ImageDecodingSession) throws -> R) throws -> R {
        let head = [UInt8](data.prefix(16))
        guard head.count == 16 else { throw ImagePipelineError.corruptData(format: .farbfeld, message: "no header") }
        func u32(_ at: Int) -> Int { head[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        let size = PixelSize(width: u32(8), height: u32(12))
        return try body(Session(data: data, info: ImageInfo(format: .farbfeld, size: size, hasAlpha: true)))
    }

    struct Session: ImageDecodingSession {
        let data: Data
        let info: ImageInfo

        func decode(_ options: DecodeOptions) throws -> DecodedImage {
            let count = info.size.pixelCount
            guard count <= (data.count - 16) / 8 else { throw ImagePipelineError.corruptData(format: .farbfeld, message: "too short") }
            var rgba = [UInt8](repeating: 0, count: count * 4)
            data.withUnsafeBytes { raw in
                for i in rgba.indices { rgba[i] = UInt8((Int(raw[16 + 2 * i]) << 8 | Int(raw[17 + 2 * i])) * 255 / 65_535) }
            }
            rgba.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }  // farbfeld alpha is straight
            guard let bitmap = Bitmap(width: info.size.width, height: info.size.height, bytesPerRow: info.size.width * 4,
                                      bytes: rgba) else { throw ImagePipelineError.corruptData(format: .farbfeld, message: "empty") }
            return DecodedImage(bitmap: bitmap, info: info)  // full size: the pipeline resizes it
        }
    }
}
