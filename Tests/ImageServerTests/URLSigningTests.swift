import Foundation
import ImageServer
import PipelineCore
import Testing

@Suite struct URLSigningTests {
    /// imgproxy's own example (docs, "Signing the URL").
    static let vectorPath = "/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png"
    static let vectorSignature = "oKfUtW34Dvo2BGQehJFR4Nr0_rIjOtdtzJ3QFsUcXH8"

    @Test func imgproxysTestVectorSignsAndVerifies() throws {
        let signing = try URLSigning(keys: ["736563726574"], salts: ["68656C6C6F"])
        #expect(signing.signature(for: Self.vectorPath) == Self.vectorSignature)
        let url = try ImgproxyURL.parse("/\(Self.vectorSignature)\(Self.vectorPath)", signing: signing, presets: Presets())
        #expect(url.source == "http://example.com/images/curiosity.jpg")
        #expect(url.options.resizingType == .fill && url.options.width == 300 && url.options.height == 400)
        #expect(url.options.gravity.anchor == .attention)
        #expect(url.options.format == .png)
    }

    @Test func aWrongMissingOrMalformedSignatureIsForbidden() throws {
        let signing = try URLSigning(keys: ["736563726574"], salts: ["68656C6C6F"])
        var flipped = Array(Self.vectorSignature)
        flipped[5] = flipped[5] == "A" ? "B" : "A"
        for signature in [String(flipped), "insecure", "unsafe", "!!", String(Self.vectorSignature.dropLast())] {
            let error = #expect(throws: ServerError.self) {
                try ImgproxyURL.parse("/\(signature)\(Self.vectorPath)", signing: signing, presets: Presets())
            }
            #expect(error?.kind == .forbidden, "\(signature)")
        }
        // The path is signed too: another option under the right signature fails.
        let error = #expect(throws: ServerError.self) {
            try ImgproxyURL.parse("/\(Self.vectorSignature)\(Self.vectorPath.replacingOccurrences(of: "300", with: "301"))", signing: signing, presets: Presets())
        }
        #expect(error?.kind == .forbidden)
    }

    @Test func anyConfiguredPairMaySign() throws {
        let signing = try URLSigning(keys: ["aa11", "736563726574"], salts: ["bb22", "68656C6C6F"])
        #expect(throws: Never.self) { try ImgproxyURL.parse("/\(Self.vectorSignature)\(Self.vectorPath)", signing: signing, presets: Presets()) }
        let first = try URLSigning(keys: ["aa11"], salts: ["bb22"])
        let path = "/w:10/plain/https://example.com/a.jpg"
        let signature = try #require(first.signature(for: path))
        #expect(throws: Never.self) { try ImgproxyURL.parse("/\(signature)\(path)", signing: signing, presets: Presets()) }
        #expect(signing.verifies(signature, for: path) && !signing.verifies(signature, for: path + "x"))
        #expect(first.signedPath(path) == "/\(signature)\(path)")
        #expect(URLSigning().signedPath(path) == "/insecure\(path)")
    }

    @Test func aTruncatedSignatureIsTheHMACsFirstBytes() throws {
        let full = try URLSigning(keys: ["736563726574"], salts: ["68656C6C6F"])
        let short = try URLSigning(keys: ["736563726574"], salts: ["68656C6C6F"], size: 8)
        let signature = try #require(short.signature(for: Self.vectorPath))
        #expect(signature.count == 11)  // 8 bytes in base64url without padding
        #expect(try #require(full.signature(for: Self.vectorPath)).hasPrefix(String(signature.dropLast())))
        #expect(short.verifies(signature, for: Self.vectorPath))
        #expect(!short.verifies(Self.vectorSignature, for: Self.vectorPath))
        #expect(!full.verifies(signature, for: Self.vectorPath))
    }

    @Test func withoutAPairAnySignatureSegmentIsAccepted() throws {
        for signature in ["insecure", "unsafe", "whatever", Self.vectorSignature] {
            let url = try ImgproxyURL.parse("/\(signature)\(Self.vectorPath)", signing: URLSigning(), presets: Presets())
            #expect(url.source == "http://example.com/images/curiosity.jpg")
        }
        #expect(!URLSigning().isEnabled)
        #expect(URLSigning().signature(for: "/x") == nil)
        #expect(try URLSigning(keys: [], salts: []) == URLSigning())
    }

    @Test(arguments: [
        (["73656"], ["68"], "key 1 is not hexadecimal"),
        (["7x"], ["68"], "key 1 is not hexadecimal"),
        (["+f"], ["68"], "key 1 is not hexadecimal"),
        (["ａｂ"], ["68"], "key 1 is not hexadecimal"),
        ([""], ["68"], "key 1 is not hexadecimal"),
        (["aa", "bb"], ["cc", "d"], "salt 2 is not hexadecimal"),
        (["aa", "bb"], ["cc"], "as many salts as keys (2 keys, 1 salts)"),
    ])
    func badKeysAndSaltsAreRefusedWithoutQuotingThem(keys: [String], salts: [String], message: String) {
        let error = #expect(throws: URLSigning.ConfigurationError.self) { try URLSigning(keys: keys, salts: salts) }
        #expect(error?.description.contains(message) == true, "\(error.map(String.init(describing:)) ?? "")")
        for secret in keys + salts where secret.count > 2 { #expect(error?.description.contains(secret) == false) }
    }

    @Test(arguments: [0, 33, -1]) func aSizeOutside1To32IsRefused(size: Int) {
        #expect(throws: URLSigning.ConfigurationError.sizeOutOfRange(size)) { try URLSigning(keys: ["aa"], salts: ["bb"], size: size) }
    }

    @Test func aProxyThatMergedThePlainSourcesSlashesIsForgiven() throws {
        let signing = try URLSigning(keys: ["aa11"], salts: ["bb22"])
        let path = "/rs:fit:100:100/plain/https://example.com/a.jpg@webp"
        let signature = try #require(signing.signature(for: path))
        let url = try ImgproxyURL.parse("/\(signature)/rs:fit:100:100/plain/https:/example.com/a.jpg@webp", signing: signing, presets: Presets())
        #expect(url.source == "https://example.com/a.jpg")
        #expect(url.options.format == .webp)
    }
}
