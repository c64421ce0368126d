import Foundation
import PipelineCore

/// PNG: the signature, then chunks of `length(4, BE) type(4) data crc(4)`.
enum PNGStructure {
    static func parse(_ bytes: [UInt8]) -> Structure {
        var structure = Structure()
        structure.fixChecksum = { bytes, unit in
            let crcAt = unit.range.upperBound - 4
            guard crcAt >= unit.range.lowerBound + 4, crcAt + 4 <= bytes.count else { return }
            bytes.writeBE(crcAt, 4, UInt64(CRC32.checksum(bytes[unit.range.lowerBound + 4..<crcAt])))
        }
        var offset = 8
        while let length = bytes.readBE(offset, 4), offset + 12 + Int(length) <= bytes.count {
            let type = bytes.fourCC(at: offset + 4)
            let unit = Structure.Unit(range: offset..<offset + 12 + Int(length), type: type, payloadStart: offset + 8,
                                      sizeField: (offset, 4, true), isBulk: type == "IDAT")
            structure.units.append(unit)
            let fix = structure.fixChecksum
            func field(_ name: String, _ at: Int, _ width: Int, _ values: [UInt64]) {
                guard let current = bytes.readBE(at, width) else { return }
                structure.fields.append(Structure.Field(name: "\(type).\(name)", values: values, current: current) { bytes, value, fixing in
                    bytes.writeBE(at, width, value)
                    if fixing { fix?(&bytes, unit) }
                })
            }
            let p = offset + 8
            switch type {
            case "IHDR":
                field("width", p, 4, dimensionValues(max: 0xFFFF_FFFF))
                field("height", p + 4, 4, dimensionValues(max: 0xFFFF_FFFF))
                field("bitDepth", p + 8, 1, [0, 1, 2, 3, 4, 8, 16, 32, 255])
                field("colorType", p + 9, 1, [0, 1, 2, 3, 4, 6, 7, 255])
                field("compression", p + 10, 1, [1, 255])
                field("filter", p + 11, 1, [1, 255])
                field("interlace", p + 12, 1, [0, 1, 2, 255])
            case "acTL":
                field("frames", p, 4, extremeValues(width: 4))
            case "fcTL":
                field("width", p + 4, 4, dimensionValues(max: 0xFFFF_FFFF))
                field("height", p + 8, 4, dimensionValues(max: 0xFFFF_FFFF))
            case "pHYs", "sBIT", "gAMA", "cHRM", "bKGD", "tRNS", "PLTE", "iCCP", "zTXt", "iTXt", "tEXt", "eXIf", "sPLT":
                field("byte0", p, 1, extremeValues(width: 1))
            default:
                break
            }
            offset += 12 + Int(length)
        }
        return structure
    }
}
