import CRSVG

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Whether data is an SVG document: XML whose root element is `svg` (with any namespace
/// prefix), after an optional UTF-8 byte order mark, XML declaration, processing instructions,
/// comments, a DOCTYPE (its internal subset included) and whitespace; or gzip data (`.svgz`)
/// whose decompressed start is such a document. Other XML is never taken.
///
/// Bounded: at most ``scanLimit`` bytes of the document are looked at, and a gzip stream is
/// inflated only until that many bytes come out (never the whole of it). UTF-16 documents are
/// not recognised.
enum SVGRootSniffer {
    /// What the bytes seen so far say.
    enum Verdict: Equatable {
        /// The root element is `svg`.
        case svg
        /// Not an SVG document: another root element, or not XML.
        case notSVG
        /// The bytes end before the root element's name does.
        case undecided
    }

    /// The most document bytes read to find the root element: 256 KiB (a DOCTYPE with a long
    /// internal subset of entities, as Adobe Illustrator writes, is a few KiB).
    static let scanLimit = 256 << 10

    /// The gzip magic (`1F 8B`) with the deflate method (`08`).
    static let gzipMagic: [UInt8] = [0x1F, 0x8B, 0x08]

    /// The decision on the whole data: `true` only for an SVG root (in gzip or not).
    static func isSVG(_ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            let bytes = UnsafeRawBufferPointer(rebasing: raw.prefix(scanLimit))
            if isGzip(bytes) {
                return verdict(inflatedHead(raw, limit: scanLimit)) == .svg
            }
            return verdict(bytes) == .svg
        }
    }

    /// The signature's pre-check over the first bytes: gzip, or XML not yet shown to be
    /// something other than SVG. ``isSVG(_:)`` decides.
    static func mayBeSVG(_ head: UnsafeRawBufferPointer) -> Bool {
        isGzip(head) || verdict(head) != .notSVG
    }

    static func isGzip(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= gzipMagic.count && zip(bytes, gzipMagic).allSatisfy { $0 == $1 }
    }

    static func verdict(_ bytes: [UInt8]) -> Verdict {
        bytes.withUnsafeBytes { verdict($0) }
    }

    /// Walks the prolog of the document in `bytes` to the root element's name.
    static func verdict(_ bytes: UnsafeRawBufferPointer) -> Verdict {
        let n = bytes.count
        var i = 0
        if n >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { i = 3 }
        func starts(_ text: StaticString, at index: Int) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= n else { return false }
            for k in 0..<count where bytes[index + k] != text.utf8Start[k] { return false }
            return true
        }
        /// The index just past the first `end` at or after `from`, or `nil`.
        func past(_ end: StaticString, from: Int) -> Int? {
            var j = from
            while j < n {
                if starts(end, at: j) { return j + end.utf8CodeUnitCount }
                j += 1
            }
            return nil
        }
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
        while true {
            while i < n, isSpace(bytes[i]) { i += 1 }
            guard i < n else { return .undecided }
            guard bytes[i] == UInt8(ascii: "<") else { return .notSVG }
            if starts("<?", at: i) {
                guard let next = past("?>", from: i + 2) else { return .undecided }
                i = next
            } else if starts("<!--", at: i) {
                guard let next = past("-->", from: i + 4) else { return .undecided }
                i = next
            } else if starts("<!DOCTYPE", at: i) {
                guard let next = pastDoctype(bytes, from: i + 9, starts: starts, past: past) else { return .undecided }
                i = next
            } else if i + 1 < n, bytes[i + 1] == UInt8(ascii: "!") {
                return .notSVG  // CDATA or a declaration before the root: not well-formed XML
            } else {
                var j = i + 1
                while j < n, !isSpace(bytes[j]), bytes[j] != UInt8(ascii: ">"), bytes[j] != UInt8(ascii: "/") { j += 1 }
                guard j < n else { return .undecided }
                let name = bytes[(i + 1)..<j]
                let local = name.lastIndex(of: UInt8(ascii: ":")).map { name[($0 + 1)...] } ?? name
                return local.elementsEqual("svg".utf8) ? .svg : .notSVG
            }
        }
    }

    /// The index past a DOCTYPE's closing `>` (quoted strings, comments and the bracketed
    /// internal subset skipped), or `nil` when the bytes end first.
    private static func pastDoctype(_ bytes: UnsafeRawBufferPointer, from: Int, starts: (StaticString, Int) -> Bool,
                                    past: (StaticString, Int) -> Int?) -> Int? {
        var j = from, depth = 0
        var quote: UInt8?
        while j < bytes.count {
            let c = bytes[j]
            if let open = quote {
                if c == open { quote = nil }
            } else if depth > 0, starts("<!--", j) {
                guard let next = past("-->", j + 4) else { return nil }
                j = next
                continue
            } else if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                quote = c
            } else if c == UInt8(ascii: "[") {
                depth += 1
            } else if c == UInt8(ascii: "]") {
                depth = max(0, depth - 1)
            } else if c == UInt8(ascii: ">"), depth == 0 {
                return j + 1
            }
            j += 1
        }
        return nil
    }

    /// The first `limit` bytes (or fewer) that the gzip stream in `raw` inflates to, through
    /// GIO's zlib decompressor; what came out before an error (a truncated stream) is kept.
    /// Nothing when librsvg's libraries are not installed (GIO is opened with them, on the first
    /// gzip stream: sniffing anything else opens nothing).
    static func inflatedHead(_ raw: UnsafeRawBufferPointer, limit: Int) -> [UInt8] {
        guard (try? SVGDocument.loadLibrary()) != nil, let base = raw.baseAddress, let decompressor = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP) else { return [] }
        defer { g_object_unref(UnsafeMutableRawPointer(decompressor)) }
        let converter = decompressor  // a GZlibDecompressor is a GConverter
        var out = [UInt8](repeating: 0, count: limit)
        var produced = 0, consumed = 0
        out.withUnsafeMutableBytes { buffer in
            guard let target = buffer.baseAddress else { return }
            while produced < limit {
                var read: gsize = 0, written: gsize = 0
                var error: UnsafeMutablePointer<GError>?
                let result = g_converter_convert(converter, base + consumed, gsize(raw.count - consumed), target + produced,
                                                 gsize(limit - produced), G_CONVERTER_INPUT_AT_END, &read, &written, &error)
                consumed += Int(read)
                produced += Int(written)
                if let error { g_error_free(error) }
                if result == G_CONVERTER_ERROR || result == G_CONVERTER_FINISHED || (read == 0 && written == 0) { break }
            }
        }
        return Array(out[0..<produced])
    }
}
