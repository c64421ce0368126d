import CodecJPEG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// libjpeg-turbo's command-line tools (Debian `libjpeg-turbo-progs`, in `scripts/bootstrap`).
enum JPEGTools {
    static let djpeg = ["/usr/bin/djpeg", "/usr/local/bin/djpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let cjpeg = ["/usr/bin/cjpeg", "/usr/local/bin/cjpeg"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static var available: Bool { djpeg != nil && cjpeg != nil }
    static let missing: Comment = "djpeg/cjpeg are not installed (Debian libjpeg-turbo-progs; scripts/bootstrap installs it): skipped"

    /// Runs `tool` with `arguments` on `input` (written to a temporary file, whose path is the
    /// last argument) and returns its standard output.
    static func run(_ tool: String?, _ arguments: [String], input: Data) throws -> Data {
        let tool = try #require(tool)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("jpegenc-\(UUID().uuidString)")
        try input.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("jpegenc-out-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: out) }
        try #require(try ExternalTool.runBlocking(tool, arguments + ["-outfile", out.path, file.path]).status == 0,
                     "\(tool) \(arguments) failed")
        return try Data(contentsOf: out)
    }

    /// `djpeg -pnm` of `jpeg`: the independent decoder's pixels, as an opaque bitmap.
    static func decode(_ jpeg: Data) throws -> Bitmap {
        try #require(Fixtures.ppm(run(djpeg, ["-pnm", "-rgb", "-dct", "int"], input: jpeg)), "djpeg wrote no P6 PPM")
    }

    /// A P6 PPM of the bitmap's colour (for cjpeg).
    static func ppm(_ bitmap: Bitmap) -> Data {
        var data = Data("P6\n\(bitmap.width) \(bitmap.height)\n255\n".utf8)
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap.pixel(x: x, y: y)
                data.append(contentsOf: [p.r, p.g, p.b])
            }
        }
        return data
    }
}

/// Markers of a JPEG stream, read the simple way (enough for files libjpeg writes).
struct JPEGMarkers {
    /// The start-of-frame marker's second byte (0xC0 baseline, 0xC1 extended, 0xC2 progressive).
    var frameType: UInt8?
    /// (component id, horizontal factor, vertical factor) from the frame header.
    var components: [(id: UInt8, h: UInt8, v: UInt8)] = []
    /// How many scans (SOS markers) the file holds.
    var scans = 0
    /// Every marker seen before the first scan, e.g. 0xE0 (APP0/JFIF), 0xE1 (APP1/EXIF).
    var headerMarkers: [UInt8] = []

    init(_ data: Data) {
        let b = [UInt8](data)
        var i = 2
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { i += 1; continue }
            let marker = b[i + 1]
            if marker == 0xD9 { break }
            if marker == 0xFF || marker == 0x00 || (0xD0...0xD7).contains(marker) { i += 2; continue }
            let length = Int(b[i + 2]) << 8 | Int(b[i + 3])
            if scans == 0 { headerMarkers.append(marker) }
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC, frameType == nil, i + 10 <= b.count {
                frameType = marker
                let count = Int(b[i + 9])
                for c in 0..<count where i + 12 + c * 3 < b.count {
                    let factors = b[i + 11 + c * 3]
                    components.append((b[i + 10 + c * 3], factors >> 4, factors & 15))
                }
            }
            if marker == 0xDA {
                scans += 1
                // Skip the entropy-coded data: to the next marker that is not a stuffed byte or RST.
                i += 2 + length
                while i + 1 < b.count, !(b[i] == 0xFF && b[i + 1] != 0 && !(0xD0...0xD7).contains(b[i + 1])) { i += 1 }
                continue
            }
            i += 2 + length
        }
    }
}

/// `JPEGEncoder` against libjpeg-turbo's own command-line decoder and encoder.
@Suite(.enabled(if: JPEGTools.available, JPEGTools.missing), .tags(.cpuBound))
struct JPEGEncoderTests {
    /// A photo when the corpus is present (libjpeg-turbo's `testorig.ppm`, 227×149: odd sizes,
    /// so partial MCUs are covered), else the smooth test pattern at an odd size.
    static func photo() throws -> Bitmap {
        if Corpus.has("jpeg"), let bitmap = Fixtures.ppm(try Corpus.data("jpeg", "testorig.ppm")) { return bitmap }
        return Fixtures.patternBitmap(width: 227, height: 149)
    }

