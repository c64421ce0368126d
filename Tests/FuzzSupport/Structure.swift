/// What a format-aware mutator knows about a file: its units (PNG chunks, RIFF chunks, ISO-BMFF
/// boxes, JPEG marker segments) and its interesting fields (sizes, dimensions, counts).
struct Structure {
    /// One unit of the file, header included.
    struct Unit {
        /// The unit's bytes in the file, header included (JPEG SOS: with its entropy-coded data).
        var range: Range<Int>
        /// Its type: `IHDR`, `VP8X`, `ispe`, `SOF0`.
        var type: String
        /// Where its header ends and its payload begins.
        var payloadStart: Int
        /// Its own length field: offset, width in bytes, big-endian. `nil` when it has none.
        var sizeField: (offset: Int, width: Int, bigEndian: Bool)?
        /// The indices of the units that contain it, innermost first (their size fields grow
        /// or shrink with it).
        var ancestors: [Int] = []
        /// Bulk data (`IDAT`, `mdat`, a JPEG scan): duplicating it is costly and flipping it is
        /// what the generic bit flips already do.
        var isBulk = false
    }

    /// A field worth setting to extreme values.
    struct Field {
        /// What it is, for the case's name: `IHDR.width`.
        var name: String
        /// The values to try (the mutator adds a few near the current one).
        var values: [UInt64]
        /// The current value.
        var current: UInt64
        /// Writes a value (and whatever checksum covers it, when `fixChecksum`).
        var write: (inout [UInt8], UInt64, _ fixChecksum: Bool) -> Void
    }

    /// The units, outermost first within each nesting.
    var units: [Unit] = []
    /// The fields.
    var fields: [Field] = []
    /// Whether units carry a checksum the mutator can fix after changing them (PNG chunks).
    var fixChecksum: ((inout [UInt8], Unit) -> Void)?
}

/// Values for a size field `width` bytes wide: zero, one, sign boundaries and the maximum.
func extremeValues(width: Int) -> [UInt64] {
    switch width {
    case 1: return [0, 1, 0x7F, 0x80, 0xFF]
    case 2: return [0, 1, 2, 0x7FFF, 0x8000, 0xFFFF]
    case 3: return [0, 1, 0x7F_FFFF, 0x80_0000, 0xFF_FFFF]
    case 4: return [0, 1, 8, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFF0, 0xFFFF_FFFF]
    default: return [0, 1, 16, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, UInt64.max]
    }
}

/// Picture dimensions that matter: zero, one, just under and over the default 100-megapixel
/// limit when squared (9999, 10001), the largest a format allows, and overflow boundaries.
func dimensionValues(max: UInt64) -> [UInt64] {
    [0, 1, 2, 9999, 10_001, 16_383, 16_384, 32_767, 40_000, 65_535, 65_536, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF]
        .filter { $0 <= max }
}

extension Structure {
    /// The structure of `bytes` as `format`; empty when it does not parse (the generic
    /// mutations still apply).
    static func parse(_ bytes: [UInt8], as format: FuzzFormat) -> Structure {
        switch format {
        case .png: return PNGStructure.parse(bytes)
        case .webp: return RIFFStructure.parse(bytes)
        case .heif, .avif: return BMFFStructure.parse(bytes)
        case .jpeg: return JPEGStructure.parse(bytes)
        }
    }
}
