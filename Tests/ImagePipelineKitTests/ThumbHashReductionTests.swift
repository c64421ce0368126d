import Foundation
import ImagePipelineKit
import LoaderFile
@testable import PipelineCore
import PipelineTestSupport
import Testing

/// The small picture ``ThumbHash`` (and ``BlurHash``) read from a large one, against what the
/// reference reads (issue 41): `thumbhash-python` 1.0.1 hashes the picture after Pillow's
/// `thumbnail((100, 100))`, run here in `scripts/python-venv thumbhash` (skipped with the reason
/// when PyPI cannot be reached).
///
/// - On the same straight RGBA (written as PNG for Pillow to read), our reduction is Pillow's
///   to the byte.
/// - On the samples, each decoded by us and by Pillow, our hash decodes within one luminance
///   step (3.1 levels of 255, mean, as ``ThumbHashConformanceTests/oneStep``) of the
///   reference's own; `mandelbrot.jpg`, the fine-detail one, was 6.3 with a box average.
/// - ``BlurHash`` reads the same reduction: against PyPI's `blurhash` 1.1.5 fed as its README
///   does (Pillow's `thumbnail((100, 100))` of the file as opened, RGB), no sample's hash
///   decodes farther from the reference's than with the box average.
@Suite(.timeLimit(.minutes(3)), .tags(.cpuBound))
struct ThumbHashReductionTests {
    static let python: String? = {
        switch PythonVenv.python("thumbhash", ["thumbhash-python==1.0.1", "pillow>=8,<11", "blurhash==1.1.5"]) {
        case .success(let path): return path
        case .failure(let error):
            print("the ThumbHash reduction tests are skipped: \(error)")
            return nil
        }
    }()

    static let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Samples")
        .standardizedFileURL

