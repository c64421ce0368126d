import CodecPNG
import Foundation
import PipelineCore

/// The formats `--out` can write, by file extension.
enum OutputFormat {
    case png, pam

    init(path: String) {
        self = path.lowercased().hasSuffix(".pam") ? .pam : .png
    }

    /// Writes `bitmap` to `path` atomically (a temporary file beside it, then `rename`).
    ///
    /// PAM is streamed: rows are un-premultiplied (a straight bitmap's copied) into a buffer of ``pamChunkRows`` rows and
    /// written, so a full-size decode costs its bitmap plus that buffer (it used to build three
    /// more full copies: straight bytes, a `Data`, and header + body). PNG goes through
    /// ``CodecPNG/PNGEncoder``, which holds one straight copy and the compressed output.
    static func write(_ bitmap: Bitmap, to path: String) throws {
        do {
            switch OutputFormat(path: path) {
            case .png:
                try PNGEncoder().encode(bitmap).write(to: URL(fileURLWithPath: path), options: .atomic)
            case .pam:
                try writeAtomically(to: path) { file in try writePAM(bitmap, to: file) }
            }
        } catch let error as ImagePipelineError {
            throw error
        } catch {
            throw ImagePipelineError.fileUnreadable(path: path, reason: "cannot write it: \(error.localizedDescription)")
        }
    }

    /// Rows un-premultiplied and written per `write` call.
    static let pamChunkRows = 64

    /// Netpbm PAM, straight (not premultiplied) RGBA, as `dwebp -pam` writes: the header, then
    /// the rows, ``pamChunkRows`` at a time.
    static func writePAM(_ bitmap: Bitmap, to file: FileHandle) throws {
        let header = "P7\nWIDTH \(bitmap.width)\nHEIGHT \(bitmap.height)\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n"
        try file.write(contentsOf: Data(header.utf8))
        let rowBytes = bitmap.width * 4
        var chunk = [UInt8](repeating: 0, count: rowBytes * min(pamChunkRows, max(1, bitmap.height)))
        try bitmap.withUnsafeBytes { pixels in
            var y = 0
            while y < bitmap.height {
                let rows = min(pamChunkRows, bitmap.height - y)
                try chunk.withUnsafeMutableBufferPointer { out in
                    for r in 0..<rows {
                        let source = UnsafeBufferPointer(rebasing: pixels[((y + r) * bitmap.bytesPerRow)...].prefix(rowBytes))
                        let target = UnsafeMutableBufferPointer(rebasing: out[(r * rowBytes)..<((r + 1) * rowBytes)])
                        if bitmap.pixelFormat.isPremultiplied {
                            unpremultiply(source, into: target)
                        } else {
                            _ = target.update(fromContentsOf: source)
                        }
                    }
                    try file.write(contentsOf: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<(rows * rowBytes)]))
                }
                y += rows
            }
        }
    }

    /// One row of premultiplied RGBA8 as straight RGBA8, rounded as
    /// ``PipelineCore/Bitmap/unpremultipliedBytes()`` does (a fully transparent pixel is 0, 0, 0, 0).
    static func unpremultiply(_ row: UnsafeBufferPointer<UInt8>, into out: UnsafeMutableBufferPointer<UInt8>) {
        var i = 0
        while i + 3 < row.count {
            let a = Int(row[i + 3])
            out[i + 3] = UInt8(a)
            if a == 255 {  // opaque: the colour is already straight (most pixels; every GIF pixel but clear ones)
                out[i] = row[i]; out[i + 1] = row[i + 1]; out[i + 2] = row[i + 2]
            } else if a == 0 {
                out[i] = 0; out[i + 1] = 0; out[i + 2] = 0
            } else {
                for c in 0..<3 { out[i + c] = UInt8(min(255, (Int(row[i + c]) * 255 + a / 2) / a)) }
            }
            i += 4
        }
    }

    /// Runs `body` on a new temporary file beside `path`, then renames it to `path`; the
    /// temporary file is removed if anything fails.
    private static func writeAtomically(to path: String, _ body: (FileHandle) throws -> Void) throws {
        let target = URL(fileURLWithPath: path)
        let temporary = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw ImagePipelineError.fileUnreadable(path: path, reason: "cannot write it: cannot create \(temporary.path)")
        }
        do {
            let file = try FileHandle(forWritingTo: temporary)
            defer { try? file.close() }
            try body(file)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        guard rename(temporary.path, target.path) == 0 else {
            let reason = String(cString: strerror(errno))
            try? FileManager.default.removeItem(at: temporary)
            throw ImagePipelineError.fileUnreadable(path: path, reason: "cannot write it: \(reason)")
        }
    }
}
