import CodecPNG
import Foundation
import LoaderFile
import PipelineCore
import Testing

@Suite("DataURLLoader")
struct DataURLLoaderTests {
    private func load(_ string: String, limit: Int = 10_000_000) async throws -> (Data, ResponseMetadata) {
        let url = try #require(URL(string: string))
        guard case .data(let data, let metadata) = try await DataURLLoader(maxBodyBytes: limit).load(DataLoadRequest(url: url)) else {
            Issue.record("answered notModified")
            return (Data(), ResponseMetadata())
        }
        return (data, metadata)
    }

    @Test func decodesBase64WithItsMediaType() async throws {
        let bytes = Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) })
        let (data, metadata) = try await load("data:image/png;base64,\(bytes.base64EncodedString())")
        #expect(data == bytes)
        #expect(metadata.contentType == "image/png" && metadata.contentLength == 300)
    }

    @Test func decodesPercentEncodedTextAndDefaultsToTextPlain() async throws {
        let parsed = try DataURL(parsing: "data:,Hello%2C%20World%21")
        #expect(parsed.data == Data("Hello, World!".utf8))
        #expect(parsed.mediaType == "text/plain" && parsed.parameters == ["charset": "US-ASCII"] && !parsed.isBase64)
        let (data, metadata) = try await load("data:,A%20brief%20note")
        #expect(data == Data("A brief note".utf8) && metadata.contentType == "text/plain")
    }

    @Test func readsMediaTypeParameters() throws {
        let parsed = try DataURL(parsing: "data:Image/SVG+XML;Charset=\"utf-8\";name=a.svg;BASE64,PHN2Zy8+")
        #expect(parsed.mediaType == "image/svg+xml")
        #expect(parsed.parameters == ["charset": "utf-8", "name": "a.svg"])
        #expect(parsed.isBase64 && parsed.data == Data("<svg/>".utf8))
        let charsetOnly = try DataURL(parsing: "data:;charset=utf-8,%C3%A9")
        #expect(charsetOnly.mediaType == "text/plain" && charsetOnly.parameters == ["charset": "utf-8"])
        #expect(charsetOnly.data == Data("é".utf8))
    }

    @Test func base64IsForgivingAboutPaddingWhitespaceAndEscapes() throws {
        // "any carnal pleas" without padding, with percent-encoded spaces and an escaped '='.
        #expect(try DataURL(parsing: "data:;base64,YW55IGNhcm5hbCBwbGVhcw").data == Data("any carnal pleas".utf8))
        #expect(try DataURL(parsing: "data:;base64,YW55%20IGNh%0Acm5hbCBwbGVhcw%3D%3D").data == Data("any carnal pleas".utf8))
        #expect(try DataURL(parsing: "data:;base64,").data.isEmpty)
    }

    @Test func malformedURLsGiveTypedErrors() throws {
        #expect(throws: DataURLError.notADataURL) { try DataURL(parsing: "http://example/x") }
        #expect(throws: DataURLError.missingComma) { try DataURL(parsing: "data:image/png;base64") }
        #expect(throws: DataURLError.invalidMediaType("image")) { try DataURL(parsing: "data:image,abc") }
        #expect(throws: DataURLError.invalidMediaType("image/png;x")) { try DataURL(parsing: "data:image/png;x,abc") }
        #expect(throws: DataURLError.invalidMediaType("im age/png")) { try DataURL(parsing: "data:im age/png,abc") }
        #expect(throws: DataURLError.invalidPercentEncoding(offset: 3)) { try DataURL(parsing: "data:,abc%G1") }
        #expect(throws: DataURLError.invalidPercentEncoding(offset: 1)) { try DataURL(parsing: "data:,a%2") }
        #expect(throws: DataURLError.invalidBase64) { try DataURL(parsing: "data:;base64,YW5*") }
        #expect(throws: DataURLError.invalidBase64) { try DataURL(parsing: "data:;base64,YW55I") }  // 1 mod 4
        #expect(throws: DataURLError.invalidBase64) { try DataURL(parsing: "data:;base64,YW=5") }
        #expect(DataURLError.invalidBase64.isPermanent)
    }

    @Test func theSizeLimitIsCheckedBeforeDecoding() async throws {
        let body = Data(repeating: 0xAB, count: 3000).base64EncodedString()
        await #expect(throws: ImagePipelineError.tooLarge(limit: 2999, actual: 3000)) {
            _ = try await load("data:application/octet-stream;base64,\(body)", limit: 2999)
        }
        #expect(try await load("data:application/octet-stream;base64,\(body)", limit: 3000).0.count == 3000)
        let text = String(repeating: "%41", count: 100)
        #expect(throws: ImagePipelineError.tooLarge(limit: 99, actual: 100)) { try DataURL(parsing: "data:,\(text)", maxBodyBytes: 99) }
        #expect(try DataURL(parsing: "data:,\(text)", maxBodyBytes: 100).data == Data(repeating: 0x41, count: 100))
    }

    @Test func aPNGDataURLDecodesThroughThePipeline() async throws {
        var bitmap = Bitmap(zeroed: PixelSize(width: 3, height: 2))
        bitmap.withUnsafeMutableBytes { bytes in for i in bytes.indices { bytes[i] = 255 } }
        let png = try PNGEncoder().encode(bitmap)
        let url = try #require(URL(string: "data:image/png;base64,\(png.base64EncodedString())"))
        let pipeline = ImagePipeline(configuration: .init(decoders: DecoderRegistry().registering(PNGDecoder()),
                                                          loaders: LoaderRegistry().registering(DataURLLoader())))
        let response = try await pipeline.image(for: ImageRequest(url: url))
        #expect(response.bitmap.size == PixelSize(width: 3, height: 2) && response.format == .png)
        let broken = try #require(URL(string: "data:image/png;base64,iVBOR*"))
        await #expect(throws: ImagePipelineError.loadingFailed(broken, underlying: DataURLError.invalidBase64)) {
            _ = try await pipeline.image(for: ImageRequest(url: broken))
        }
    }
}