    /// Fine detail and soft alpha, `width` × `height`, straight.
    static func pattern(_ width: Int, _ height: Int) -> Bitmap {
        var bytes = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let p = (y * width + x) * 4
                bytes[p] = UInt8((x * 37 + y * 11) & 255)
                bytes[p + 1] = (x / 3 + y / 2) % 2 == 0 ? 240 : 20
                bytes[p + 2] = UInt8((x * x + y * 3) & 255)
                bytes[p + 3] = UInt8(min(255, 40 + (x + y) * 215 / max(1, width + height - 2)))
            }
        }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, pixelFormat: .rgba8Straight, bytes: bytes)
            ?? Bitmap(zeroed: PixelSize(width: 1, height: 1))
    }

    @Test func theOutputSizeIsPillowsThumbnailSize() {
        // Pillow 10: (1280, 960) → (100, 75); (101, 10) → (100, 10); (300, 7) → (100, 2);
        // (10, 1000) → (1, 100); within 100 × 100 nothing changes.
        #expect(ThumbnailReduction.outputSize(of: PixelSize(width: 1280, height: 960), fitting: 100) == PixelSize(width: 100, height: 75))
        #expect(ThumbnailReduction.outputSize(of: PixelSize(width: 101, height: 10), fitting: 100) == PixelSize(width: 100, height: 10))
        #expect(ThumbnailReduction.outputSize(of: PixelSize(width: 300, height: 7), fitting: 100) == PixelSize(width: 100, height: 2))
        #expect(ThumbnailReduction.outputSize(of: PixelSize(width: 10, height: 1000), fitting: 100) == PixelSize(width: 1, height: 100))
        #expect(ThumbnailReduction.outputSize(of: PixelSize(width: 100, height: 100), fitting: 100) == nil)
    }

    @Test(.enabled(if: python != nil, "PyPI's thumbhash-python or Pillow could not be installed: skipped"))
    func ourReductionIsPillowsToTheByte() async throws {
        let python = try #require(Self.python)
        let sizes = [PixelSize(width: 640, height: 480), PixelSize(width: 333, height: 101), PixelSize(width: 150, height: 1000),
                     PixelSize(width: 101, height: 10)]
        try await withTemporaryDirectory(prefix: "thumbnail") { directory in
            for size in sizes {
                let bitmap = Self.pattern(size.width, size.height)
                let file = directory.appendingPathComponent("\(size.width)x\(size.height).png")
                try EncoderRegistry.standard.encode(bitmap, as: .png).write(to: file)
                let script = """
                import sys
                from PIL import Image
                im = Image.open(sys.argv[1]).convert("RGBA")
                im.thumbnail((100, 100))
                sys.stdout.write(f"{im.width} {im.height}\\n")
                sys.stdout.flush()
                sys.stdout.buffer.write(im.tobytes())
                """
                let outcome = try await ExternalTool.run(python, ["-c", script, file.path], timeout: 60)
                try #require(outcome.status == 0, "Pillow: \(outcome.stderr)")
                let newline = try #require(outcome.output.firstIndex(of: 10))
                let header = String(decoding: outcome.output[..<newline], as: UTF8.self).split(separator: " ").compactMap { Int($0) }
                let pillow = [UInt8](outcome.output[(newline + 1)...])
                let ours = ThumbnailReduction.reduced(bitmap, fitting: 100)
                #expect([ours.width, ours.height] == header, "\(size)")
                let bytes = ours.unpremultipliedBytes()
                let differing = zip(bytes, pillow).filter { $0 != $1 }.count
                #expect(bytes.count == pillow.count && differing == 0, "\(size): \(differing) of \(pillow.count) bytes differ")
            }
        }
    }

    /// Our hash of each sample (decoded by our codecs at full size, straight) against
    /// `image_to_thumbhash` of the same file (decoded by Pillow), both decoded by ours.
    @Test(.enabled(if: python != nil, "PyPI's thumbhash-python or Pillow could not be installed: skipped"))
    func eachSamplesHashDecodesWithinAStepOfTheReferences() async throws {
        let python = try #require(Self.python)
        // Every sample but the arithmetic-coded JPEG, which the libjpeg in Pillow's wheel may not read.
        let names = ["aurora.png", "balloon-exif6.jpg", "dunes-progressive.jpg", "glass-alpha.png", "glass-alpha.webp",
                     "mandelbrot.jpg", "moon-gray.jpg", "orbit.gif", "rings.png"]
        let paths = names.map { Self.samples.appendingPathComponent($0).path }
        let script = """
        import sys
        from thumbhash import image_to_thumbhash
        for path in sys.argv[1:]:
            print(image_to_thumbhash(path))
        """
        let outcome = try await ExternalTool.run(python, ["-c", script] + paths, timeout: 120)
        try #require(outcome.status == 0, "the reference: \(outcome.stderr)")
        let hashes = outcome.stdout.split(separator: "\n").map(String.init)
        try #require(hashes.count == names.count)
        let pipeline = ImagePipeline(configuration: .init(decoders: .standard, loaders: LoaderRegistry([FileDataLoader()])))
        var report: [String] = []
        for (name, text) in zip(names, hashes) {
            var request = ImageRequest(url: Self.samples.appendingPathComponent(name))
            request.processing.pixelFormat = .rgba8Straight
            let full = try await pipeline.image(for: request).bitmap
            let ours = ThumbHash(bitmap: full)
            let reference = try #require(ThumbHash(base64: text), "\(name): \(text)")
            let gap = absoluteDifference(ours.bitmap(), reference.bitmap())
            // What the box average of whole pixels (before issue 41) gave, for the record.
            let limit = PixelSize(width: 100, height: 100)
            let boxed = full.boxAveraged(to: ResizePlan(source: full.size, target: .pixels(limit), contentMode: .fit).outputSize)
            let before = ThumbHash.encode(width: boxed.width, height: boxed.height, rgba: boxed.unpremultipliedBytes())
            report.append(String(format: "%@ %.2f (box average %.2f)", name, gap.mean,
                                 absoluteDifference(before.bitmap(), reference.bitmap()).mean))
            #expect(gap.mean <= 3.1, "\(name): ours \(ours.base64), the reference's \(text), mean abs error \(gap.mean)")
        }
        print("ThumbHash against thumbhash-python (mean abs error of the decodings): " + report.joined(separator: ", "))
    }

    @Test(.enabled(if: python != nil, "PyPI's blurhash or Pillow could not be installed: skipped"))
    func blurHashIsNoFartherFromItsReferenceThanWithTheBoxAverage() async throws {
        let python = try #require(Self.python)
        let names = ["aurora.png", "balloon-exif6.jpg", "dunes-progressive.jpg", "glass-alpha.png", "mandelbrot.jpg", "moon-gray.jpg",
                     "orbit.gif", "rings.png"]
        let script = """
        import sys, blurhash
        from PIL import Image, ImageOps
        for path in sys.argv[1:]:
            im = ImageOps.exif_transpose(Image.open(path))
            im.thumbnail((100, 100))
            im = im.convert("RGB")
            rows = [[im.getpixel((x, y)) for x in range(im.width)] for y in range(im.height)]
            print(blurhash.encode(rows, 4, 3))
        """
        let outcome = try await ExternalTool.run(python, ["-c", script] + names.map { Self.samples.appendingPathComponent($0).path },
                                                 timeout: 120)
        try #require(outcome.status == 0, "the reference: \(outcome.stderr)")
        let hashes = outcome.stdout.split(separator: "\n").map(String.init)
        try #require(hashes.count == names.count)
        let pipeline = ImagePipeline(configuration: .init(decoders: .standard, loaders: LoaderRegistry([FileDataLoader()])))
        let size = PixelSize(width: 32, height: 32)
        var report: [String] = []
        for (name, text) in zip(names, hashes) {
            var request = ImageRequest(url: Self.samples.appendingPathComponent(name))
            request.processing.pixelFormat = .rgba8Straight
            let full = try await pipeline.image(for: request).bitmap
            let reference = try #require(BlurHash(string: text), "\(name): \(text)").bitmap(size: size)
            let ours = absoluteDifference(BlurHash(bitmap: full, components: 4, 3).bitmap(size: size), reference).mean
            let limit = PixelSize(width: 100, height: 100)
            let boxed = full.boxAveraged(to: ResizePlan(source: full.size, target: .pixels(limit), contentMode: .fit).outputSize)
            let before = absoluteDifference(BlurHash(bitmap: boxed, components: 4, 3).bitmap(size: size), reference).mean
            report.append(String(format: "%@ %.2f (box average %.2f)", name, ours, before))
            #expect(ours <= before + 0.5, "\(name): \(ours) against the reference, \(before) with the box average")
        }
        print("BlurHash against blurhash 1.1.5 on Pillow's thumbnail (mean abs error of the decodings): " + report.joined(separator: ", "))
    }
}
