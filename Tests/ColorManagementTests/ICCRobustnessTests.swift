import CodecJPEG
import ColorManagement
import Foundation
import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// The APP2 `ICC_PROFILE` segments of a JPEG: where each payload starts (after the 14-byte
/// `ICC_PROFILE\0`, sequence, count header) and how long it is.
enum JPEGICCSegments {
    static func find(_ bytes: [UInt8]) -> [(header: Int, payload: Range<Int>)] {
        var result: [(Int, Range<Int>)] = []
        var i = 2
        let tag = Array("ICC_PROFILE".utf8) + [0]
        while i + 4 <= bytes.count, bytes[i] == 0xFF {
            let marker = bytes[i + 1]
            if marker == 0xDA { break }
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            let body = (i + 4)..<min(bytes.count, i + 2 + length)
            if marker == 0xE2, body.count > 14, Array(bytes[body.lowerBound..<(body.lowerBound + 12)]) == tag {
                result.append((body.lowerBound, (body.lowerBound + 14)..<body.upperBound))
            }
            i += 2 + length
        }
        return result
    }

    /// The reassembled profile of a single-segment file.
    static func profile(_ bytes: [UInt8]) -> Data? {
        let segments = find(bytes)
        guard !segments.isEmpty else { return nil }
        return Data(segments.flatMap { bytes[$0.payload] })
    }
}

@Suite(.enabled(if: Corpus.has(ICC.folder), Corpus.missing(ICC.folder)), .tags(.cpuBound))
struct ICCRobustnessTests {
    static func jpeg(_ name: String = "AdobeRGB1998.jpg") throws -> [UInt8] { [UInt8](try Corpus.data(ICC.folder, name)) }

    static func stored(_ bytes: [UInt8]) throws -> Bitmap {
        try JPEGDecoder().decode(Data(bytes), options: DecodeOptions(convertsToSRGB: false)).bitmap
    }

    /// A segment numbered 2 of 1: libjpeg refuses the profile with a warning; the pixels are
    /// the stored ones; strict decoding fails.
    @Test func badSequenceNumbersAreIgnoredWithAWarning() throws {
        var bytes = try Self.jpeg()
        let segments = JPEGICCSegments.find(bytes)
        try #require(segments.count == 1, "the corpus file has \(segments.count) ICC segments")
        bytes[segments[0].header + 12] = 2
        let decoded = try JPEGDecoder().decode(Data(bytes), options: DecodeOptions())
        #expect(decoded.info.colorProfile == nil)
        #expect(!decoded.warnings.isEmpty)
        #expect(decoded.bitmap == (try Self.stored(bytes)))
        #expect(throws: ImagePipelineError.self) { _ = try JPEGDecoder().decode(Data(bytes), options: DecodeOptions(strict: true)) }
    }

    /// A profile split over three APP2 segments (as cameras write large ones) is reassembled.
    @Test func multiSegmentProfilesAreReassembled() throws {
        let bytes = try Self.jpeg()
        let segment = try #require(JPEGICCSegments.find(bytes).first)
        let profile = Array(bytes[segment.payload])
        let cut = [0, profile.count / 3, 2 * profile.count / 3, profile.count]
        var split: [UInt8] = []
        for part in 0..<3 {
            let chunk = Array(profile[cut[part]..<cut[part + 1]])
            let length = 2 + 14 + chunk.count
            split += [0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("ICC_PROFILE".utf8) + [0, UInt8(part + 1), 3] + chunk
        }
        let start = segment.header - 4
        let rebuilt = Array(bytes[..<start]) + split + Array(bytes[segment.payload.upperBound...])
        let whole = try JPEGDecoder().decode(Data(bytes), options: DecodeOptions())
        let pieces = try JPEGDecoder().decode(Data(rebuilt), options: DecodeOptions())
        #expect(pieces.warnings.isEmpty, "\(pieces.warnings)")
        #expect(pieces.info.colorProfile == whole.info.colorProfile)
        #expect(pieces.bitmap == whole.bitmap)
    }

    /// Damaged profiles (wrong size field, a tag table that points outside the profile, a
    /// truncated profile) are ignored with a warning, an error under strict, never a crash.
    @Test func damagedProfilesAreIgnoredWithAWarning() throws {
        let original = try Self.jpeg()
        let segment = try #require(JPEGICCSegments.find(original).first)
        let p = segment.payload.lowerBound
        var damages: [(String, [UInt8])] = []
        var sizeField = original
        sizeField.replaceSubrange(p..<(p + 4), with: [0x7F, 0xFF, 0xFF, 0xFF])
        damages.append(("size field", sizeField))
        var tagTable = original
        tagTable.replaceSubrange((p + 128)..<(p + 132), with: [0x7F, 0xFF, 0xFF, 0xFF])  // tag count
        damages.append(("tag table", tagTable))
        var classField = original
        classField.replaceSubrange((p + 12)..<(p + 16), with: Array("zzzz".utf8))
        damages.append(("class", classField))
        for (label, bytes) in damages {
            let decoded = try JPEGDecoder().decode(Data(bytes), options: DecodeOptions())
            #expect(decoded.info.colorProfile?.problem != nil, "\(label): \(String(describing: decoded.info.colorProfile))")
            #expect(!decoded.warnings.isEmpty, "\(label)")
            #expect(decoded.bitmap == (try Self.stored(bytes)), "\(label)")
            #expect(throws: ImagePipelineError.self, "\(label)") {
                _ = try JPEGDecoder().decode(Data(bytes), options: DecodeOptions(strict: true))
            }
        }
        for length in [0, 10, 131, 200] {
            let profile = ColorManagement.profile(iccData: Data(original[segment.payload].prefix(length)))
            #expect(profile.info.problem != nil && profile.isDamaged && !profile.isApplicable, "\(length) bytes")
        }
    }

