import PipelineTestSupport

/// The image formats the fuzzer mutates, each with its own structure-aware mutations.
public enum FuzzFormat: String, CaseIterable, Sendable, Hashable {
    /// JPEG marker segments.
    case jpeg
    /// PNG chunks.
    case png
    /// WebP RIFF chunks, animations included.
    case webp
    /// HEIC: ISO-BMFF boxes.
    case heif
    /// AVIF: ISO-BMFF boxes.
    case avif

    /// The file extension of a saved input.
    public var fileExtension: String {
        switch self {
        case .jpeg: return "jpg"
        case .png: return "png"
        case .webp: return "webp"
        case .heif: return "heic"
        case .avif: return "avif"
        }
    }
}

/// Seeded mutations of an image file: bit flips, byte sets, truncations, duplicated and deleted
/// ranges, and — knowing the format — duplicated, deleted and swapped chunks/boxes/segments,
/// length fields and picture dimensions set to extremes. The same input, format and seed always
/// give the same bytes and the same description.
public enum Mutator {
    /// The mutated bytes and one line per step applied (`"IHDR.width = 65535 (CRC fixed)"`).
    public static func mutate(_ input: [UInt8], format: FuzzFormat, seed: UInt64) -> (bytes: [UInt8], steps: [String]) {
        var rng = SeededGenerator(seed: seed)
        var bytes = input
        var steps: [String] = []
        let roll = Int.random(in: 0..<100, using: &rng)
        let count = roll < 60 ? 1 : roll < 85 ? 2 : 3
        for _ in 0..<count {
            let structural = Int.random(in: 0..<100, using: &rng) < 70
            if structural, let step = structuralStep(&bytes, format: format, rng: &rng) {
                steps.append(step)
            } else {
                steps.append(genericStep(&bytes, rng: &rng))
            }
        }
        return (bytes, steps)
    }

    // MARK: - Generic

