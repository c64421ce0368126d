import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The text helpers that let the package's modules link only FoundationEssentials give the
/// bytes full Foundation gave: each is compared with Foundation's own answer (this test target
/// links Foundation) over many inputs.
@Suite("Portable text")
struct PortableTextTests {
    /// Doubles where printf's rounding shows: halves (round-half-even on the binary value),
    /// values just beside them, negatives, signed zero, huge, tiny, NaN and infinities.
    static let doubles: [Double] = {
        var values: [Double] = [0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 0.05, 0.15, 0.25, 0.35, 0.45, 1.45, 2.675, 1.005,
                                0.125, 0.375, -0.125, 999.95, 9.995, 99.5, 1e15 + 0.5, 123456789.25, 1e300, -1e300, 1e-300,
                                .leastNonzeroMagnitude, .greatestFiniteMagnitude, .nan, -.nan, .infinity, -.infinity, 0.1 + 0.2, 1.0 / 3]
        var generator = SeededGenerator(seed: 39)
        for _ in 0..<3000 {
            let scale = [1.0, 10, 1000, 1e6, 0.001][Int(generator.next() % 5)]
            let value = (Double(generator.next() % 2_000_001) - 1_000_000) / 1000 * scale
            values.append(value)
            values.append((value * 20).rounded() / 20)  // exact tenths and twentieths: the .x5 cases
        }
        for tenth in -200...200 { values.append(Double(tenth) / 10 + 0.05) }
        return values
    }()

    @Test func printfFormatMatchesStringFormatForDoubles() {
        for format in ["%.1f", "%.2f", "%.0f", "%g", "%.1f MiB", ", %.2f s", "%.0f ms", "%.0fs "] {
            for value in Self.doubles {
                #expect(printfFormat(format, value) == String(format: format, value), "\(format) of \(value)")
            }
        }
    }

