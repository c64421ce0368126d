import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A format imgpipe writes, chosen by the output's file extension (`Writing.swift`): one of
/// ``Encoders/registry``'s, or PAM, which imgpipe writes itself.
struct OutputFormat: Hashable, Sendable {
    /// The format the encoder registry is asked for; `nil` for PAM (imgpipe's own writer).
    let imageFormat: ImageFormat?

    /// A format an encoder writes.
    static func encoded(_ format: ImageFormat) -> OutputFormat { OutputFormat(imageFormat: format) }

    /// Netpbm PAM, straight RGBA: imgpipe's own writer.
    static let pam = OutputFormat(imageFormat: nil)

    /// Writes `bitmap` to `path` in the format its extension names, with default options
    /// (`sheet`, `frames`), atomically (a temporary file beside it, then `rename`).
    ///
    /// PAM is streamed: rows are un-premultiplied (a straight bitmap's copied) into a buffer of ``pamChunkRows`` rows and
    /// written, so a full-size decode costs its bitmap plus that buffer (it used to build three
    /// more full copies: straight bytes, a `Data`, and header + body). The other formats go
    /// through their encoder (``CodecPNG/PNGEncoder`` holds one straight copy and the output).
    static func write(_ bitmap: Bitmap, to path: String) throws {
        try OutputSettings(format: try OutputFormat(path: path), path: path).write(bitmap, to: path)
    }

    /// Rows un-premultiplied and written per `write` call.
    static let pamChunkRows = 64

    /// Netpbm PAM, straight (not premultiplied) RGBA, as `dwebp -pam` writes: the header, then
    /// the rows, ``pamChunkRows`` at a time.
    static func writePAM(_ bitmap: Bitmap, to file: FileOutput) throws {
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
                            Bitmap.unpremultiply(source, into: target)
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

    /// Runs `body` on a new temporary file beside `path`, then renames it to `path`; the
    /// temporary file is removed if anything fails.
    /// - Throws: ``OutputError/cannotWrite(path:reason:)`` with the system's reason.
    static func writeAtomically(to path: String, _ body: (FileOutput) throws -> Void) throws {
        let target = URL(fileURLWithPath: path)
        let temporary = target.deletingLastPathComponent().appendingPathComponent(".\(target.lastPathComponent).\(UUID().uuidString).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw OutputError.cannotWrite(path: path, reason: String(cString: strerror(errno))) }
        do {
            let file = FileOutput(fileDescriptor: fd, closeOnDealloc: true)
            try body(file)
        } catch let error as OutputError {
            unlink(temporary.path)
            throw error
        } catch {
            unlink(temporary.path)
            throw OutputError.cannotWrite(path: path, reason: Self.reason(error))
        }
        guard rename(temporary.path, target.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary.path)
            throw OutputError.cannotWrite(path: path, reason: reason)
        }
    }

    /// Throws ``OutputError/cannotWrite(path:reason:)`` when `path`'s folder does not exist or
    /// is not a folder, or `path` itself is a folder: checked before a command loads anything.
    static func checkFolder(of path: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard let isFolder = folderStatus(folder) else {
            throw OutputError.cannotWrite(path: path, reason: "the folder \(folder) does not exist")
        }
        guard isFolder else { throw OutputError.cannotWrite(path: path, reason: "\(folder) is not a folder") }
        if folderStatus(path) == true {
            throw OutputError.cannotWrite(path: path, reason: "it is a folder")
        }
    }

    /// The system's words for a write error: `strerror` for a POSIX error, else the description.
    private static func reason(_ error: any Error) -> String {
        if let error = error as? CocoaError, let underlying = error.underlying as? POSIXError {
            return String(cString: strerror(underlying.code.rawValue))
        }
        if let error = error as? POSIXError { return String(cString: strerror(error.code.rawValue)) }
        return Console.oneLine(localizedDescription(of: error))
    }
}
