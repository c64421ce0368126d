import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The `../shared/corpus/jxl/` references: djxl 0.7's output as straight RGBA PAM.
struct JXLReference {
    static let folder = "jxl"

    let width: Int
    let height: Int
    let maxValue: Int
    /// Straight RGBA samples, one per channel (16-bit ones kept as read).
    let samples: [Int]

    /// Reads `ref/NAME`.
    init(_ name: String) throws {
        let data = try Corpus.data(Self.folder, "ref/" + name)
        let end = try #require(data.firstRange(of: Data("ENDHDR\n".utf8)), "\(name) is not a PAM")
        let header = String(decoding: data[..<end.lowerBound], as: UTF8.self)
        var fields: [String: String] = [:]
        for line in header.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        width = try #require(fields["WIDTH"].flatMap { Int($0) })
        height = try #require(fields["HEIGHT"].flatMap { Int($0) })
        maxValue = try #require(fields["MAXVAL"].flatMap { Int($0) })
        try #require(fields["DEPTH"] == "4" && fields["TUPLTYPE"] == "RGB_ALPHA", "\(name): \(header)")
        let body = Array(data[end.upperBound...])
        let count = width * height * 4
        if maxValue > 255 {
            try #require(body.count >= count * 2)
            samples = (0..<count).map { Int(body[2 * $0]) << 8 | Int(body[2 * $0 + 1]) }
        } else {
            try #require(body.count >= count)
            samples = body[0..<count].map { Int($0) }
        }
    }

    /// The samples at 8 bits: 16-bit ones rounded (`v / 257`).
    var samples8: [Int] {
        maxValue == 255 ? samples : samples.map { ($0 * 255 + maxValue / 2) / maxValue }
    }

    /// The largest difference between `bitmap` (straight) and these samples at 8 bits over visible
    /// pixels (colour under alpha 0 is not compared), and whether alpha differs anywhere.
    func maxDifference(_ bitmap: Bitmap) -> (color: Int, alpha: Int) {
        guard bitmap.width == width, bitmap.height == height else { return (Int.max, Int.max) }
        let ours = bitmap.unpremultipliedBytes(), theirs = samples8
        var color = 0, alpha = 0
        for pixel in 0..<(width * height) {
            let a = abs(Int(ours[pixel * 4 + 3]) - theirs[pixel * 4 + 3])
            alpha = max(alpha, a)
            guard theirs[pixel * 4 + 3] != 0 else { continue }
            for channel in 0..<3 { color = max(color, abs(Int(ours[pixel * 4 + channel]) - theirs[pixel * 4 + channel])) }
        }
        return (color, alpha)
    }

    /// These samples (8-bit) premultiplied as `Bitmap.premultiply` does.
    var premultipliedBitmap: Bitmap? {
        var bytes = samples8.map { UInt8($0) }
        bytes.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, pixelFormat: .rgba8Premultiplied, bytes: bytes)
    }
}
