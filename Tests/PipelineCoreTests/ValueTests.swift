import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

@Suite("Formats, registries and URL builders")
struct ValueTests {
    static func ftyp(_ major: String, _ compatible: [String]) -> Data {
        var bytes: [UInt8] = [0, 0, 0, UInt8(16 + 4 * compatible.count)] + Array("ftyp".utf8) + Array(major.utf8) + [0, 0, 0, 0]
        for brand in compatible { bytes += Array(brand.utf8) }
        return Data(bytes)
    }

    @Test(arguments: [
        ([0xFF, 0xD8, 0xFF, 0xE0], ImageFormat.jpeg),
        ([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0], .png),
        (Array("RIFF".utf8) + [1, 2, 3, 4] + Array("WEBPVP8 ".utf8), .webp),
        (Array("GIF89a".utf8) + [0, 0], .gif),
        (Array("GIF87a".utf8), .gif),
        (Array("BM".utf8) + [UInt8](repeating: 0, count: 20), .bmp),
        ([0x49, 0x49, 0x2A, 0x00, 8, 0], .tiff),
        ([0x4D, 0x4D, 0x00, 0x2A, 0, 8], .tiff),
    ] as [([UInt8], ImageFormat)])
    func sniffsMagicBytes(bytes: [UInt8], format: ImageFormat) {
        #expect(ImageFormat.sniff(Data(bytes)) == format)
    }

    @Test func sniffsHEIFAndAVIFByTheirFtypBrands() {
        #expect(ImageFormat.sniff(Self.ftyp("heic", ["mif1", "heic"])) == .heif)
        #expect(ImageFormat.sniff(Self.ftyp("mif1", ["heic"])) == .heif)
        #expect(ImageFormat.sniff(Self.ftyp("avif", ["mif1", "miaf"])) == .avif)
        #expect(ImageFormat.sniff(Self.ftyp("mif1", ["avif"])) == .avif)
        #expect(ImageFormat.sniff(Self.ftyp("isom", ["mp41"])) == nil)  // an MP4 video is not a picture
    }

    @Test func sniffingRejectsShortAndUnknownData() {
        #expect(ImageFormat.sniff(Data()) == nil)
        #expect(ImageFormat.sniff(Data([0xFF, 0xD8])) == nil)
        #expect(ImageFormat.sniff(Data("<html><body>".utf8)) == nil)
        #expect(ImageFormat.sniff(Data("RIFF1234WAVE".utf8)) == nil)
    }

    @Test func sniffsTheCorpusFilesWhenPresent() throws {
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../shared/corpus").standardizedFileURL
        guard FileManager.default.fileExists(atPath: corpus.path) else {
            print("skipping: ../shared/corpus is absent")
            return
        }
        let expected: [(String, ImageFormat)] = [
            ("jpeg/testorig.jpg", .jpeg), ("png-suite/png/basn6a08.png", .png), ("webp/lossless1.webp", .webp),
            ("heif/example.heic", .heif), ("heif/example.avif", .avif),
        ]
        for (path, format) in expected {
            let data = try Data(contentsOf: corpus.appendingPathComponent(path))
            #expect(ImageFormat.sniff(data) == format, "\(path)")
        }
    }

    @Test func theLastDecoderRegisteredForAFormatWins() throws {
        let first = CountingDecoder(), second = CountingDecoder()
        let registry = DecoderRegistry().registering(first).registering(second)
        let data = FakeImage.data(width: 4, height: 4)
        let chosen = try #require(registry.decoder(for: data) as? CountingDecoder)
        #expect(chosen === second)
        #expect(registry.all.count == 2)
        #expect(DecoderRegistry().decoder(for: data) == nil)
    }

