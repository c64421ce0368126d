import Foundation
import ImagePipelineKit
import LoaderFile
import PipelineCore
import PipelineTestSupport
import Testing

/// ``ThumbHash`` against the reference, `thumbhash-python` 1.0.1: the hashes and decodings
/// `scripts/thumbhash-reference` wrote to `Fixtures/ThumbHash/reference.json` (rerun it to
/// regenerate). Here because the inputs are decoded through every codec this package ships.
///
/// Why the bounds are what they are:
/// - Our decoder and the reference's evaluate the same sums; their bytes differ by at most 1
///   (the reference rounds half to even, we round half away from zero, and we fold the sums
///   per row). So our decoding of our hash stands for the reference's decoding of it, which
///   is what "the reference's decoding of our hash looks like that of its own" is checked
///   through (`scripts/thumbhash-reference decode BASE64` prints the reference's for any hash).
/// - On the synthetic pictures (at most 100 × 100, so both hash the pixels as they are) our
///   encoder does the reference's arithmetic in its order, so the bytes are equal.
/// - On corpus files the inputs differ before hashing: Pillow shrinks to 100 px with a bicubic
///   filter after a full decode, we average (area) the full decode; libjpeg versions and
///   chroma upsampling differ. Most files still give the reference's bytes; the others move a
///   field by a step, so the decodings are compared by mean absolute error over premultiplied
///   RGBA (0–255) against ``oneStep``: one step of the luminance DC (6 bits) moves R, G and B
///   by 255 / 63 ≈ 4 each, 3 over the four channels. A wrong orientation, lost alpha or
///   swapped channels give 10 or more.
/// - A picture with an exact symmetry (``symmetric``) has coefficients that are 0, which the
///   4-bit code cannot hold (it has −1/15 and +1/15 of the scale, no 0): rounding noise picks
///   the sign, so those files get twice the bound.
@Suite(.timeLimit(.minutes(2)))
struct ThumbHashConformanceTests {
    /// The fixture's layout (see `scripts/thumbhash-reference`).
    struct Reference: Decodable {
        struct Entry: Decodable {
            struct Decoded: Decodable {
                var width: Int
                var height: Int
                var rgba: String
            }
            var file: String
            var size: [Int]
            var hash: String
            var decoded: Decoded
        }
        var synthetic: [Entry]
        var corpus: [Entry]
    }

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/ThumbHash")
    /// Mean absolute error of one luminance DC step (see the suite's comment): the bound for
    /// corpus inputs and for one picture in several files.
    static let oneStep = 3.1
    /// Corpus files with an exact symmetry (half opaque blue, half transparent), allowed 2 ×
    /// ``oneStep``.
    static let symmetric: Set<String> = ["gif/alpha_gif_a.gif"]

    static func reference() throws -> Reference {
        try JSONDecoder().decode(Reference.self, from: Data(contentsOf: fixtures.appendingPathComponent("reference.json")))
    }