    /// Round trip through `djpeg` at the right size, close to our pixels, and pixel-identical to
    /// what libjpeg-turbo's own `cjpeg` makes of the same pixels with the same settings (so no
    /// loss is ours: colour conversion, rows and subsampling are libjpeg's).
    ///
    /// Tolerance: PSNR ≥ 40 dB at q80 (4:2:0 and 4:2:2) and ≥ 45 dB at q95 4:4:4 against the
    /// source. `testorig` measures 43.1, 42.5 and 47.3 dB with libjpeg-turbo 2.1; the floors
    /// leave 2–3 dB for another libjpeg-turbo's rounding. A wrong channel order, stride or row
    /// lands under 15 dB; the exact check against cjpeg's output is the strict one.
    @Test(arguments: [(80, ChromaSubsampling.yuv420, 40.0), (95, .yuv444, 45.0), (80, .yuv422, 40.0)])
    func roundTripsThroughDjpegLikeCjpeg(quality: Int, subsampling: ChromaSubsampling, floor: Double) throws {
        let source = try Self.photo()
        let ours = try JPEGEncoder().encode(source, options: EncodeOptions(quality: quality, chromaSubsampling: subsampling))
        let decoded = try JPEGTools.decode(ours)
        #expect(decoded.size == source.size)
        let measured = psnr(decoded, source)
        #expect(measured >= floor, "PSNR \(measured) dB")
        let sample = switch subsampling { case .yuv420: "2x2"; case .yuv422: "2x1"; case .yuv444: "1x1" }
        let theirs = try JPEGTools.run(JPEGTools.cjpeg, ["-quality", "\(quality)", "-optimize", "-sample", sample,
                                                         "-dct", "int"], input: JPEGTools.ppm(source))
        let reference = try JPEGTools.decode(theirs)
        #expect(decoded == reference, "djpeg of ours and of cjpeg's differ: PSNR \(psnr(decoded, reference)) dB")
    }

    @Test func defaultsAreBaselineQuality80With420AndOptimisedTables() throws {
        let source = try Self.photo()
        let data = try JPEGEncoder().encode(source)
        let markers = JPEGMarkers(data)
        #expect(markers.frameType == 0xC0)
        #expect(markers.components.map(\.h) == [2, 1, 1] && markers.components.map(\.v) == [2, 1, 1])
        #expect(markers.headerMarkers.first == 0xE0, "a JFIF APP0 first")
        #expect(!markers.headerMarkers.contains(0xE1), "no EXIF: the pixels are upright")
        #expect(data == (try JPEGEncoder().encode(source, options: EncodeOptions(quality: 80, chromaSubsampling: .yuv420))))
        #expect(data == (try JPEGEncoder(quality: 80).encode(source, options: EncodeOptions(optimizesCoding: true))))
        #expect(data != (try JPEGEncoder(quality: 81).encode(source)))
    }

    @Test func progressiveIsSOF2WithSeveralScansAndDecodesToTheSamePixels() throws {
        let source = try Self.photo()
        let baseline = try JPEGEncoder().encode(source)
        let progressive = try JPEGEncoder().encode(source, options: EncodeOptions(progressive: true))
        let markers = JPEGMarkers(progressive)
        #expect(markers.frameType == 0xC2)
        #expect(markers.scans >= 5, "\(markers.scans) scans")
        #expect(JPEGMarkers(baseline).frameType == 0xC0 && JPEGMarkers(baseline).scans == 1)
        // The same quantised coefficients in another order: the same pixels.
        let decoded = try JPEGTools.decode(progressive)
        #expect(decoded.size == source.size)
        #expect(decoded == (try JPEGTools.decode(baseline)))
        #expect(try JPEGDecoder().readInfo(progressive).isProgressive)
    }

    @Test(arguments: [(ChromaSubsampling.yuv420, UInt8(2), UInt8(2)), (.yuv422, 2, 1), (.yuv444, 1, 1)])
    func subsamplingShowsInTheFrameHeader(_ subsampling: ChromaSubsampling, h: UInt8, v: UInt8) throws {
        let data = try JPEGEncoder().encode(try Self.photo(), options: EncodeOptions(chromaSubsampling: subsampling))
        let components = JPEGMarkers(data).components
        #expect(components.count == 3)
        #expect(components.first?.h == h && components.first?.v == v)
        #expect(components.dropFirst().allSatisfy { $0.h == 1 && $0.v == 1 })
    }

