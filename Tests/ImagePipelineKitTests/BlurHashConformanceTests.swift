import Foundation
import ImagePipelineKit
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// ``BlurHash`` against the reference on PyPI, `blurhash` 1.1.5 (a pure-Python port of Wolt's
/// Swift encoder and decoder), run by the test in `scripts/python-venv blurhash` (skipped with
/// the reason when PyPI cannot be reached).
///
/// The reference is given exactly the pixels our encoder reads: the small picture the
/// placeholder path decodes (fit in 100 × 100 through every codec of the kit, straight RGB) is
/// written as a PPM that the script reads. With the same pixels the texts must be equal: our
/// encoder does the reference's double-precision arithmetic in its order (the same sRGB curve,
/// the same cosine arguments, the sums row by row, the same floors). A hash's AC components are
/// quantised (19 steps a channel, a signed square root of the scale), so pictures that differ
/// slightly before hashing would move a component by a step; the pixels being identical, no
/// step is allowed here. The decodings (the reference's of its hash, ours of ours) may differ
/// by 1 level of 255 where a sum lands on a rounding boundary in another libm; they are
/// compared with that bound.
@Suite(.timeLimit(.minutes(3)), .tags(.cpuBound))
struct BlurHashConformanceTests {
    static let python: String? = {
        switch PythonVenv.python("blurhash", ["blurhash==1.1.5"]) {
        case .success(let path): return path
        case .failure(let error):
            print("the BlurHash reference tests are skipped: \(error)")
            return nil
        }
    }()

    /// `scripts/blurhash-reference`, which runs the reference over PPM files.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/blurhash-reference")
        .standardizedFileURL.path

    /// One input: its name, the pixels our encoder reads, the component counts.
    struct Input {
        var name: String
        var pixels: Bitmap
        var x: Int, y: Int
    }

    /// The small decode the placeholders are made from, straight.
    static func smallDecode(_ url: URL) async throws -> Bitmap {
        let pipeline = ImagePipeline(configuration: .init(decoders: .standard, loaders: LoaderRegistry([FileDataLoader()])))
        let side = BlurHash.maxEncodedSide
        var request = ImageRequest(url: url, targetSize: .pixels(PixelSize(width: side, height: side)))
        request.processing.pixelFormat = .rgba8Straight
        return try await pipeline.image(for: request).bitmap
    }

