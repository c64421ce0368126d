import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The sizes of the pictures a document embeds as base64 `data:` URLs (PNG and GIF), read from
/// their headers: librsvg decodes them whole through gdk-pixbuf, outside the pipeline's pixel
/// limit, so a 1.5 MB document whose `<image>` is a 20000 × 20000 PNG took 2.79 GB for a 64-pixel
/// thumbnail. A cheap check before drawing; the worker's memory limit bounds what it misses
/// (other formats, SVGZ, headers it cannot read).
enum SVGNestedImages {
    /// The largest (by pixel count) of the embedded PNG and GIF pictures of a plain (not gzip)
    /// document, `nil` when there is none.
    static func largest(in data: Data) -> PixelSize? {
        data.withUnsafeBytes { raw -> PixelSize? in
            let bytes = raw.bindMemory(to: UInt8.self)
            let marker = Array("data:image/".utf8)
            var largest: PixelSize?, index = 0
            while index + marker.count < bytes.count {
                guard bytes[index] | 0x20 == UInt8(ascii: "d"), matches(marker, in: bytes, at: index) else {
                    index += 1
                    continue
                }
                index += marker.count
                // `png;base64,` or `gif;base64,` (parameters between are allowed), within 64 bytes.
                guard let comma = (index..<min(bytes.count, index + 64)).first(where: { bytes[$0] == UInt8(ascii: ",") })
                else { continue }
                let type = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<comma]), as: UTF8.self).lowercased()
                guard type.hasSuffix(";base64") else { continue }
                let head = base64Prefix(bytes, from: comma + 1, count: 24)
                let size = type.hasPrefix("png") ? pngSize(head) : type.hasPrefix("gif") ? gifSize(head) : nil
                if let size, size.pixelCount > largest?.pixelCount ?? -1 { largest = size }
                index = comma + 1
            }
            return largest
        }
    }

    private static func matches(_ marker: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        for offset in 0..<marker.count where bytes[index + offset] | 0x20 != marker[offset] | 0x20 { return false }
        return true
    }

    /// The first `count` bytes a base64 text starting at `start` decodes to (whitespace skipped).
    private static func base64Prefix(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, count: Int) -> [UInt8] {
        var text: [UInt8] = [], index = start
        let needed = (count + 2) / 3 * 4
        while text.count < needed, index < bytes.count {
            let byte = bytes[index]
            if byte.isBase64 {
                text.append(byte)
            } else if !(byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D) {
                break
            }
            index += 1
        }
        text = Array(text.prefix(text.count / 4 * 4))
        return Data(base64Encoded: Data(text)).map { Array($0.prefix(count)) } ?? []
    }

    /// A PNG's size from its IHDR.
    private static func pngSize(_ head: [UInt8]) -> PixelSize? {
        guard head.count >= 24, head[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
              head[12..<16].elementsEqual(Array("IHDR".utf8)) else { return nil }
        func big32(_ at: Int) -> Int { head[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return PixelSize(width: big32(16), height: big32(20))
    }

    /// A GIF's logical screen size.
    private static func gifSize(_ head: [UInt8]) -> PixelSize? {
        guard head.count >= 10, head[0..<3].elementsEqual(Array("GIF".utf8)) else { return nil }
        return PixelSize(width: Int(head[6]) | Int(head[7]) << 8, height: Int(head[8]) | Int(head[9]) << 8)
    }
}

extension UInt8 {
    fileprivate var isBase64: Bool {
        (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) || (0x30...0x39).contains(self) || self == 0x2B
            || self == 0x2F || self == 0x3D
    }
}
