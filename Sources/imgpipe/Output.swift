import CodecPNG
import Foundation
import PipelineCore

/// The formats `--out` can write, by file extension.
enum OutputFormat {
    case png, pam

    init(path: String) {
        self = path.lowercased().hasSuffix(".pam") ? .pam : .png
    }

    /// Writes `bitmap` to `path` atomically.
    static func write(_ bitmap: Bitmap, to path: String) throws {
        let data: Data
        switch OutputFormat(path: path) {
        case .png: data = try PNGEncoder().encode(bitmap)
        case .pam:
            // Netpbm PAM, straight (not premultiplied) RGBA, as `dwebp -pam` writes.
            let header = "P7\nWIDTH \(bitmap.width)\nHEIGHT \(bitmap.height)\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n"
            data = Data(header.utf8) + Data(bitmap.unpremultipliedBytes())
        }
        do {
            try data.write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw ImagePipelineError.fileUnreadable(path: path, reason: "cannot write it: \(error.localizedDescription)")
        }
    }
}