    /// Random byte flips in the header and tag table: every profile either converts or is
    /// refused; the cache stays within its capacity.
    @Test func fuzzedProfilesNeverCrash() throws {
        let original = try #require(JPEGICCSegments.profile(try Self.jpeg()))
        var generator = SeededGenerator(seed: 12)
        var bitmap = Bitmap(zeroed: PixelSize(width: 16, height: 4))
        bitmap.withUnsafeMutableBytes { for i in $0.indices { $0[i] = UInt8(truncatingIfNeeded: i &* 37) | (i % 4 == 3 ? 0xFF : 0) } }
        var refused = 0
        for _ in 0..<300 {
            var bytes = [UInt8](original)
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let at = Int.random(in: 0..<min(bytes.count, 400), using: &generator)
                bytes[at] = UInt8.random(in: 0...255, using: &generator)
            }
            let profile = ColorManagement.profile(iccData: Data(bytes))
            if profile.isApplicable {
                var copy = bitmap
                profile.convertToSRGB(&copy, hasAlpha: false)
            } else {
                refused += 1
            }
        }
        #expect(refused > 0)
        #expect(ColorManagement.cachedProfileCount <= ColorManagement.cacheCapacity)
        // 300 distinct ~1 KB..19 KB profiles: the byte bound holds too.
        #expect(ColorManagement.cachedProfileCount * original.count <= ColorManagement.cacheByteLimit)
    }

    /// Premultiplied pixels are converted as their straight colour: alpha is untouched, and
    /// the colour equals converting the straight pixel and premultiplying it again.
    @Test func premultipliedPixelsKeepAlphaAndConvertTheirStraightColour() throws {
        let profile = ColorManagement.profile(iccData: try #require(JPEGICCSegments.profile(try Self.jpeg("ProPhotoRGB.jpg"))))
        try #require(profile.isApplicable)
        let straight: [UInt8] = [200, 40, 30, 255, 200, 40, 30, 128, 200, 40, 30, 0, 10, 220, 90, 64, 90, 90, 240, 200]
        var opaque = try #require(Bitmap(width: 5, height: 1, bytesPerRow: 20, bytes: straight.enumerated().map { $0.offset % 4 == 3 ? 255 : $0.element }))
        profile.convertToSRGB(&opaque, hasAlpha: false)
        var premultiplied = straight
        premultiplied.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        var bitmap = try #require(Bitmap(width: 5, height: 1, bytesPerRow: 20, bytes: premultiplied))
        profile.convertToSRGB(&bitmap, hasAlpha: true)
        var expected = opaque.bytes
        for i in stride(from: 3, to: expected.count, by: 4) { expected[i] = straight[i] }
        expected.withUnsafeMutableBufferPointer { Bitmap.premultiply($0) }
        for i in 0..<expected.count {
            if i % 4 == 3 {
                #expect(bitmap.bytes[i] == straight[i], "alpha of pixel \(i / 4)")
            } else {
                #expect(abs(Int(bitmap.bytes[i]) - Int(expected[i])) <= 2, "byte \(i): \(bitmap.bytes[i]) vs \(expected[i])")
            }
        }
        #expect(bitmap.bytes[8..<12].allSatisfy { $0 == 0 }, "a fully transparent pixel stays zero")
    }
}

/// One cached profile and its transform serve many threads at once.
@Suite(.enabled(if: Corpus.has(ICC.folder), Corpus.missing(ICC.folder)), .tags(.cpuBound))
struct ICCConcurrencyTests {
    @Test func concurrentDecodesShareOneProfile() throws {
        let files = ["ProPhotoRGB.jpg", "SwappedRedAndGreen.png", "AdobeRGB1998.webp"]
        let data = try files.map { try Corpus.data(ICC.folder, $0) }
        let expected = try files.map { try ICC.decode($0).bitmap }
        let results = Mutex([Int: Bitmap]())
        DispatchQueue.concurrentPerform(iterations: 12) { index in
            let file = index % files.count
            if let bitmap = try? ICC.decoder(for: files[file]).decode(data[file], options: DecodeOptions()).bitmap {
                results.withLock { $0[index] = bitmap }
            }
        }
        let all = results.withLock { $0 }
        #expect(all.count == 12)
        for (index, bitmap) in all { #expect(bitmap == expected[index % files.count], "\(files[index % files.count])") }
    }
}
