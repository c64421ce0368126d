#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The lookup-table entries of an ICC profile, read from its tag table and the tables' own
/// headers without lcms: what building a transform would read and copy, known before it does.
///
/// Each distinct tag of type `mft1` (lut8), `mft2` (lut16), `mAB ` or `mBA ` counts its CLUT's
/// grid points per input channel raised to (or multiplied over) its input channels; tags linked
/// to one offset count once. A tag that points outside the profile counts nothing (lcms will
/// refuse it). Other types (curves, matrices, `mpet`) are bounded by the profile's size.
enum ICCLookupTables {
    /// The entries over all lookup tables of `profile`, saturating at `Int.max`.
    static func entryCount(_ profile: Data) -> Int {
        profile.withUnsafeBytes { bytes in
            guard bytes.count >= 132 else { return 0 }
            let tagCount = Int(word(bytes, 128))
            var seen = Set<Int>()
            var total = 0
            for index in 0..<min(tagCount, (bytes.count - 132) / 12) {
                let entry = 132 + 12 * index
                let offset = Int(word(bytes, entry + 4))
                guard offset + 32 <= bytes.count, seen.insert(offset).inserted else { continue }
                let (sum, overflow) = total.addingReportingOverflow(entries(bytes, at: offset))
                total = overflow ? Int.max : sum
            }
            return total
        }
    }

    /// The CLUT entries of the table at `offset` (at least 32 bytes are there), 0 when it is none.
    private static func entries(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        let type = word(bytes, offset)
        let inputs = Int(bytes[offset + 8])
        var points: [Int]
        switch type {
        case 0x6D66_7431, 0x6D66_7432:  // 'mft1', 'mft2': one grid size for every input
            points = Array(repeating: Int(bytes[offset + 10]), count: inputs)
        case 0x6D41_4220, 0x6D42_4120:  // 'mAB ', 'mBA ': a CLUT offset, then points per input
            let clut = Int(word(bytes, offset + 24))
            guard clut > 0, offset + clut + 16 <= bytes.count else { return 0 }
            points = (0..<min(inputs, 16)).map { Int(bytes[offset + clut + $0]) }
        default:
            return 0
        }
        guard !points.isEmpty else { return 0 }
        var product = 1
        for value in points {
            let (next, overflow) = product.multipliedReportingOverflow(by: value)
            if overflow { return Int.max }
            product = next
        }
        return product
    }

    private static func word(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 << 8 | UInt32(bytes[at + $1]) }
    }
}
