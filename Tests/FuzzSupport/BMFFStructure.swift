/// HEIF and AVIF: ISO-BMFF boxes, `size(4, BE) type(4)` (`size` 1: a 64-bit size follows; 0: to
/// the end), nested in the container boxes HEIF uses (`meta`, `iprp`, `ipco`, `iinf`, `iref`…).
enum BMFFStructure {
    /// Boxes whose payload is a list of boxes, and how many bytes precede the list.
    private static func childrenOffset(_ type: String, _ bytes: [UInt8], payload p: Int) -> Int? {
        switch type {
        case "moov", "trak", "mdia", "minf", "stbl", "dinf", "edts", "udta", "iprp", "ipco", "grpl", "mvex", "moof", "traf", "sinf", "schi":
            return 0
        case "meta", "iref":
            return 4
        case "dref":
            return 8
        case "iinf":
            return (bytes.readBE(p, 1) ?? 0) == 0 ? 6 : 8
        default:
            return nil
        }
    }

    static func parse(_ bytes: [UInt8]) -> Structure {
        var structure = Structure()
        boxes(bytes, from: 0, to: bytes.count, ancestors: [], depth: 0, into: &structure)
        return structure
    }

    private static func boxes(_ bytes: [UInt8], from start: Int, to end: Int, ancestors: [Int], depth: Int,
                              into structure: inout Structure) {
        var offset = start
        while depth < 8, offset + 8 <= end, let size32 = bytes.readBE(offset, 4) {
            let type = bytes.fourCC(at: offset + 4)
            var header = 8
            var length = Int(size32)
            var sizeField: (Int, Int, Bool)? = (offset, 4, true)
            if size32 == 1 {
                guard let large = bytes.readBE(offset + 8, 8), large <= UInt64(end - offset) else { return }
                header = 16
                length = Int(large)
                sizeField = (offset + 8, 8, true)
            } else if size32 == 0 {
                length = end - offset
                sizeField = nil
            }
            guard length >= header, offset + length <= end else { return }
            let index = structure.units.count
            structure.units.append(Structure.Unit(range: offset..<offset + length, type: type, payloadStart: offset + header,
                                                  sizeField: sizeField, ancestors: ancestors, isBulk: type == "mdat"))
            let p = offset + header
            let payloadEnd = offset + length
            fields(bytes, type: type, payload: p, end: payloadEnd, into: &structure)
            if let skip = childrenOffset(type, bytes, payload: p), p + skip <= payloadEnd {
                let childDepth = depth + 1
                if type == "iref" {
                    // Reference boxes: box-shaped leaves (from-ID, count, to-IDs).
                    leaves(bytes, from: p + skip, to: payloadEnd, ancestors: [index] + ancestors, into: &structure)
                } else {
                    boxes(bytes, from: p + skip, to: payloadEnd, ancestors: [index] + ancestors, depth: childDepth, into: &structure)
                }
            }
            offset += length
        }
    }

    private static func leaves(_ bytes: [UInt8], from start: Int, to end: Int, ancestors: [Int], into structure: inout Structure) {
        var offset = start
        while let size = bytes.readBE(offset, 4), size >= 8, offset + Int(size) <= end {
            let type = bytes.fourCC(at: offset + 4)
            structure.units.append(Structure.Unit(range: offset..<offset + Int(size), type: type, payloadStart: offset + 8,
                                                  sizeField: (offset, 4, true), ancestors: ancestors))
            field(bytes, "\(type).count", offset + 10, 2, extremeValues(width: 2), end: offset + Int(size), into: &structure)
            offset += Int(size)
        }
    }

    private static func field(_ bytes: [UInt8], _ name: String, _ at: Int, _ width: Int, _ values: [UInt64], end: Int,
                              into structure: inout Structure) {
        guard width > 0, at + width <= end, let current = bytes.readBE(at, width) else { return }
        structure.fields.append(Structure.Field(name: name, values: values, current: current) { b, v, _ in b.writeBE(at, width, v) })
    }

    private static func fourCC(_ text: String) -> UInt64 { text.utf8.reduce(0) { $0 << 8 | UInt64($1) } }

