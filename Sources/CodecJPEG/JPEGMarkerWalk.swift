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

/// One cheap pass over a JPEG's markers, before libjpeg decodes anything: the frame's
/// components, the blocks every scan will walk, and the APP2 `ICC_PROFILE` chunks; over a file
/// still arriving, also which scans are already whole (for `JPEGDecoder.preview(of:)`).
///
/// It reads marker headers only and skips entropy-coded data with `memchr`, so a 100 MB file is
/// walked in milliseconds and nothing is allocated for the picture. It finds markers the way
/// libjpeg's `next_marker` does (any `FF xx` with `xx` not `00`, `FF` or `RSTn`, garbage in
/// between skipped), so it sees at least every scan libjpeg will decode. What it cannot parse
/// it leaves to libjpeg, which reports it with its own message.
struct JPEGMarkerWalk {
    /// The SOS markers in the file.
    private(set) var scanCount = 0
    /// The 8×8 blocks all scans walk together, at full size (libjpeg entropy-decodes every
    /// coefficient of every scan even when it scales the output down).
    private(set) var scanBlocks = 0
    /// The picture's own blocks: each component's blocks once (the work of one sequential scan).
    private(set) var pictureBlocks = 0
    /// The APP2 `ICC_PROFILE` chunks before the first scan: sequence number, chunk count, and
    /// where the profile bytes lie in the file. At most 256 are kept: a profile has at most
    /// 255, so a 256th already makes it bogus (and a file of millions costs no memory).
    private(set) var iccChunks: [(sequence: Int, count: Int, bytes: Range<Int>)] = []

    /// The profile bytes of all APP2 `ICC_PROFILE` chunks before the first scan, every one
    /// counted (what an assembled profile would hold).
    private(set) var iccByteCount = 0

    /// The frame's SOF marker code (`0xC0`…`0xCF`; `0xC2` progressive Huffman, `0xCA`
    /// progressive arithmetic), once its whole segment has been read; 0 before.
    private(set) var frameMarker: UInt8 = 0
    /// The scans whose entropy-coded data is followed by a marker in the bytes walked: the
    /// scans a truncated file holds whole.
    private(set) var completeScans = 0
    /// Where the last of ``completeScans`` ends: the offset of the marker after its entropy-coded
    /// data (0 before the first).
    private(set) var completeScansEnd = 0
    /// Whether the walk reached an EOI marker.
    private(set) var reachedEnd = false

    private struct Component {
        var id: UInt8
        var horizontal: Int
        var vertical: Int
    }