    /// The reference's decoding of its hash, premultiplied (as ours is).
    static func referenceDecoding(_ entry: Reference.Entry) throws -> Bitmap {
        var bytes = try #require(Data(base64Encoded: entry.decoded.rgba)).map { $0 }
        bytes.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        return try #require(Bitmap(width: entry.decoded.width, height: entry.decoded.height, bytesPerRow: entry.decoded.width * 4,
                                   pixelFormat: .rgba8Premultiplied, bytes: bytes))
    }

    /// `hash` decoded at the size of `entry`'s reference decoding.
    static func decoding(_ hash: ThumbHash, like entry: Reference.Entry) -> Bitmap {
        hash.bitmap(size: PixelSize(width: entry.decoded.width, height: entry.decoded.height))
    }

    /// The picture at `url` through the standard decoders, upright and colour-managed, straight
    /// (the values the file stores, as Pillow reads them), at `target`.
    static func decode(_ url: URL, target: TargetSize = .original) async throws -> Bitmap {
        let pipeline = ImagePipeline(configuration: .init(decoders: .standard, loaders: LoaderRegistry([FileDataLoader()])))
        var request = ImageRequest(url: url, targetSize: target)
        request.processing.pixelFormat = .rgba8Straight
        return try await pipeline.image(for: request).bitmap
    }

    static func corpusURL(_ file: String) -> URL { Corpus.root.appendingPathComponent(file) }

    // MARK: - Synthetic inputs (committed)

    @Test func ourHashOfTheSyntheticPicturesIsTheReferencesBytes() async throws {
        let reference = try Self.reference()
        #expect(reference.synthetic.count >= 7)
        for entry in reference.synthetic {
            let bitmap = try await Self.decode(Self.fixtures.appendingPathComponent(entry.file))
            #expect([bitmap.width, bitmap.height] == entry.size)
            let ours = ThumbHash(bitmap: bitmap)
            #expect(ours.base64 == entry.hash, "\(entry.file)")
            // The premultiplied decode of the same picture hashes within a coefficient step:
            // premultiplying keeps only alpha + 1 levels, so it need not be equal.
            let premultiplied = ThumbHash(bitmap: bitmap.premultiplied())
            let gap = absoluteDifference(Self.decoding(premultiplied, like: entry), try Self.referenceDecoding(entry))
            #expect(gap.mean <= 1, "\(entry.file): premultiplied input, mean abs error \(gap.mean)")
        }
    }

    @Test func ourDecodingOfAReferenceHashIsTheReferencesWithinRounding() throws {
        let reference = try Self.reference()
        for entry in reference.synthetic + reference.corpus {
            let hash = try #require(ThumbHash(base64: entry.hash), "\(entry.file): the reference's hash is rejected")
            let gap = absoluteDifference(Self.decoding(hash, like: entry), try Self.referenceDecoding(entry))
            #expect(gap.max <= 1, "\(entry.file): largest difference \(gap.max)")
        }
    }

    // MARK: - Corpus inputs

    @Test(.enabled(if: Corpus.has("exif-orientation"), Corpus.missing("exif-orientation")))
    func ourHashOfEachCorpusFileDecodesLikeTheReferences() async throws {
        let reference = try Self.reference()
        #expect(reference.corpus.count >= 25)
        var report: [String] = []
        for entry in reference.corpus {
            let ours = ThumbHash(bitmap: try await Self.decode(Self.corpusURL(entry.file)))
            let gap = absoluteDifference(Self.decoding(ours, like: entry), try Self.referenceDecoding(entry))
            report.append(String(format: "%@ %.2f/%d", entry.file, gap.mean, gap.max))
            let bound = Self.symmetric.contains(entry.file) ? 2 * Self.oneStep : Self.oneStep
            #expect(gap.mean <= bound, "\(entry.file): ours \(ours.base64), reference \(entry.hash), mean abs error \(gap.mean)")
            #expect(ours.aspectRatio == ThumbHash(base64: entry.hash)?.aspectRatio, "\(entry.file)")
        }
        print("ThumbHash conformance (mean/max abs error): " + report.joined(separator: ", "))
    }

    @Test(.enabled(if: Corpus.has("exif-orientation"), Corpus.missing("exif-orientation")))
    func everyEXIFOrientationHashesAsTheUprightPicture() async throws {
        for shape in ["Landscape", "Portrait"] {
            let upright = ThumbHash(bitmap: try await Self.decode(Self.corpusURL("exif-orientation/\(shape)_1.jpg")))
            for n in 0...8 {
                let hash = ThumbHash(bitmap: try await Self.decode(Self.corpusURL("exif-orientation/\(shape)_\(n).jpg")))
                #expect(hash.aspectRatio == upright.aspectRatio, "\(shape)_\(n)")
                // Each file is its own JPEG of the rotated picture, so the pixels differ by
                // compression noise, which moves a field by a step at most.
                let gap = absoluteDifference(hash.bitmap(), upright.bitmap())
                #expect(gap.mean <= Self.oneStep, "\(shape)_\(n): \(hash) against \(upright), mean abs error \(gap.mean)")
            }
        }
    }

    @Test(.enabled(if: Corpus.has("icc"), Corpus.missing("icc")))
    func onePictureHashesAlikeInEveryFormatAndSize() async throws {
        let reference = try Self.reference()
        for profile in ["AdobeRGB1998", "ProPhotoRGB"] {
            let entry = try #require(reference.corpus.first { $0.file == "icc/\(profile).jpg.srgb.png" })
            // Lossless PNG and WebP decode to the same pixels, so to the same hash.
            let png = try await Self.decode(Self.corpusURL("icc/\(profile).png"))
            let webp = try await Self.decode(Self.corpusURL("icc/\(profile).webp"))
            if png == webp { #expect(ThumbHash(bitmap: png) == ThumbHash(bitmap: webp)) }
            // Every format, full size and shrunk on load to a quarter: near the reference's hash
            // of the sRGB rendering.
            for format in ["jpg", "png", "webp", "heic"] {
                for target in [TargetSize.original, .pixels(PixelSize(width: 160, height: 160))] {
                    let hash = ThumbHash(bitmap: try await Self.decode(Self.corpusURL("icc/\(profile).\(format)"), target: target))
                    let gap = absoluteDifference(Self.decoding(hash, like: entry), try Self.referenceDecoding(entry))
                    #expect(gap.mean <= Self.oneStep, "\(profile).\(format) at \(target): mean abs error \(gap.mean)")
                }
            }
        }
    }
}