    private static func fields(_ bytes: [UInt8], type: String, payload p: Int, end: Int, into structure: inout Structure) {
        func add(_ name: String, _ at: Int, _ width: Int, _ values: [UInt64]) {
            field(bytes, "\(type).\(name)", at, width, values, end: end, into: &structure)
        }
        let version = bytes.readBE(p, 1) ?? 0
        switch type {
        case "ftyp":
            add("majorBrand", p, 4, ["heic", "heix", "avif", "avis", "mif1", "msf1", "jpeg", "isom"].map(fourCC))
        case "ispe":
            add("width", p + 4, 4, dimensionValues(max: 0xFFFF_FFFF))
            add("height", p + 8, 4, dimensionValues(max: 0xFFFF_FFFF))
        case "pitm":
            add("itemID", p + 4, version == 0 ? 2 : 4, [0, 1, 2, 0xFFFF])
        case "ipma":
            add("entryCount", p + 4, 4, extremeValues(width: 4))
        case "iinf":
            add("entryCount", p + 4, version == 0 ? 2 : 4, extremeValues(width: version == 0 ? 2 : 4))
        case "infe" where version >= 2:
            let idWidth = version == 2 ? 2 : 4
            add("itemID", p + 4, idWidth, [0, 1, 2, 0xFFFF])
            add("itemType", p + 6 + idWidth, 4, ["hvc1", "av01", "grid", "iden", "iovl", "Exif", "mime", "jpeg"].map(fourCC))
        case "pixi":
            add("channels", p + 4, 1, [0, 1, 3, 4, 0xFF])
            add("bitsPerChannel", p + 5, 1, [0, 1, 8, 10, 12, 16, 0xFF])
        case "clap":
            for (i, name) in ["widthN", "widthD", "heightN", "heightD", "horizOffN", "horizOffD", "vertOffN", "vertOffD"].enumerated() {
                add(name, p + 4 * i, 4, [0, 1, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF])
            }
        case "irot", "imir":
            add("value", p, 1, [0, 1, 2, 3, 0xFF])
        case "hvcC", "av1C":
            add("byte0", p, 1, extremeValues(width: 1))
        case "iloc":
            iloc(bytes, payload: p, end: end, into: &structure)
        default:
            break
        }
    }

    /// The item locations: offset and length fields of the first items' extents.
    private static func iloc(_ bytes: [UInt8], payload p: Int, end: Int, into structure: inout Structure) {
        guard let version = bytes.readBE(p, 1), let sizes = bytes.readBE(p + 4, 1), let sizes2 = bytes.readBE(p + 5, 1) else { return }
        let offsetSize = Int(sizes >> 4), lengthSize = Int(sizes & 15), baseSize = Int(sizes2 >> 4)
        let indexSize = version == 1 || version == 2 ? Int(sizes2 & 15) : 0
        guard [0, 4, 8].contains(offsetSize), [0, 4, 8].contains(lengthSize), [0, 4, 8].contains(baseSize) else { return }
        var q = p + 6
        let countWidth = version < 2 ? 2 : 4
        func add(_ name: String, _ width: Int, _ values: [UInt64]) {
            field(bytes, "iloc.\(name)", q, width, values, end: end, into: &structure)
        }
        add("itemCount", countWidth, extremeValues(width: countWidth))
        guard let items = bytes.readBE(q, countWidth) else { return }
        q += countWidth
        for item in 0..<min(Int(items), 16) {
            q += countWidth  // item ID
            if version == 1 || version == 2 { q += 2 }
            q += 2  // data reference index
            add("item\(item).baseOffset", baseSize, extremeValues(width: baseSize))
            q += baseSize
            add("item\(item).extentCount", 2, [0, 2, 0xFFFF])
            guard let extents = bytes.readBE(q, 2), q <= end else { return }
            q += 2
            for extent in 0..<min(Int(extents), 8) {
                q += indexSize
                add("item\(item).extent\(extent).offset", offsetSize, extremeValues(width: offsetSize))
                q += offsetSize
                add("item\(item).extent\(extent).length", lengthSize, extremeValues(width: lengthSize))
                q += lengthSize
                guard q <= end else { return }
            }
        }
    }
}
