import CodecSVG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The nine hostile and broken files of `../shared/corpus/svg/invalid/`, at the natural size and
/// fitted in 64×64: each outcome one its README accepts (`references.json` `accept`), a typed
/// error or, where the file may render, exactly the reference picture; each in bounded time.
@Suite(.enabled(if: Corpus.has("svg"), Corpus.missing("svg")), .tags(.cpuBound))
struct SVGHostileTests {
    /// A generous bound for one hostile file on a loaded 2-core machine: rsvg-convert takes
    /// 0.02 s for each, and `-u` (no libxml2 limits) runs the billion laughs past 10 s.
    static let timeBound = Duration.seconds(5)

    /// The size `rsvg-convert -w 64 -h 64 -a` gives `natural`: fitted inside, sides rounded up.
    static func fitted64(_ natural: PixelSize) -> PixelSize {
        let scale = min(64 / Double(natural.width), 64 / Double(natural.height))
        return PixelSize(width: Int((Double(natural.width) * scale).rounded(.up)),
                         height: Int((Double(natural.height) * scale).rounded(.up)))
    }

    @Test(arguments: ["natural", "64"])
    func everyHostileFileHasAnAcceptedOutcome(size: String) throws {
        let references = try SVGReferences.load()
        #expect(references.invalid.count == 9)
        for (name, file) in references.invalid.sorted(by: { $0.key < $1.key }) {
            let data = try Corpus.data("svg", name)
            let clock = ContinuousClock(), start = clock.now
            let outcome: String
            var bitmap: Bitmap?
            do {
                let reference = file.reference?.dims[size].map { PixelSize(width: $0[0], height: $0[1]) }
                let target = size == "natural" ? nil : try reference ?? Self.fitted64(SVGDecoder().readInfo(data).size)
                bitmap = try SVGDecoder().decode(data, options: DecodeOptions(targetSize: target, pixelFormat: .rgba8Straight)).bitmap
                outcome = "render"
            } catch let error as ImagePipelineError {
                outcome = "error"
                #expect(!error.description.isEmpty)
            }
            #expect(clock.now - start < Self.timeBound, "\(name) at \(size) took \(clock.now - start)")
            #expect(file.accept.accepts(outcome, size: size), "\(name) at \(size): \(outcome), expected \(file.expected)")
            if let bitmap, let md5 = file.reference?.md5[size] {
                #expect(MD5.hex(referenceBytes(bitmap)) == md5, "\(name) at \(size): not the reference picture")
            }
        }
    }

    /// The 10⁸ × 10⁸ canvas: its natural size is over the pixel limit before anything is drawn;
    /// fitted in 64×64 it is an ordinary picture.
    @Test func theHugeCanvasFailsAtItsNaturalSizeOnly() throws {
        let data = try Corpus.data("svg", "invalid/huge-canvas.svg")
        #expect(try SVGDecoder().readInfo(data).size == PixelSize(width: 100_000_000, height: 100_000_000))
        #expect {
            _ = try SVGDecoder().decode(data, options: DecodeOptions())
        } throws: { error in
            guard case ImagePipelineError.tooManyPixels = error else { return false }
            return true
        }
        #expect(try SVGDecoder().decode(data, options: DecodeOptions(targetSize: PixelSize(width: 64, height: 64))).bitmap.size
                == PixelSize(width: 64, height: 64))
    }

    @Test(arguments: ["invalid/billion-laughs.svg", "invalid/truncated.svg", "invalid/not-svg-root.svg"])
    func theseAreTypedErrors(_ name: String) throws {
        let data = try Corpus.data("svg", name)
        #expect(throws: ImagePipelineError.self) { _ = try SVGDecoder().decode(data, options: DecodeOptions()) }
    }

    /// Cut at every 64th byte and with seeded byte flips, a real document (a gzip one too) gives
    /// a picture or a typed error, never a crash.
    @Test(arguments: ["tango-emblem-favorite.svg", "hand-nested-svg.svgz", "inkscape-feImage-icon.svg"])
    func damagedCopiesAreTypedErrorsOrPictures(_ name: String) throws {
        let data = try Corpus.data("svg", name)
        var generator = SeededGenerator(seed: 24)
        var cases: [Data] = stride(from: 0, to: data.count, by: 64).map { data.prefix($0) }
        for _ in 0..<100 {
            var copy = [UInt8](data)
            for _ in 0..<4 { copy[Int.random(in: 0..<copy.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator) }
            cases.append(Data(copy))
        }
        let options = DecodeOptions(targetSize: PixelSize(width: 64, height: 64))
        for damaged in cases where SVGDecoder().canDecode(damaged) {
            do {
                _ = try SVGDecoder().decode(damaged, options: options)
            } catch is ImagePipelineError {
                continue
            }
        }
    }

    /// librsvg's own message comes through: what libxml2 stopped on.
    @Test func theBillionLaughsAreStoppedByLibxml2sEntityLimit() throws {
        let data = try Corpus.data("svg", "invalid/billion-laughs.svg")
        do {
            _ = try SVGDecoder().readInfo(data)
            Issue.record("the billion laughs parsed")
        } catch let error as ImagePipelineError {
            guard case .corruptData(.svg?, let message) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("entity"), "\(message)")
        }
    }
}