    @Test func theLastLoaderRegisteredForASchemeWins() throws {
        let a = HeldLoader(schemes: ["http", "https"]), b = HeldLoader(schemes: ["HTTPS"])
        let registry = LoaderRegistry([a, b])
        #expect(registry.loader(for: URL(string: "https://x/")!) as? HeldLoader === b)
        #expect(registry.loader(for: URL(string: "HTTP://x/")!) as? HeldLoader === a)
        #expect(registry.schemes == ["http", "https"])
        #expect(throws: ImagePipelineError.noLoader(scheme: "ftp")) { try registry.requireLoader(for: URL(string: "ftp://x")!) }
    }

    @Test func widthBucketsPickTheSmallestCoveringBucket() {
        let builder = WidthBucketURLBuilder()
        let url = URL(string: "https://cdn.example/p.jpg?w=999&x=1")!
        func fetch(_ width: Int) -> String {
            builder.fetchURL(for: ImageRequest(url: url, width: width, height: 10)).absoluteString
        }
        #expect(fetch(1) == "https://cdn.example/p.jpg?x=1&w=160")
        #expect(fetch(160) == "https://cdn.example/p.jpg?x=1&w=160")
        #expect(fetch(161) == "https://cdn.example/p.jpg?x=1&w=320")
        #expect(fetch(1280) == "https://cdn.example/p.jpg?x=1&w=1280")
        #expect(fetch(1281) == url.absoluteString)  // above every bucket: the original
        #expect(builder.fetchURL(for: ImageRequest(url: url)) == url)  // original size
        let file = URL(fileURLWithPath: "/tmp/a.png")
        #expect(builder.fetchURL(for: ImageRequest(url: file, width: 10, height: 10)) == file)
        #expect(WidthBucketURLBuilder(buckets: [300, 100, 100, -5]).buckets == [100, 300])
    }

    @Test func imageKeysSeparateSizesModesAndProcessing() {
        let url = URL(string: "https://x/a.jpg")!
        let base = ImageRequest(url: url, width: 100, height: 100)
        var fill = base
        fill.contentMode = .fill
        var noOrientation = base
        noOrientation.processing.appliesOrientation = false
        var prefetch = base
        prefetch.priority = .prefetch
        let key = { (r: ImageRequest) in ImageKey(request: r, cacheURL: url) }
        #expect(key(base) != key(fill))
        #expect(key(base) != key(noOrientation))
        #expect(key(base) == key(prefetch))  // priority is not part of the key
        var turned = base
        turned.processing.transform = .right
        #expect(key(base) != key(turned))
        var originalFill = ImageRequest(url: url)
        originalFill.contentMode = .fill
        #expect(key(originalFill) == key(ImageRequest(url: url)))  // mode means nothing at original size
    }
}

@Suite("Rendition records")
struct RenditionRecordTests {
    @Test func theSerializedFormRoundTripsAndAnythingElseIsRejected() throws {
        let record = RenditionRecord(originTag: "123-abc", originalSize: PixelSize(width: 4032, height: 3024),
                                     format: ImageFormat(rawValue: "image/x-new"), standalone: false)
        let bytes = record.serialized
        #expect(RenditionRecord(serialized: bytes) == record)
        var standalone = record
        standalone.standalone = true
        #expect(RenditionRecord(serialized: standalone.serialized)?.standalone == true)
        // Every truncation, an extra byte, another version and bad flags are refused.
        for length in 0..<bytes.count { #expect(RenditionRecord(serialized: bytes.prefix(length)) == nil) }
        #expect(RenditionRecord(serialized: bytes + Data([0])) == nil)
        var other = bytes
        other[0] = 2
        #expect(RenditionRecord(serialized: other) == nil)
        other = bytes
        other[1] = 7
        #expect(RenditionRecord(serialized: other) == nil)
    }

    @Test func theTagIsTheLengthAndCRC32OfTheBytes() {
        let data = Data("123456789".utf8)  // CRC-32 check value cbf43926
        #expect(RenditionRecord.tag(of: data) == "9-cbf43926")
        #expect(RenditionRecord.tag(for: CachedDigest(length: 9, crc32: 0xcbf4_3926, info: CacheEntryInfo())) == "9-cbf43926")
    }
}