    /// A smooth gradient with a bright spot (no symmetry), `width` × `height`.
    static func gradient(_ width: Int, _ height: Int) -> Bitmap {
        var bytes = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let p = (y * width + x) * 4
                let spot = max(0, 60 - abs(x - width / 3) - abs(y - height / 4))
                bytes[p] = UInt8(min(255, x * 255 / max(1, width - 1) / 2 + spot))
                bytes[p + 1] = UInt8(y * 255 / max(1, height - 1))
                bytes[p + 2] = UInt8(255 - (x + y) * 255 / max(1, width + height - 2))
            }
        }
        return Bitmap(width: width, height: height, bytesPerRow: width * 4, pixelFormat: .rgba8Straight, bytes: bytes)
            ?? Bitmap(zeroed: PixelSize(width: 1, height: 1))
    }

    static func inputs() async throws -> [Input] {
        var list = [Input(name: "gradient 4x3", pixels: gradient(64, 48), x: 4, y: 3),
                    Input(name: "gradient 9x9", pixels: gradient(30, 50), x: 9, y: 9),
                    Input(name: "gradient 1x1", pixels: gradient(20, 20), x: 1, y: 1),
                    Input(name: "gradient 3x7", pixels: gradient(100, 7), x: 3, y: 7),
                    Input(name: "one pixel", pixels: gradient(1, 1), x: 4, y: 3)]
        let files = ["exif-orientation/Landscape_6.jpg", "exif-orientation/Portrait_3.jpg", "png-suite/png/basn6a08.png",
                     "gif/test.gif", "heif/example.heic", "icc/AdobeRGB1998.jpg"]
        for file in files where FileManager.default.fileExists(atPath: Corpus.root.appendingPathComponent(file).path) {
            list.append(Input(name: file, pixels: try await smallDecode(Corpus.root.appendingPathComponent(file)), x: 4, y: 3))
        }
        return list
    }

    /// A binary PPM of `bitmap`'s straight RGB.
    static func ppm(_ bitmap: Bitmap) -> Data {
        let rgba = bitmap.unpremultipliedBytes()
        var data = Data("P6\n\(bitmap.width) \(bitmap.height)\n255\n".utf8)
        for p in 0..<bitmap.width * bitmap.height { data.append(contentsOf: rgba[p * 4..<p * 4 + 3]) }
        return data
    }

    @Test(.enabled(if: python != nil, "PyPI's blurhash could not be installed: skipped"))
    func ourHashIsTheReferencesAndDecodesAsItsDoes() async throws {
        let python = try #require(Self.python)
        let inputs = try await Self.inputs()
        // The five synthetic inputs always; the corpus's six files when it is there (a clone
        // without ../shared/corpus checks the synthetic ones only).
        #expect(inputs.count >= (Corpus.has("exif-orientation") ? 8 : 5))
        let decoded = PixelSize(width: 20, height: 15)
        try await withTemporaryDirectory(prefix: "blurhash") { directory in
            var jobs: [[Any]] = []
            for (index, input) in inputs.enumerated() {
                let file = directory.appendingPathComponent("\(index).ppm")
                try Self.ppm(input.pixels).write(to: file)
                jobs.append([file.path, input.x, input.y, decoded.width, decoded.height])
            }
            let outcome = try await ExternalTool.run(python, [Self.script, "hash"],
                                                     input: try JSONSerialization.data(withJSONObject: jobs), timeout: 120)
            try #require(outcome.status == 0, "the reference: \(outcome.stderr)")
            let answers = try #require(try JSONSerialization.jsonObject(with: outcome.output) as? [[String: String]])
            try #require(answers.count == inputs.count)
            for (input, answer) in zip(inputs, answers) {
                let ours = BlurHash(bitmap: input.pixels, components: input.x, input.y)
                #expect(ours.string == answer["hash"], "\(input.name): ours \(ours), the reference's \(answer["hash"] ?? "")")
                #expect(ours.components.x == input.x && ours.components.y == input.y)
                let reference = try #require(Data(hexString: answer["rgb"] ?? ""))
                let bitmap = ours.bitmap(size: decoded)
                var largest = 0
                for y in 0..<decoded.height {
                    for x in 0..<decoded.width {
                        let pixel = bitmap.pixel(x: x, y: y), p = (y * decoded.width + x) * 3
                        for (c, value) in [pixel.r, pixel.g, pixel.b].enumerated() {
                            largest = max(largest, abs(Int(value) - Int(reference[p + c])))
                        }
                    }
                }
                #expect(largest <= 1, "\(input.name): our decoding differs from the reference's by \(largest) levels")
            }
        }
    }

    @Test func textsAreCheckedAndTheAverageIsTheFirstComponent() throws {
        let known = try #require(BlurHash(string: "LEHV6nWB2yk8pyo0adR*.7kCMdnj"))
        #expect(known.components.x == 4 && known.components.y == 3)
        #expect(BlurHash(string: "LEHV6nWB2yk8pyo0adR*.7kCMdn") == nil, "one character short")
        #expect(BlurHash(string: "LEHV6nWB2yk8pyo0adR*.7kCMd\"j") == nil, "a character outside the alphabet")
        #expect(BlurHash(string: "00000") == nil)
        let flat = Bitmap(width: 8, height: 8, bytesPerRow: 32, bytes: [UInt8]((0..<64).flatMap { _ in [200, 100, 50, 255] as [UInt8] }))
        let hash = BlurHash(bitmap: try #require(flat))
        #expect(hash.averageColor == RGBAColor(red: 200, green: 100, blue: 50))
        // A large picture hashes as its 100-pixel average (the small picture ThumbHash reads):
        // not as its top-left corner, and close to the hash of its 100-pixel resample.
        let large = Self.gradient(400, 300)
        let plan = ResizePlan(source: large.size, target: .pixels(PixelSize(width: 100, height: 100)), contentMode: .fit)
        let resampled = BlurHash(bitmap: Resampler.resample(large.premultiplied(), plan: plan))
        #expect(abs(Int(BlurHash(bitmap: large).averageColor.red) - Int(resampled.averageColor.red)) <= 1)
    }
}

extension Data {
    /// Bytes from lowercase or uppercase hex; `nil` for anything else.
    init?(hexString: String) {
        let digits = Array(hexString.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(bytes)
    }
}