    /// A gray picture (R = G = B everywhere) is written with one component: the same pixels as
    /// `cjpeg -grayscale` makes of it, and a smaller file than its three-component encoding.
    @Test func grayPicturesAreOneComponentFiles() throws {
        let photo = try Self.photo()
        var bytes = [UInt8](repeating: 255, count: photo.width * photo.height * 4)
        for y in 0..<photo.height {
            for x in 0..<photo.width {
                let p = photo.pixel(x: x, y: y), i = (y * photo.width + x) * 4
                bytes[i] = p.g; bytes[i + 1] = p.g; bytes[i + 2] = p.g
            }
        }
        let gray = try #require(Bitmap(width: photo.width, height: photo.height, bytesPerRow: photo.width * 4, bytes: bytes))
        let ours = try JPEGEncoder().encode(gray)
        #expect(JPEGMarkers(ours).components.count == 1)
        let decoded = try JPEGTools.decode(ours)
        #expect(decoded.size == gray.size && psnr(decoded, gray) >= 40, "PSNR \(psnr(decoded, gray)) dB")
        let theirs = try JPEGTools.run(JPEGTools.cjpeg, ["-quality", "80", "-optimize", "-grayscale", "-dct", "int"],
                                       input: JPEGTools.ppm(gray))
        #expect(decoded == (try JPEGTools.decode(theirs)))
        let colour = try JPEGTools.run(JPEGTools.cjpeg, ["-quality", "80", "-optimize", "-dct", "int"], input: JPEGTools.ppm(gray))
        #expect(ours.count < colour.count, "\(ours.count) vs \(colour.count) bytes")
        // One coloured pixel makes it a colour file.
        bytes[0] = 200
        let tinted = try #require(Bitmap(width: gray.width, height: gray.height, bytesPerRow: gray.bytesPerRow, bytes: bytes))
        #expect(JPEGMarkers(try JPEGEncoder().encode(tinted)).components.count == 3)
        // Over a coloured background an opaque gray picture stays gray, a translucent one does not.
        let red = JPEGEncoder(background: JPEGEncoder.Background(red: 255, green: 0, blue: 0))
        #expect(JPEGMarkers(try red.encode(gray)).components.count == 1)
        var translucentBytes = [UInt8](repeating: 0, count: 16 * 16 * 4)
        for i in stride(from: 0, to: translucentBytes.count, by: 4) { translucentBytes[i + 3] = 128 }
        let translucent = try #require(Bitmap(width: 16, height: 16, bytesPerRow: 64, bytes: translucentBytes))
        #expect(JPEGMarkers(try red.encode(translucent)).components.count == 3)
        #expect(JPEGMarkers(try JPEGEncoder().encode(translucent)).components.count == 1)
    }

