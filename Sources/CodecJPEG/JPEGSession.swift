import CJPEGShim
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One libjpeg decompression over borrowed bytes; frees its C state when it goes away, on
/// every path. `~Copyable`, so it has exactly one owner and cannot outlive its scope twice.
struct JPEGSession: ~Copyable {
    private let decoder: OpaquePointer

    /// Opens a session over `bytes`, which must stay valid for the session's whole life.
    init(bytes: UnsafeRawBufferPointer) throws(ImagePipelineError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw .corruptData(format: .jpeg, message: "the data is empty")
        }
        guard let decoder = jpegshim_create(base.assumingMemoryBound(to: UInt8.self), bytes.count) else {
            throw .corruptData(format: .jpeg, message: "out of memory creating the JPEG decoder")
        }
        self.decoder = decoder
    }

    deinit { jpegshim_destroy(decoder) }

    /// Reads the markers up to the first scan.
    func readHeader() throws(ImagePipelineError) -> jpegshim_info {
        var info = jpegshim_info()
        try check(jpegshim_read_header(decoder, &info))
        return info
    }

    /// libjpeg fails once it starts scan `count + 1`: a backstop behind `JPEGMarkerWalk`.
    func limitScans(to count: Int) { jpegshim_set_max_scans(decoder, Int32(clamping: count)) }

    /// Leaves a CMYK/YCCK file's rows as CMYK bytes (for a CMYK profile). Before ``start(scaleNumerator:)``.
    func keepRawCMYK() { jpegshim_set_raw_cmyk(decoder, 1) }

    /// Starts decompression at `scaleNumerator`/8; returns the output size.
    func start(scaleNumerator: Int) throws(ImagePipelineError) -> PixelSize {
        var width: Int32 = 0, height: Int32 = 0
        try check(jpegshim_start(decoder, Int32(scaleNumerator), &width, &height))
        return PixelSize(width: Int(width), height: Int(height))
    }

    /// Decodes every output row into `bitmap` (already of the output size).
    func readRGBA(into bitmap: inout Bitmap) throws(ImagePipelineError) {
        var rows: Int32 = 0
        let stride = bitmap.bytesPerRow
        let code = bitmap.withUnsafeMutableBytes { buffer in
            // The bitmap is never empty (its size is positive), so the base address exists.
            jpegshim_read_rgba(decoder, buffer.baseAddress, stride, &rows)
        }
        try check(code)
    }

    /// Reads to the end of the image. Problems there become warnings: the pixels are done.
    func finish() -> String? {
        let code = jpegshim_finish(decoder)
        return code == Int32(JPEGSHIM_OK) ? nil : String(cString: jpegshim_message(decoder))
    }

    /// The warnings libjpeg reported, with a count of the rest: the data ending early is a
    /// truncation, every other one ("Corrupt JPEG data: …", damage libjpeg decoded past) a
    /// warning, as libvips counts them (its `fail_on=error` passes them, `warning` fails).
    var issues: [DecodeIssue] {
        let count = Int(jpegshim_warning_count(decoder))
        var issues = (0..<min(count, Int(JPEGSHIM_MAX_WARNINGS))).map { index -> DecodeIssue in
            let text = String(cString: jpegshim_warning(decoder, Int32(index)))
            return jpegshim_warning_truncates(decoder, Int32(index)) != 0 ? .truncated(text) : .warning(text)
        }
        if count > issues.count {
            let rest = "… and \(count - issues.count) more warnings"
            // A truncation among the texts not kept still says what the picture is.
            issues.append(jpegshim_truncated(decoder) != 0 && !issues.includesTruncation ? .truncated(rest) : .warning(rest))
        }
        return issues
    }

    private func check(_ code: Int32) throws(ImagePipelineError) {
        switch code {
        case Int32(JPEGSHIM_OK):
            return
        case Int32(JPEGSHIM_UNSUPPORTED):
            throw .unsupported(format: .jpeg, message: String(cString: jpegshim_message(decoder)))
        default:
            let message = String(cString: jpegshim_message(decoder))
            throw .corruptData(format: .jpeg, message: message.isEmpty ? "libjpeg failed" : message)
        }
    }
}