    static let interestingBytes: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]

    static func genericStep(_ bytes: inout [UInt8], rng: inout SeededGenerator) -> String {
        guard !bytes.isEmpty else {
            bytes = [0xFF]
            return "empty input: one byte"
        }
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<30:
            let flips = Int.random(in: 1...8, using: &rng)
            var at: [Int] = []
            for _ in 0..<flips {
                let offset = Int.random(in: 0..<bytes.count, using: &rng)
                let bit = Int.random(in: 0..<8, using: &rng)
                bytes[offset] ^= 1 << UInt8(bit)
                at.append(offset)
            }
            return "flip bits at \(at.map(String.init).joined(separator: ","))"
        case 30..<50:
            let sets = Int.random(in: 1...4, using: &rng)
            var described: [String] = []
            for _ in 0..<sets {
                let offset = Int.random(in: 0..<bytes.count, using: &rng)
                let value = Bool.random(using: &rng) ? interestingBytes.randomElement(using: &rng) ?? 0 : UInt8.random(in: 0...255, using: &rng)
                bytes[offset] = value
                described.append("[\(offset)]=\(value)")
            }
            return "set bytes \(described.joined(separator: ","))"
        case 50..<65:
            let cut = Int.random(in: 0..<bytes.count, using: &rng)
            bytes.removeSubrange(cut...)
            return "truncate to \(cut) bytes"
        case 65..<75:
            let start = Int.random(in: 0..<bytes.count, using: &rng)
            let length = Int.random(in: 1...min(4096, bytes.count - start), using: &rng)
            let at = Int.random(in: 0...bytes.count, using: &rng)
            bytes.insert(contentsOf: Array(bytes[start..<start + length]), at: at)
            return "copy bytes \(start)..<\(start + length) to \(at)"
        case 75..<85:
            let start = Int.random(in: 0..<bytes.count, using: &rng)
            let length = Int.random(in: 1...min(4096, bytes.count - start), using: &rng)
            bytes.removeSubrange(start..<start + length)
            return "delete bytes \(start)..<\(start + length)"
        default:
            let width = [2, 4].randomElement(using: &rng) ?? 4
            guard bytes.count >= width else { return "no room for a \(width)-byte integer" }
            let offset = Int.random(in: 0...(bytes.count - width), using: &rng)
            let value = extremeValues(width: width).randomElement(using: &rng) ?? 0
            let bigEndian = Bool.random(using: &rng)
            if bigEndian { bytes.writeBE(offset, width, value) } else { bytes.writeLE(offset, width, value) }
            return "write \(value) as \(width)-byte \(bigEndian ? "BE" : "LE") at \(offset)"
        }
    }

    // MARK: - Structural

    static func structuralStep(_ bytes: inout [UInt8], format: FuzzFormat, rng: inout SeededGenerator) -> String? {
        let structure = Structure.parse(bytes, as: format)
        // Units that may be moved around: not the RIFF header pseudo-unit, nor a JPEG SOI.
        let movable = structure.units.indices.filter { i in
            let unit = structure.units[i]
            return !(unit.type == "RIFF" && unit.range.lowerBound == 0) && !(unit.type == "SOI" && unit.range.lowerBound == 0)
        }
        for _ in 0..<4 {
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<35:
                guard let field = structure.fields.randomElement(using: &rng) else { continue }
                var values = field.values
                values += [field.current &+ 1, field.current &- 1, field.current &* 2, field.current >> 1]
                guard let value = values.filter({ $0 != field.current }).randomElement(using: &rng) else { continue }
                let fix = structure.fixChecksum != nil && Int.random(in: 0..<4, using: &rng) != 0
                field.write(&bytes, value, fix)
                return "\(field.name) = \(value) (was \(field.current))\(fix ? ", CRC fixed" : "")"
            case 35..<50:
                guard let i = movable.randomElement(using: &rng) else { continue }
                let unit = structure.units[i]
                let fix = Bool.random(using: &rng)
                bytes.removeSubrange(unit.range)
                if fix { adjust(&bytes, structure, ancestorsOf: unit, by: -unit.range.count) }
                return "delete \(unit.type) at \(unit.range.lowerBound) (\(unit.range.count) bytes\(fix ? ", parent sizes fixed" : ""))"
            case 50..<65:
                guard let i = movable.randomElement(using: &rng) else { continue }
                let unit = structure.units[i]
                if unit.isBulk, unit.range.count > 1 << 20, Bool.random(using: &rng) { continue }
                let fix = Bool.random(using: &rng)
                let copy = Array(bytes[unit.range])
                if fix { adjust(&bytes, structure, ancestorsOf: unit, by: copy.count) }
                bytes.insert(contentsOf: copy, at: unit.range.upperBound)
                return "duplicate \(unit.type) at \(unit.range.lowerBound) (\(unit.range.count) bytes\(fix ? ", parent sizes fixed" : ""))"
            case 65..<72:
                // Swap a unit with the next one that has the same parent: no size changes.
                guard let i = movable.randomElement(using: &rng) else { continue }
                let unit = structure.units[i]
                guard let j = structure.units.indices.first(where: { $0 > i && structure.units[$0].ancestors == unit.ancestors
                    && structure.units[$0].range.lowerBound == unit.range.upperBound }) else { continue }
                let next = structure.units[j]
                let swapped = Array(bytes[next.range]) + Array(bytes[unit.range])
                bytes.replaceSubrange(unit.range.lowerBound..<next.range.upperBound, with: swapped)
                return "swap \(unit.type) at \(unit.range.lowerBound) with the \(next.type) after it"
            case 72..<85:
                guard let i = structure.units.indices.filter({ structure.units[$0].sizeField != nil }).randomElement(using: &rng),
                      let field = structure.units[i].sizeField else { continue }
                let unit = structure.units[i]
                let current = (field.bigEndian ? bytes.readBE(field.offset, field.width) : bytes.readLE(field.offset, field.width)) ?? 0
                guard let value = (extremeValues(width: field.width) + [current &+ 1, current &- 1, current &+ 1000, current >> 1])
                    .filter({ $0 != current }).randomElement(using: &rng) else { continue }
                if field.bigEndian { bytes.writeBE(field.offset, field.width, value) } else { bytes.writeLE(field.offset, field.width, value) }
                return "\(unit.type) at \(unit.range.lowerBound): length field = \(value) (was \(current))"
            case 85..<93:
                // Damage a unit's header or first payload bytes (not bulk data), fixing a PNG CRC.
                guard let unit = structure.units.filter({ $0.range.count > 0 && $0.type != "RIFF" }).randomElement(using: &rng) else { continue }
                let end = min(unit.range.upperBound, unit.payloadStart + 32)
                guard end > unit.range.lowerBound else { continue }
                let offset = Int.random(in: unit.range.lowerBound..<end, using: &rng)
                let value = UInt8.random(in: 0...255, using: &rng)
                bytes[offset] = value
                let fix = structure.fixChecksum != nil && Bool.random(using: &rng)
                if fix, let fixChecksum = structure.fixChecksum { fixChecksum(&bytes, unit) }
                return "\(unit.type) at \(unit.range.lowerBound): byte \(offset) = \(value)\(fix ? ", CRC fixed" : "")"
            default:
                // Cut at a unit's boundary or just inside its header.
                guard let unit = movable.map({ structure.units[$0] }).randomElement(using: &rng) else { continue }
                let cut = [unit.range.lowerBound, unit.range.upperBound, unit.range.lowerBound + 1,
                           min(unit.payloadStart + 1, unit.range.upperBound)].randomElement(using: &rng) ?? unit.range.lowerBound
                guard cut < bytes.count else { continue }
                bytes.removeSubrange(cut...)
                return "truncate to \(cut) bytes (in or at \(unit.type) at \(unit.range.lowerBound))"
            }
        }
        return nil
    }

    /// Grows or shrinks the size fields of `unit`'s ancestors by `delta`.
    private static func adjust(_ bytes: inout [UInt8], _ structure: Structure, ancestorsOf unit: Structure.Unit, by delta: Int) {
        for a in unit.ancestors {
            guard let field = structure.units[a].sizeField else { continue }
            if field.bigEndian {
                guard let v = bytes.readBE(field.offset, field.width) else { continue }
                bytes.writeBE(field.offset, field.width, UInt64(bitPattern: Int64(bitPattern: v) &+ Int64(delta)))
            } else {
                guard let v = bytes.readLE(field.offset, field.width) else { continue }
                bytes.writeLE(field.offset, field.width, UInt64(bitPattern: Int64(bitPattern: v) &+ Int64(delta)))
            }
        }
    }
}

extension Mutator {
    /// What the format-aware mutations see in `bytes`: the unit types in file order
    /// (`"IHDR"`, `"VP8X"`, `"ispe"`, `"SOF0"`) and the names of the fields they may set.
    public static func structure(of bytes: [UInt8], as format: FuzzFormat) -> (units: [String], fields: [String]) {
        let structure = Structure.parse(bytes, as: format)
        return (structure.units.map(\.type), structure.fields.map(\.name))
    }
}