    private var components: [Component] = []
    private var width = 0, height = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        // After a whole SOS segment: its entropy-coded data runs to the next marker.
        var inScan = false
        while let (marker, at) = Self.nextMarker(bytes, from: offset) {
            offset = at + 2
            // Any marker ends a scan, as in libjpeg (RSTn and stuffed FF 00 never get here).
            if inScan {
                completeScans += 1
                completeScansEnd = at
                inScan = false
            }
            // Standalone markers: SOI, EOI, TEM, RSTn.
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { continue }
            if marker == 0xD9 {
                reachedEnd = true
                break
            }
            guard at + 4 <= bytes.count else { break }
            let length = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            guard length >= 2, at + 2 + length <= bytes.count else { break }
            let segment = UnsafeRawBufferPointer(rebasing: bytes[(at + 4)..<(at + 2 + length)])
            switch marker {
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                if components.isEmpty { readFrame(segment, marker: marker) }
            case 0xDA:
                readScan(segment)
                inScan = true
            case 0xE2 where scanCount == 0:
                readICCChunk(segment, at: at + 4)
            default:
                break
            }
            // The entropy-coded data after an SOS is skipped by the next marker search.
            offset = at + 2 + length
        }
    }

    /// The next marker at or after `offset`: its code and where its `FF` is.
    private static func nextMarker(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> (UInt8, Int)? {
        guard let base = bytes.baseAddress else { return nil }
        var at = offset
        while at + 1 < bytes.count {
            guard let found = memchr(base + at, 0xFF, bytes.count - at) else { return nil }
            at = base.distance(to: UnsafeRawPointer(found))
            // Fill bytes: FF FF … FF xx.
            var code = at + 1
            while code < bytes.count, bytes[code] == 0xFF { code += 1 }
            guard code < bytes.count else { return nil }
            let marker = bytes[code]
            if marker != 0x00 && !(0xD0...0xD7).contains(marker) { return (marker, code - 1) }
            at = code + 1  // stuffed FF 00 or a restart marker inside entropy-coded data
        }
        return nil
    }

    private mutating func readFrame(_ segment: UnsafeRawBufferPointer, marker: UInt8) {
        guard segment.count >= 6 else { return }
        height = Int(segment[1]) << 8 | Int(segment[2])
        width = Int(segment[3]) << 8 | Int(segment[4])
        let count = Int(segment[5])
        guard segment.count >= 6 + 3 * count else { return }
        if count > 0 { frameMarker = marker }
        components = (0..<count).map { index in
            let sampling = segment[7 + 3 * index]
            return Component(id: segment[6 + 3 * index], horizontal: max(1, Int(sampling >> 4)),
                             vertical: max(1, Int(sampling & 0x0F)))
        }
        pictureBlocks = components.reduce(0) { $0 + blocks(of: $1) }
    }

    /// A scan of one component walks that component's blocks; an interleaved scan walks whole
    /// MCUs (each component's sampling factors' worth of blocks per MCU, padding included).
    private mutating func readScan(_ segment: UnsafeRawBufferPointer) {
        scanCount += 1
        guard !components.isEmpty, let count = segment.first.map(Int.init), segment.count >= 1 + 2 * count else { return }
        let inScan = (0..<count).compactMap { index in components.first { $0.id == segment[1 + 2 * index] } }
        if inScan.count == 1 {
            scanBlocks += blocks(of: inScan[0])
        } else if !inScan.isEmpty {
            let maxH = components.map(\.horizontal).max() ?? 1, maxV = components.map(\.vertical).max() ?? 1
            let mcus = Self.ceil(width, 8 * maxH) * Self.ceil(height, 8 * maxV)
            scanBlocks += mcus * inScan.reduce(0) { $0 + $1.horizontal * $1.vertical }
        }
    }

    /// A component's own blocks: its sampled size (libjpeg's `width_in_blocks` × `height_in_blocks`).
    private func blocks(of component: Component) -> Int {
        let maxH = components.map(\.horizontal).max() ?? 1, maxV = components.map(\.vertical).max() ?? 1
        let across = Self.ceil(Self.ceil(width * component.horizontal, maxH), 8)
        let down = Self.ceil(Self.ceil(height * component.vertical, maxV), 8)
        return across * down
    }

    private mutating func readICCChunk(_ segment: UnsafeRawBufferPointer, at start: Int) {
        let tag = Array("ICC_PROFILE".utf8) + [0]
        guard segment.count >= 14, segment.prefix(12).elementsEqual(tag) else { return }
        iccByteCount += segment.count - 14
        if iccChunks.count <= 255 { iccChunks.append((Int(segment[12]), Int(segment[13]), (start + 14)..<(start + segment.count))) }
    }

    private static func ceil(_ value: Int, _ divisor: Int) -> Int { (value + divisor - 1) / divisor }

    /// The profile from ``iccChunks`` in sequence order, copied once out of `bytes`; `nil` when
    /// there is none. Chunks that disagree on their count, or are missing, repeated or out of
    /// range, give no profile and a warning, as libjpeg's `jpeg_read_icc_profile` does.
    func iccProfile(in bytes: UnsafeRawBufferPointer) -> (profile: Data?, warning: String?) {
        guard let count = iccChunks.first?.count else { return (nil, nil) }
        let bogus = "Corrupt JPEG data: bad ICC marker"
        guard iccChunks.count <= 255 else { return (nil, bogus) }
        var bySequence = [Range<Int>?](repeating: nil, count: count + 1)
        for chunk in iccChunks {
            guard chunk.count == count, chunk.sequence >= 1, chunk.sequence <= count,
                  bySequence[chunk.sequence] == nil else { return (nil, bogus) }
            bySequence[chunk.sequence] = chunk.bytes
        }
        let ranges = bySequence.dropFirst().compactMap { $0 }
        guard ranges.count == count, iccByteCount > 0 else { return (nil, bogus) }
        var profile = Data(capacity: iccByteCount)
        for range in ranges { profile.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range])) }
        return (profile, nil)
    }
}