    @Test func printfFormatMatchesStringFormatForIntegers() {
        let integers = [0, 1, -1, 7, 42, 99, 100, 999, 1000, 9999, 10000, 65535, 65536, Int(Int32.max), Int(Int32.min), -123]
        for format in ["%d", "%02d", "%04d", "frame-%04d.", "preview-%02d.png", "step-%02d-"] {
            for value in integers { #expect(printfFormat(format, value) == String(format: format, value), "\(format) of \(value)") }
        }
        for value: UInt32 in [0, 1, 0x7F, 0xDEAD_BEEF, .max] {
            #expect(printfFormat("0x%08X", value) == String(format: "0x%08X", value))
        }
        for unit: UInt16 in [0, 0x7F, 0x9B, 0x202E, 0xD83D, 0xFFFF] {
            #expect(printfFormat("\\u%04x", unit) == String(format: "\\u%04x", unit))
        }
        let mixed = "%d pictures in %.2f s: %d from memory, %d from disk, %d revalidated, %d loaded ("
        #expect(printfFormat(mixed, 12, 3.456, 1, 2, 3, 6) == String(format: mixed, 12, 3.456, 1, 2, 3, 6))
        #expect(printfFormat("%d/%d  %.1f/s  ETA %.0fs ", 5, 9, 12.25, 0.5) == String(format: "%d/%d  %.1f/s  ETA %.0fs ", 5, 9, 12.25, 0.5))
        let long = String(repeating: "x", count: 300) + "%d"  // longer than the first buffer
        #expect(printfFormat(long, 7) == String(format: long, 7))
    }

    /// Every White_Space and Zs scalar, and some that are neither, around and inside text.
    static let trimSamples: [String] = {
        let scalars = (0...0x3000).compactMap(Unicode.Scalar.init).filter { $0.properties.isWhitespace || $0.value < 0x21 }
        var samples = ["", " ", "abc", "  a b  ", "\t\n x \r\n", "\u{85}y\u{2028}", "\u{A0}z\u{3000}", " \u{301}a", "a \u{301}", "\r\n"]
        for scalar in scalars + ["\u{200B}", "\u{FEFF}", "x"] {
            samples.append("\(scalar)mid\(scalar)dle\(scalar)")
            samples.append("\(scalar)\(scalar)")
        }
        return samples
    }()

    @Test func trimmingMatchesFoundation() {
        for text in Self.trimSamples {
            #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespacesAndNewlines), "\(text.unicodeScalars.map(\.value))")
            #expect(text.trimmingSpacesAndTabs() == text.trimmingCharacters(in: .whitespaces), "\(text.unicodeScalars.map(\.value))")
            #expect(text[...].trimmingWhitespace() == text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    @Test func percentEncodingMatchesFoundation() {
        let ascii = String(String.UnicodeScalarView((0..<128).compactMap(Unicode.Scalar.init)))
        let samples = [ascii, "", "café/東京?x=1#y", "a b%20c", "👨‍👩‍👧", "[::1]:80/ü", ":", "a:b", "a/b:c", "/:x", "a:b/c:d", "x y:z/w"]
        let sets: [(PercentEncodingSet, CharacterSet)] = [
            (.urlPathAllowed, .urlPathAllowed),
            (.urlQueryAllowed.union(PercentEncodingSet("#%[]")), CharacterSet.urlQueryAllowed.union(CharacterSet(charactersIn: "#%[]"))),
            (.unreserved, CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")),
        ]
        for (ours, foundation) in sets {
            for text in samples {
                #expect(text.percentEncoded(allowing: ours) == text.addingPercentEncoding(withAllowedCharacters: foundation), "\(text)")
            }
        }
    }

    @Test func removingPercentEscapesMatchesFoundation() {
        let samples = ["", "plain", "a%20b", "%2F%2f", "%E6%9D%B1%E4%BA%AC", "%", "%2", "%G1", "a%zz", "%FF", "%C3", "%C3%A9", "%00x",
                       "100%", "%%", "%25", "caf%C3%A9%2Fx", "%e2%80%ae"]
        for text in samples {
            #expect(text.removingPercentEscapes == text.removingPercentEncoding, "\(text)")
        }
    }

    @Test func asciiReplacementMatchesFoundation() {
        let cases: [(String, String, String)] = [("a%sb%s", "%s", "X"), ("%2E%2e%2F", "%2e", "."), ("a\\b", "\\", "/"), ("Big_One", "_", "-"),
                                                 (".jpg, .png", ".", ""), ("é%sé", "%s", "東"), ("", "x", "y"), ("xxx", "xx", "y")]
        for (text, target, replacement) in cases {
            #expect(text.replacingOccurrences(ofASCII: target, with: replacement) == text.replacingOccurrences(of: target, with: replacement))
            #expect(text.replacingOccurrences(ofASCII: target, with: replacement, caseInsensitive: true)
                    == text.replacingOccurrences(of: target, with: replacement, options: .caseInsensitive))
        }
    }

    enum SampleError: Error { case plain, carrying(Int) }

    struct Described: LocalizedError {
        var errorDescription: String? { "described" }
    }

    struct Reasoned: LocalizedError {
        var failureReason: String? { "the reason" }
    }

    @Test func localizedDescriptionMatchesFoundation() {
        var errors: [any Error] = [SampleError.plain, SampleError.carrying(3), Described(), Reasoned(), CancellationError()]
        errors += (0..<5000).map { CocoaError(CocoaError.Code(rawValue: $0)) }
        errors += [CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: "/x", NSUnderlyingErrorKey: POSIXError(.ENOENT)])]
        errors += [POSIXErrorCode.ENOENT, .EACCES, .EISDIR, .ENOSPC, .EPIPE].map { POSIXError($0) }
        do {
            _ = try Data(contentsOf: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)"))
        } catch {
            errors.append(error)
        }
        for error in errors {
            #expect(localizedDescription(of: error) == error.localizedDescription, "\(error)")
        }
    }

    @Test func urlErrorsAreKnownByTheirCodes() {
        #expect(ImagePipelineError.Kind(URLError(.timedOut)) == .timedOut)
        #expect(ImagePipelineError.Kind(URLError(.cancelled)) == .cancelled)
        #expect(ImagePipelineError.Kind(URLError(.fileDoesNotExist)) == .notFound)
        #expect(ImagePipelineError.Kind(URLError(.noPermissionsToReadFile)) == .refused)
        #expect(ImagePipelineError.Kind(URLError(.fileIsDirectory)) == .refused)
        #expect(ImagePipelineError.Kind(URLError(.dataLengthExceedsMaximum)) == .overLimit)
        #expect(ImagePipelineError.Kind(URLError(.badServerResponse)) == .failed)
    }

