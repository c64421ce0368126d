import CodecJPEG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// libjpeg-turbo's own test images and the EXIF orientation set.
@Suite(.enabled(if: Corpus.has("jpeg"), Corpus.missing("jpeg")), .tags(.cpuBound))
struct JPEGConformanceTests {
    @Test func testorigDecodesCloseToTheReferencePPM() throws {
        let decoded = try JPEGDecoder().decode(Corpus.data("jpeg", "testorig.jpg"), options: DecodeOptions())
        let reference = try #require(Fixtures.ppm(Corpus.data("jpeg", "testorig.ppm")))
        #expect(decoded.bitmap.size == PixelSize(width: 227, height: 149))
        #expect(Fixtures.meanDifference(decoded.bitmap, reference) < 0.5)
        #expect(decoded.warnings.isEmpty)
    }

    @Test func arithmeticCodedFileDecodesToTheSamePicture() throws {
        let data = try Corpus.data("jpeg", "testimgari.jpg")
        let decoded = try JPEGDecoder().decode(data, options: DecodeOptions())
        let reference = try #require(Fixtures.ppm(Corpus.data("jpeg", "testorig.ppm")))
        #expect(Fixtures.meanDifference(decoded.bitmap, reference) < 0.5)
    }

    @Test func twelveBitFileFailsAsUnsupported() throws {
        let data = try Corpus.data("jpeg", "monkey12.jpg")
        let error = #expect(throws: ImagePipelineError.self) {
            _ = try JPEGDecoder().decode(data, options: DecodeOptions())
        }
        guard case .unsupported(format: .jpeg, let message)? = error else {
            Issue.record("expected .unsupported, got \(String(describing: error))")
            return
        }
        #expect(message.contains("precision 12"), "libjpeg's message is kept: \(message)")
    }

    @Test func headerInfoReadsSizeComponentsAndMode() throws {
        let info = try JPEGDecoder().readInfo(Corpus.data("jpeg", "testorig.jpg"))
        #expect(info.format == .jpeg)
        #expect(info.size == PixelSize(width: 227, height: 149))
        #expect(info.componentCount == 3)
        #expect(info.bitDepth == 8)
        #expect(!info.isProgressive)
        #expect(info.orientation == .up)
    }
}

/// The same picture stored with each EXIF orientation must come out upright and alike.
@Suite(.enabled(if: Corpus.has("exif-orientation"), Corpus.missing("exif-orientation")), .tags(.cpuBound))
struct EXIFOrientationTests {
    static let names = ["Landscape", "Portrait"].flatMap { kind in (0...8).map { "\(kind)_\($0).jpg" } }
    static let box = PixelSize(width: 64, height: 64)

    @Test(arguments: names)
    func decodesUprightLikeTheOrientationOneFile(_ name: String) throws {
        let kind = name.hasPrefix("Landscape") ? "Landscape" : "Portrait"
        let reference = try Fixtures.thumbnail(JPEGDecoder(), Corpus.data("exif-orientation", "\(kind)_1.jpg"), box: Self.box)
        let data = try Corpus.data("exif-orientation", name)
        let number = Int(name.dropFirst(kind.count + 1).prefix(1)) ?? 0
        let info = try JPEGDecoder().readInfo(data)
        #expect(info.orientation == (ImageOrientation(rawValue: number) ?? .up), "\(name): header orientation")
        let upright = try Fixtures.thumbnail(JPEGDecoder(), data, box: Self.box)
        #expect(upright.size == reference.size, "\(name): upright size")
        let difference = Fixtures.meanDifference(upright, reference)
        #expect(difference < 6, "\(name): mean difference \(difference) from \(kind)_1")
    }

    /// The control: with orientation off, a turned file must differ (so the check above bites).
    @Test(arguments: ["Landscape_3.jpg", "Landscape_6.jpg", "Portrait_2.jpg", "Portrait_8.jpg"])
    func turningOrientationOffKeepsTheStoredPixels(_ name: String) throws {
        let kind = name.hasPrefix("Landscape") ? "Landscape" : "Portrait"
        let reference = try Fixtures.thumbnail(JPEGDecoder(), Corpus.data("exif-orientation", "\(kind)_1.jpg"), box: Self.box)
        let data = try Corpus.data("exif-orientation", name)
        let stored = try Fixtures.thumbnail(JPEGDecoder(), data, box: Self.box, appliesOrientation: false)
        let info = try JPEGDecoder().readInfo(data)
        #expect(stored.size == ResizePlan(source: info.size, target: .pixels(Self.box), contentMode: .fit).outputSize)
        #expect(Fixtures.meanDifference(stored, reference) > 20)
    }
}
