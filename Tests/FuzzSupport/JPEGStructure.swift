/// JPEG: `SOI`, then marker segments `FF xx length(2, BE) payload`; a scan (`SOS`) runs on
/// through its entropy-coded data (and restart markers) to the next marker.
enum JPEGStructure {
    static func name(_ marker: UInt8) -> String {
        switch marker {
        case 0xC4: return "DHT"
        case 0xCC: return "DAC"
        case 0xC0...0xCF: return "SOF\(marker - 0xC0)"
        case 0xD0...0xD7: return "RST\(marker - 0xD0)"
        case 0xD8: return "SOI"
        case 0xD9: return "EOI"
        case 0xDA: return "SOS"
        case 0xDB: return "DQT"
        case 0xDC: return "DNL"
        case 0xDD: return "DRI"
        case 0xE0...0xEF: return "APP\(marker - 0xE0)"
        case 0xFE: return "COM"
        default: return "M" + String(marker, radix: 16, uppercase: true)
        }
    }

    static func parse(_ bytes: [UInt8]) -> Structure {
        var structure = Structure()
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return structure }
        structure.units.append(Structure.Unit(range: 0..<2, type: "SOI", payloadStart: 2))
        var offset = 2
        while offset + 1 < bytes.count, bytes[offset] == 0xFF {
            var m = offset + 1
            while m < bytes.count, bytes[m] == 0xFF { m += 1 }
            guard m < bytes.count else { break }
            let marker = bytes[m]
            let header = m + 1
            if marker == 0xD9 {
                structure.units.append(Structure.Unit(range: offset..<header, type: "EOI", payloadStart: header))
                break
            }
            if (0xD0...0xD7).contains(marker) || marker == 0x01 {
                structure.units.append(Structure.Unit(range: offset..<header, type: name(marker), payloadStart: header))
                offset = header
                continue
            }
            guard let length = bytes.readBE(header, 2), length >= 2, header + Int(length) <= bytes.count else { break }
            var end = header + Int(length)
            if marker == 0xDA {
                while end + 1 < bytes.count {
                    let next = bytes[end + 1]
                    if bytes[end] == 0xFF, next != 0, next != 0xFF, !(0xD0...0xD7).contains(next) { break }
                    end += 1
                }
                if end + 1 >= bytes.count { end = bytes.count }
            }
            structure.units.append(Structure.Unit(range: offset..<end, type: name(marker), payloadStart: header + 2,
                                                  sizeField: (header, 2, true), isBulk: marker == 0xDA))
            fields(bytes, marker: marker, payload: header + 2, end: header + Int(length), into: &structure)
            offset = end
        }
        return structure
    }

    private static func fields(_ bytes: [UInt8], marker: UInt8, payload p: Int, end: Int, into structure: inout Structure) {
        let type = name(marker)
        func add(_ field: String, _ at: Int, _ width: Int, _ values: [UInt64]) {
            guard at + width <= end, let current = bytes.readBE(at, width) else { return }
            structure.fields.append(Structure.Field(name: "\(type).\(field)", values: values, current: current) { b, v, _ in
                b.writeBE(at, width, v)
            })
        }
        switch marker {
        case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
            add("precision", p, 1, [0, 1, 8, 12, 16, 0xFF])
            add("height", p + 1, 2, dimensionValues(max: 0xFFFF))
            add("width", p + 3, 2, dimensionValues(max: 0xFFFF))
            add("components", p + 5, 1, [0, 1, 2, 3, 4, 5, 0xFF])
            let count = Int(bytes.readBE(p + 5, 1) ?? 0)
            for c in 0..<min(count, 4) {
                add("component\(c).id", p + 6 + 3 * c, 1, [0, 1, 2, 0xFF])
                add("component\(c).sampling", p + 7 + 3 * c, 1, [0x00, 0x11, 0x22, 0x44, 0x41, 0x14, 0x12, 0xFF])
                add("component\(c).table", p + 8 + 3 * c, 1, [0, 3, 4, 0xFF])
            }
        case 0xC4:
            add("classAndID", p, 1, [0x00, 0x01, 0x10, 0x11, 0x04, 0x14, 0xFF])
            add("count1", p + 1, 1, [0, 2, 0xFF])
            add("count16", p + 16, 1, [0, 0xFF])
        case 0xDB:
            add("precisionAndID", p, 1, [0x00, 0x03, 0x04, 0x10, 0xFF])
        case 0xDA:
            add("components", p, 1, [0, 1, 2, 3, 4, 0xFF])
            let count = Int(bytes.readBE(p, 1) ?? 0)
            for c in 0..<min(count, 4) {
                add("component\(c).id", p + 1 + 2 * c, 1, [0, 1, 2, 0xFF])
                add("component\(c).tables", p + 2 + 2 * c, 1, [0x00, 0x11, 0x44, 0xFF])
            }
            add("Ss", p + 1 + 2 * count, 1, [0, 1, 63, 64, 0xFF])
            add("Se", p + 2 + 2 * count, 1, [0, 1, 63, 64, 0xFF])
            add("AhAl", p + 3 + 2 * count, 1, [0x00, 0x01, 0x10, 0x0D, 0xFF])
        case 0xDD:
            add("interval", p, 2, [0, 1, 0xFFFF])
        case 0xDC:
            add("lines", p, 2, dimensionValues(max: 0xFFFF))
        default:
            break
        }
    }
}
