/// WebP: `RIFF size(4, LE) WEBP`, then chunks of `fourcc size(4, LE) payload [pad]`; an
/// animation's `ANMF` chunks hold the frame's own chunks after a 16-byte header.
enum RIFFStructure {
    static func parse(_ bytes: [UInt8]) -> Structure {
        var structure = Structure()
        guard bytes.has("RIFF", at: 0), bytes.count >= 12 else { return structure }
        structure.units.append(Structure.Unit(range: 0..<bytes.count, type: "RIFF", payloadStart: 12, sizeField: (4, 4, false)))
        if let size = bytes.readLE(4, 4) {
            structure.fields.append(Structure.Field(name: "RIFF.size", values: extremeValues(width: 4), current: size) { b, v, _ in
                b.writeLE(4, 4, v)
            })
        }
        chunks(bytes, from: 12, to: bytes.count, ancestors: [0], into: &structure)
        return structure
    }

    private static func chunks(_ bytes: [UInt8], from start: Int, to end: Int, ancestors: [Int], into structure: inout Structure) {
        var offset = start
        while let size = bytes.readLE(offset + 4, 4), offset + 8 + Int(size) <= end {
            let type = bytes.fourCC(at: offset)
            let length = 8 + Int(size) + Int(size & 1)
            let index = structure.units.count
            structure.units.append(Structure.Unit(range: offset..<min(end, offset + length), type: type, payloadStart: offset + 8,
                                                  sizeField: (offset + 4, 4, false), ancestors: ancestors,
                                                  isBulk: size > 4096))
            fields(bytes, type: type, payload: offset + 8, size: Int(size), into: &structure)
            if type == "ANMF", size >= 16 {
                chunks(bytes, from: offset + 24, to: offset + 8 + Int(size), ancestors: [index] + ancestors, into: &structure)
            }
            offset += length
        }
    }

    private static func fields(_ bytes: [UInt8], type: String, payload p: Int, size: Int, into structure: inout Structure) {
        func plain(_ name: String, _ at: Int, _ width: Int, _ values: [UInt64]) {
            guard at + width <= p + size, let current = bytes.readLE(at, width) else { return }
            structure.fields.append(Structure.Field(name: "\(type).\(name)", values: values, current: current) { b, v, _ in
                b.writeLE(at, width, v)
            })
        }
        /// A bit field of `bits` bits at bit `shift` of the little-endian word of `width` bytes at `at`.
        func bits(_ name: String, _ at: Int, _ width: Int, shift: Int, bits: Int, _ values: [UInt64]) {
            guard at + width <= p + size, let word = bytes.readLE(at, width) else { return }
            let mask: UInt64 = (1 << UInt64(bits)) - 1
            structure.fields.append(Structure.Field(name: "\(type).\(name)", values: values.map { $0 & mask },
                                                    current: (word >> UInt64(shift)) & mask) { b, v, _ in
                guard let now = b.readLE(at, width) else { return }
                b.writeLE(at, width, (now & ~(mask << UInt64(shift))) | ((v & mask) << UInt64(shift)))
            })
        }
        // Canvas and frame sizes are stored minus one: 9998 is a 9999-pixel side.
        let minusOne: [UInt64] = [0, 1, 9998, 10_000, 16_383, 0x7F_FFFF, 0xFF_FFFF]
        switch type {
        case "VP8X":
            plain("flags", p, 1, [0, 0x02, 0x10, 0x20, 0x3E, 0xFF])
            plain("canvasWidth-1", p + 4, 3, minusOne)
            plain("canvasHeight-1", p + 7, 3, minusOne)
        case "ANIM":
            plain("loopCount", p + 4, 2, [0, 1, 0xFFFF])
        case "ANMF":
            plain("x/2", p, 3, [0, 1, 5000, 0xFF_FFFF])
            plain("y/2", p + 3, 3, [0, 1, 5000, 0xFF_FFFF])
            plain("width-1", p + 6, 3, minusOne)
            plain("height-1", p + 9, 3, minusOne)
            plain("duration", p + 12, 3, [0, 0xFF_FFFF])
            plain("flags", p + 15, 1, [0, 1, 2, 3, 0xFF])
        case "VP8L":
            plain("signature", p, 1, [0, 0x2E, 0x30])
            bits("width-1", p + 1, 4, shift: 0, bits: 14, [0, 1, 9998, 0x3FFF])
            bits("height-1", p + 1, 4, shift: 14, bits: 14, [0, 1, 9998, 0x3FFF])
            bits("version", p + 1, 4, shift: 29, bits: 3, [1, 7])
        case "VP8 ":
            bits("frameTag.keyframe", p, 3, shift: 0, bits: 1, [1])
            bits("frameTag.partitionSize", p, 3, shift: 5, bits: 19, [0, 1, 0x7FFFF])
            bits("width", p + 6, 2, shift: 0, bits: 14, [0, 1, 9999, 0x3FFF])
            bits("widthScale", p + 6, 2, shift: 14, bits: 2, [1, 3])
            bits("height", p + 8, 2, shift: 0, bits: 14, [0, 1, 9999, 0x3FFF])
        case "ALPH":
            plain("header", p, 1, [0, 1, 2, 3, 0x0C, 0x30, 0xFF])
        default:
            break
        }
    }
}
