import CodecSVG
import Foundation
import PipelineCore
import PipelineTestSupport

/// `../shared/corpus/svg/references.json`: for each valid file its natural size and the
/// reference renderings (rsvg-convert 2.54.7) at the natural size and fitted in 64×64; for
/// each hostile file its expected outcome and, where it may render, its references.
struct SVGReferences: Decodable {
    struct Renderings: Decodable {
        var natural: [Int]?
        var dims: [String: [Int]]
        var md5: [String: String]
        var sizes: [String: String]
    }
    struct Valid: Decodable {
        var natural: [Int]
        var dims: [String: [Int]]
        var md5: [String: String]
        var sizes: [String: String]
    }
    /// `accept` is a list, or per size (`natural`, `64`) a list.
    enum Accept: Decodable {
        case always([String])
        case bySize([String: [String]])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let list = try? container.decode([String].self) {
                self = .always(list)
            } else {
                self = .bySize(try container.decode([String: [String]].self))
            }
        }

        func accepts(_ outcome: String, size: String) -> Bool {
            switch self {
            case .always(let list): return list.contains(outcome)
            case .bySize(let map): return map[size]?.contains(outcome) == true
            }
        }
    }
    struct Invalid: Decodable {
        var expected: String
        var accept: Accept
        var reference: Renderings?
    }
    var valid: [String: Valid]
    var invalid: [String: Invalid]

    static func load() throws -> SVGReferences {
        try JSONDecoder().decode(SVGReferences.self, from: Corpus.data("svg", "references.json"))
    }
}

/// A reference PAM (`P7`, `TUPLTYPE RGB_ALPHA`, maxval 255): its size and straight RGBA bytes.
struct PAM {
    var size: PixelSize
    var rgba: [UInt8]

    init(_ url: URL) throws {
        let data = [UInt8](try Data(contentsOf: url))
        guard let end = data.firstRange(of: Array("ENDHDR\n".utf8)) else { throw CocoaError(.fileReadCorruptFile) }
        let header = String(decoding: data[..<end.lowerBound], as: UTF8.self)
        var fields: [String: String] = [:]
        for line in header.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        guard header.hasPrefix("P7"), fields["TUPLTYPE"] == "RGB_ALPHA", fields["MAXVAL"] == "255",
              let width = fields["WIDTH"].flatMap({ Int($0) }), let height = fields["HEIGHT"].flatMap({ Int($0) }),
              data.count - end.upperBound == width * height * 4
        else { throw CocoaError(.fileReadCorruptFile) }
        size = PixelSize(width: width, height: height)
        rgba = Array(data[end.upperBound...])
    }
}


/// The largest difference of any channel between `a` and `b` (equal lengths), and how many
/// bytes differ at all.
func difference(_ a: [UInt8], _ b: [UInt8]) -> (largest: Int, differing: Int) {
    var largest = 0, differing = 0
    for (x, y) in zip(a, b) where x != y {
        largest = max(largest, abs(Int(x) - Int(y)))
        differing += 1
    }
    return (largest, differing)
}
