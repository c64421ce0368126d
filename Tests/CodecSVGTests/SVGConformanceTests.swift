import CodecSVG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// Every valid SVG of `../shared/corpus/svg/` against rsvg-convert 2.54.7's references, at the
/// natural size and fitted in 64×64, in straight and premultiplied output. Same library, same
/// drawing calls (the canvas, scale and viewport `rsvg-convert -w W -h H -a` uses): the bytes
/// must be the reference's exactly, by its md5 (straight RGBA, colour zeroed where alpha is 0).
/// What this checks is the plumbing: size, alpha, channel order, orientation, colour.
@Suite(.enabled(if: Corpus.has("svg"), Corpus.missing("svg")), .tags(.cpuBound))
struct SVGConformanceTests {
    static let folder = Corpus.folder("svg")

    static func render(_ name: String, folder: URL = folder, size: PixelSize?, pixelFormat: PixelFormat) throws -> Bitmap {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        return try SVGDecoder().decode(data, options: DecodeOptions(targetSize: size, pixelFormat: pixelFormat)).bitmap
    }

    @Test func theNaturalSizeIsTheReferencesAndNoPixelIsDecodedForIt() throws {
        let references = try SVGReferences.load()
        #expect(references.valid.count == 37)
        for (name, file) in references.valid.sorted(by: { $0.key < $1.key }) {
            let info = try SVGDecoder().readInfo(Corpus.data("svg", name))
            #expect(info.size == PixelSize(width: file.natural[0], height: file.natural[1]), "\(name)")
            #expect(info.format == .svg && info.isVector && info.hasAlpha, "\(name)")
        }
    }

    @Test(arguments: ["natural", "64"], [PixelFormat.rgba8Straight, .rgba8Premultiplied])
    func everyValidFileIsTheReferenceExactly(size: String, pixelFormat: PixelFormat) throws {
        let references = try SVGReferences.load()
        var mismatches: [String] = []
        for (name, file) in references.valid.sorted(by: { $0.key < $1.key }) {
            let dims = try #require(file.dims[size])
            let target = PixelSize(width: dims[0], height: dims[1])
            let bitmap = try Self.render(name, size: size == "natural" ? nil : target, pixelFormat: pixelFormat)
            #expect(bitmap.size == target && bitmap.pixelFormat == pixelFormat, "\(name) at \(size)")
            guard bitmap.size == target else { continue }
            let bytes = referenceBytes(bitmap)
            if MD5.hex(bytes) != file.md5[size] {
                let pam = try PAM(Self.folder.appendingPathComponent(try #require(file.sizes[size])))
                let (largest, differing) = difference(bytes, referenceBytes(try #require(
                    Bitmap(width: pam.size.width, height: pam.size.height, bytesPerRow: pam.size.width * 4,
                           pixelFormat: .rgba8Straight, bytes: pam.rgba))))
                mismatches.append("\(name): \(differing) bytes differ, by at most \(largest)")
            }
        }
        #expect(mismatches.isEmpty, "\(size), \(pixelFormat): \(mismatches.joined(separator: "; "))")
    }

    /// `.svgz` is the same document: identical pixels, recognised through its inflated root.
    @Test func theGzipCopyIsThePlainFile() throws {
        let plain = try Corpus.data("svg", "hand-nested-svg.svg"), packed = try Corpus.data("svg", "hand-nested-svg.svgz")
        #expect(packed.starts(with: [0x1F, 0x8B]))
        #expect(SVGDecoder().canDecode(packed))
        for size in [nil, PixelSize(width: 64, height: 40), PixelSize(width: 512, height: 320)] {
            let options = DecodeOptions(targetSize: size)
            #expect(try SVGDecoder().decode(plain, options: options).bitmap == SVGDecoder().decode(packed, options: options).bitmap)
        }
    }
}