    @Test func jsonTextMatchesJSONSerialization() throws {
        let row: [String: Any] = [
            "source": "a/b c.jpg", "format": "jpeg", "width": 640, "height": -1, "alpha": false, "progressive": true,
            "bytes": 123_456_789_012, "storedWidth": 1, "storedHeight": 2, "colorSpace": "RGB", "content_type": "image/jpeg",
            "profile": ["colorSpace": "RGB", "bytes": 3144, "description": "sRGB \"IEC\" \\ \u{1B}[31m\u{7F}\u{9B}\u{202E}\u{0}\u{1F}\t\n\r\u{8}\u{C}"],
            "durations": [0.5, 1.0, 100.0, 1e-7, 1234.5678, -0.0], "empty": [String: Any](), "none": [Any](),
            "a10": 1, "a9": 2, "A1": 3, "a_b": 4, "aB": 5, "ab": 6, "Ab": 7, "AB": 8, "e": 9, "Z": 10, "z": 11, "a b": 12,
            "a-b": 13, "a.b": 14, "a02": 15, "a2": 16, "abC": 17, "aBc": 18, "_": 19, "-": 20, "0": 21, "a": 22, "A": 23,
            "durationMs": 24, "loopCount": 25, "thumbhash": 26, "blurhash": 27, "orientation": 28, "frames": 29,
        ]
        let objects: [Any] = [row, [row, [1, "x/y"]], [String: Any](), [Any](), ["nested": ["deeper": [[String: Any]()]]]]
        for object in objects {
            for (pretty, slashes) in [(false, true), (true, false), (true, true), (false, false)] {
                var options: JSONSerialization.WritingOptions = [.sortedKeys]
                if pretty { options.insert(.prettyPrinted) }
                if !slashes { options.insert(.withoutEscapingSlashes) }
                let foundation = String(decoding: try JSONSerialization.data(withJSONObject: object, options: options), as: UTF8.self)
                #expect(try jsonText(object, prettyPrinted: pretty, escapingSlashes: slashes) == foundation)
            }
        }
        let withNull: [String: Any] = ["loopCount": JSONNull(), "frames": 3]
        let withNSNull: [String: Any] = ["loopCount": NSNull(), "frames": 3]
        #expect(try jsonText(withNull, prettyPrinted: true)
                == String(decoding: try JSONSerialization.data(withJSONObject: withNSNull, options: [.sortedKeys, .prettyPrinted]), as: UTF8.self))
        #expect(throws: JSONTextError.self) { try jsonText(["x": Double.nan]) }
    }

    @Test func pathTextMatchesNSString() {
        let paths = ["", "/", "//", "ab", "/a", "/a/", "a/b", "a//b", "a/b/", "/a/b.c", ".hidden", "a/.hidden", "x.", "a.b.c", "/tmp//x.png/",
                     "..", "../x", "a/b.c/", "dir.d/file", "é/ü.jpg", "/x//", "a.b/c", "a.b c", "a..", "a.jpg ", "thumbs/tn_%s.jpg"]
        for path in paths {
            let ns = path as NSString
            #expect(PathText.lastComponent(path) == ns.lastPathComponent, "\(path)")
            #expect(PathText.pathExtension(path) == ns.pathExtension, "\(path)")
            // Foundation 6.3 traps on a one-character name here ("a", "a/", "./"): not compared.
            #expect(PathText.deletingLastComponent(path) == ns.deletingLastPathComponent, "\(path)")
            for component in ["f.png", "/g/", "", "*.jpg"] {
                #expect(PathText.appending(path, component) == ns.appendingPathComponent(component), "\(path) + \(component)")
            }
        }
        #expect(PathText.deletingLastComponent("a") == "")
        #expect(PathText.deletingLastComponent("./") == "")
    }
}