    @Test func higherQualityMakesBiggerFiles() throws {
        let source = try Self.photo()
        let sizes = try [5, 20, 40, 60, 80, 90, 100].map { try JPEGEncoder().encode(source, options: EncodeOptions(quality: $0)).count }
        #expect(zip(sizes, sizes.dropFirst()).allSatisfy { $0 < $1 }, "sizes \(sizes)")
        // Quality 0 is libjpeg's 1 (its scale starts there).
        #expect(try JPEGEncoder().encode(source, options: EncodeOptions(quality: 0))
                == JPEGEncoder().encode(source, options: EncodeOptions(quality: 1)))
    }

    @Test func optimisedTablesAreSmallerWithTheSamePixels() throws {
        let source = try Self.photo()
        let optimised = try JPEGEncoder().encode(source)
        let standard = try JPEGEncoder().encode(source, options: EncodeOptions(optimizesCoding: false))
        #expect(optimised.count < standard.count, "\(optimised.count) vs \(standard.count) bytes")
        #expect(try JPEGTools.decode(optimised) == JPEGTools.decode(standard))
    }

    /// Semi-transparent pixels are composited over black (premultiplied colour as stored) by
    /// default, over white when asked. Flat 16×16 blocks at q100 4:4:4: within ±2 (DCT rounding).
    @Test func alphaIsCompositedOverTheBackground() throws {
        let side = 32
        var rgba = [UInt8](repeating: 0, count: side * side * 4)
        for y in 0..<side {
            for x in 0..<side {
                let i = (y * side + x) * 4
                // Left half: straight (200, 100, 40) at alpha 128, premultiplied; right half: transparent.
                if x < 16 { rgba[i] = 100; rgba[i + 1] = 50; rgba[i + 2] = 20; rgba[i + 3] = 128 }
            }
        }
        let bitmap = try #require(Bitmap(width: side, height: side, bytesPerRow: side * 4, bytes: rgba))
        let best = EncodeOptions(quality: 100, chromaSubsampling: .yuv444)
        let black = try JPEGTools.decode(JPEGEncoder().encode(bitmap, options: best))
        let white = try JPEGTools.decode(JPEGEncoder(background: .white).encode(bitmap, options: best))
        func close(_ p: (r: UInt8, g: UInt8, b: UInt8, a: UInt8), _ e: (Int, Int, Int)) -> Bool {
            abs(Int(p.r) - e.0) <= 2 && abs(Int(p.g) - e.1) <= 2 && abs(Int(p.b) - e.2) <= 2
        }
        #expect(close(black.pixel(x: 4, y: 4), (100, 50, 20)), "\(black.pixel(x: 4, y: 4))")
        #expect(close(black.pixel(x: 28, y: 4), (0, 0, 0)), "\(black.pixel(x: 28, y: 4))")
        // Over white: 100 + 255 × 127/255 = 227, 50 + 127 = 177, 20 + 127 = 147.
        #expect(close(white.pixel(x: 4, y: 4), (227, 177, 147)), "\(white.pixel(x: 4, y: 4))")
        #expect(close(white.pixel(x: 28, y: 4), (255, 255, 255)), "\(white.pixel(x: 28, y: 4))")
    }

    @Test func invalidOptionsAreTypedErrors() throws {
        let bitmap = Fixtures.patternBitmap(width: 16, height: 16)
        for options in [EncodeOptions(quality: 101), EncodeOptions(quality: -1), EncodeOptions(lossless: true),
                        EncodeOptions(effort: 7)] {
            #expect(throws: EncodingError.self, "\(options)") { try JPEGEncoder().encode(bitmap, options: options) }
            do {
                _ = try JPEGEncoder().encode(bitmap, options: options)
            } catch let error as EncodingError {
                guard case .invalidOptions(format: .jpeg, _) = error else {
                    Issue.record("expected .invalidOptions, got \(error)")
                    continue
                }
            }
        }
        #expect(throws: EncodingError.self) { try JPEGEncoder(quality: 150).encode(bitmap) }
    }

    @Test func sizesJPEGCannotHoldAreUnsupported() throws {
        let wide = try #require(Bitmap(width: 65_501, height: 1, bytesPerRow: 65_501 * 4,
                                       bytes: [UInt8](repeating: 255, count: 65_501 * 4)))
        let error = #expect(throws: EncodingError.self) { try JPEGEncoder().encode(wide) }
        guard case .unsupported(format: .jpeg, _)? = error else {
            Issue.record("expected .unsupported, got \(String(describing: error))")
            return
        }
        // The widest JPEG there is still encodes.
        let widest = try #require(Bitmap(width: 65_500, height: 1, bytesPerRow: 65_500 * 4,
                                         bytes: [UInt8](repeating: 255, count: 65_500 * 4)))
        #expect(try JPEGTools.decode(JPEGEncoder().encode(widest)).size == widest.size)
    }

    /// A bitmap whose rows are padded: the padding is never read as pixels.
    @Test func paddedRowsAreWrittenRowByRow() throws {
        let source = Fixtures.patternBitmap(width: 37, height: 23)
        var padded = [UInt8](repeating: 0x55, count: 23 * 160)
        source.withUnsafeBytes { bytes in
            for y in 0..<23 { for i in 0..<(37 * 4) { padded[y * 160 + i] = bytes[y * source.bytesPerRow + i] } }
        }
        let bitmap = try #require(Bitmap(width: 37, height: 23, bytesPerRow: 160, bytes: padded))
        let options = EncodeOptions(quality: 90)
        #expect(try JPEGEncoder().encode(bitmap, options: options) == JPEGEncoder().encode(source, options: options))
        #expect(try JPEGTools.decode(JPEGEncoder().encode(bitmap)).size == PixelSize(width: 37, height: 23))
    }

    /// Rows go from the bitmap to libjpeg without a copy: with standard tables libjpeg streams
    /// (a few MCU rows), so a 3000×2000 (24 MB) bitmap's encode grows the peak by less than
    /// 4 MB plus the output. Optimised tables (the default) make libjpeg keep every DCT
    /// coefficient for its second pass: about 2 bytes a sample, 18 MB here at 4:2:0, still
    /// under one copy of the bitmap.
    @Test func encodingStreamsRowsFromTheBitmap() async throws {
        try await ResidentMemory.exclusively {
            let bitmap = Fixtures.patternBitmap(width: 3000, height: 2000)
            var size = 0
            let streaming = try #require(try ResidentMemory.peakGrowth(attempts: 3) {
                size = try JPEGEncoder().encode(bitmap, options: EncodeOptions(optimizesCoding: false)).count
            }, "cannot measure the peak RSS on this system")
            #expect(streaming < 4_000_000 + 2 * size, "standard tables: the peak grew by \(streaming) bytes (output \(size))")
            let optimised = try #require(try ResidentMemory.peakGrowth(attempts: 3) {
                size = try JPEGEncoder().encode(bitmap).count
            })
            #expect(optimised < bitmap.cost, "optimised tables: the peak grew by \(optimised) bytes (output \(size))")
        }
    }

    @Test func registeredEncoderIsFoundByFormat() throws {
        let registry = EncoderRegistry().registering(JPEGEncoder(quality: 60))
        let bitmap = Fixtures.patternBitmap(width: 20, height: 10)
        #expect(try registry.encode(bitmap, as: .jpeg) == JPEGEncoder(quality: 60).encode(bitmap))
        #expect(throws: EncodingError.noEncoder(format: .png)) { try registry.encode(bitmap, as: .png) }
    }
}
