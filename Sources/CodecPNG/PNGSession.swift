import CPNGShim
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One libpng read over borrowed bytes; frees its C state when it goes away, on every path.
/// `~Copyable`, so it has exactly one owner.
struct PNGSession: ~Copyable {
    private let reader: OpaquePointer

    /// Opens a session over `bytes`, which must stay valid for the session's whole life.
    init(bytes: UnsafeRawBufferPointer) throws(ImagePipelineError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw .corruptData(format: .png, message: "the data is empty")
        }
        guard let reader = pngshim_create(base.assumingMemoryBound(to: UInt8.self), bytes.count) else {
            throw .corruptData(format: .png, message: "out of memory creating the PNG reader")
        }
        self.reader = reader
    }

    deinit { pngshim_destroy(reader) }

    /// Reads the signature and the chunks up to the first IDAT.
    func readInfo() throws(ImagePipelineError) -> pngshim_info {
        var info = pngshim_info()
        try check(pngshim_read_info(reader, &info))
        return info
    }

    /// The iCCP profile found by ``readInfo()``, if any.
    var iccProfile: Data? {
        var data: UnsafePointer<UInt8>? = nil
        var size = 0
        pngshim_icc_profile(reader, &data, &size)
        guard let data, size > 0 else { return nil }
        return Data(bytes: data, count: size)
    }

    /// Asks libpng for straight RGBA8 rows from now on.
    func setRGBA8(_ info: inout pngshim_info) throws(ImagePipelineError) {
        try check(pngshim_set_rgba8(reader, &info))
    }

    /// Reads the next `count` rows of a non-interlaced image into `rows`, `stride` bytes apart.
    func readRows(into rows: UnsafeMutableRawBufferPointer, stride: Int, count: Int) throws(ImagePipelineError) {
        precondition(rows.count >= stride * count, "row buffer too small")
        try check(pngshim_read_rows(reader, rows.baseAddress?.assumingMemoryBound(to: UInt8.self), stride, UInt32(count)))
    }

    /// Reads the whole image, every Adam7 pass, into `bitmap` (already of the image's size).
    func readImage(into bitmap: inout Bitmap) throws(ImagePipelineError) {
        let stride = bitmap.bytesPerRow
        let code = bitmap.withUnsafeMutableBytes { pngshim_read_image(reader, $0.baseAddress, stride) }
        try check(code)
    }

    /// Reads the chunks after the image data. A problem there is returned as an issue: the
    /// pixels are complete, but a file that ends before its IEND chunk is still truncated.
    func readEnd() -> DecodeIssue? {
        guard pngshim_read_end(reader) != Int32(PNGSHIM_OK) else { return nil }
        let message = String(cString: pngshim_message(reader))
        return pngshim_truncated(reader) != 0 ? .truncated(message) : .warning(message)
    }

    /// libpng's warnings so far, with a count of those not kept.
    var issues: [DecodeIssue] {
        let count = Int(pngshim_warning_count(reader))
        var texts = (0..<min(count, Int(PNGSHIM_MAX_WARNINGS))).map { String(cString: pngshim_warning(reader, Int32($0))) }
        if count > texts.count { texts.append("… and \(count - texts.count) more warnings") }
        return texts.map(DecodeIssue.warning)
    }

    /// Throws for a failed libpng call: data that ends inside the pixels is
    /// ``PipelineCore/ImagePipelineError/truncatedData(format:message:)`` (libpng cannot return
    /// the rows it read), anything else ``PipelineCore/ImagePipelineError/corruptData(format:message:)``.
    private func check(_ code: Int32) throws(ImagePipelineError) {
        guard code != Int32(PNGSHIM_OK) else { return }
        let message = String(cString: pngshim_message(reader))
        if pngshim_truncated(reader) != 0 { throw .truncatedData(format: .png, message: message) }
        throw .corruptData(format: .png, message: message.isEmpty ? "libpng failed" : message)
    }
}
