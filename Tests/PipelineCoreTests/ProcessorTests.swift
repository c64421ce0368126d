import Foundation
@testable import PipelineCore
import PipelineTestSupport
import Synchronization
import Testing

/// A bitmap filled with one straight (unpremultiplied) colour.
private func solid(_ width: Int, _ height: Int, _ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8 = 255) -> Bitmap {
    let pm = { (c: UInt8) in UInt8((Double(c) * Double(a) / 255).rounded()) }
    let bytes = [UInt8]((0..<(width * height)).flatMap { _ in [pm(r), pm(g), pm(b), a] })
    return Bitmap(width: width, height: height, bytesPerRow: width * 4, bytes: bytes)!
}

/// Every pixel keeps the premultiplied invariant: no colour above its alpha.
private func isPremultiplied(_ bitmap: Bitmap) -> Bool {
    (0..<bitmap.height).allSatisfy { y in
        (0..<bitmap.width).allSatisfy { x in
            let p = bitmap.pixel(x: x, y: y)
            return p.r <= p.a && p.g <= p.a && p.b <= p.a
        }
    }
}

/// The opaque pattern `Benchmarks/processors.py --reference` blurs with Pillow.
private func pattern32() -> Bitmap {
    var bytes = [UInt8]()
    for y in 0..<32 {
        for x in 0..<32 {
            bytes += [UInt8((x * 37 + y * 91) % 256), (x / 8 + y / 8) % 2 == 1 ? 255 : 0, UInt8((x * y) % 256), 255]
        }
    }
    return Bitmap(width: 32, height: 32, bytesPerRow: 128, bytes: bytes)!
}

/// Pillow 13's `pattern.filter(ImageFilter.GaussianBlur(2.0)).tobytes()` (RGB) for `pattern32()`. (One line: swift-format ignores it.)
// swift-format-ignore
private let pillowBlur2 = Data(base64Encoded: "VgAAXQABaAACcgIDegoEfBwFeDsHcmcHcZgJdMQKeeMLffMMf/MNe+MOdcQPdJgQd2cRfDsSgBwTggwUfgwVeBwWdzsXemcYf5gZg8QbheMcgPUde/0deP8fdv8gd/8gXQABYgACawADcwIEeQoGexwIeTsJdGcKc5gMdcQOeeMPffMQfvMSfOMTd8QVdpgXeGcYfDsZgBwbgQwcfwweehwfeTshe2cif5gkg8QmhOMngfUoff0qev8ref8sev8tZQACaQADbwAFdAIGeAoJehwLeTsNdmcPdpgSdsQUeeMWe/MYffMafOMcecQeeZgheWcjfDslfhwngAwpfwwrfBwufDswfGcyf5g0gcQ3g+M5gfU7f/09fv8/ff9Bfv9BbgIDcAIEcwIGdQQJdwwMeB4PeTwSeGgVeJcZeMMceeEfevEie/ElfOEoe8Mre5cue2gxfDw0fR43fg46fw49fh5AfjxDfmhGf5dJgMNMgeFPgfNSgftVgf1Ygv1agv1bdQoEdQoGdgoJdwwMdxMQdyQUeEAYeGkceZYgeL8kedsoeeoseuowe9s0e784fJY8e2lAfEBEfCRIfRVMfhVQfiRUf0BYfmlcf5Zgf79kgNtogexrgvNvg/VyhfV0hvV2exwFexwIehwLeR0PeCMUdzEZd0oeeGwjeZMoebUtec4yedo3edo8es5Be7VGfJNLfGxQfEpVfDFafCVffSVkfjFpf0puf2xzf5N3f7V8f86AgNyDguKHhOOJh+OLieONgDsGgDsJfjsNfDwSekAYeEoed1skd3IqeI0weaQ2ebU8eb1Ceb1IebVOeqRUe41afHJgfFtmfEpsfEJyfEJ4fUp+fluDf3KIf42Nf6SQf7WUf7+WgcOYg8SYhsSZicSbhGcIhGcKgmcPgGcVfWkcemwjeHIqd3sxd4Q4eI0/eZNGeZZNeZZUeZNbeY1ieoRpe3twfHJ3fGx+fGmFfGmLfGyRfXKWfnuaf4Sdf42ef5Off5aegJidgpichJibhpiah5gJh5gMhZgSg5gZgJYgfZMoeo0weIQ4d3tAd3JIeGxQeWlYeWlgeWxoeXJweXt4eoSAe42IfJOPfJaWfJacfJOhfI2kfYSlfnulf3Kif2yff2maf2eWgGeSgGePgmeOicQKiMQOh8QUhsMcg78kgLUtfaQ2eo0/eHJId1tRd0paeEJjeUJseUp1eVt+eXKHeY2PeqSYe7WefL2kfL2ofLWqfKSpfI2mfXKhfluaf0qSf0CMfzyGfjuAfTt9fTt7ieMLiOMPh+MWh+Efhdwog80ygLU8fZNGemxQeEpadzJkdyVueCV4eTKCeUqMeWyVeZOeebWles2qe9qtfNqsfM2qfLWjfJObfGySfUqJfjJ/fiN4fh5zfRxvexxtexxtifMMiPMQh/MYh/Eihuoshdk3g75CgJVNfWpYekFjeCZudxd5dxeEeCaPeUGZeWqieZWqeb6uedmveuise+imfNmefL6TfJWIfGp+fEF1fSZtfhVpfg5nfQxnewxoegxpifMNiPMShvMahvElhuowhtk8hb5Ig5VUgGpgfUFseiZ4eBeEdxeQdyabeEGleWqseZWxeb6xedmreeiieuiXe9mKfL5+fJVzfGprfEFmfCZjfBVlfQ5nfQxsewxwegxyieMOiOMThuMcheEohdw0hs1BhrVOhZNbg2xogEp1fTKCeiWPeCWbdzKmd0queGyyeZOxebWrec2fedqRedqCes11e7VqfJNkfGxhfEpifDJlfCNsfB5yfBx6exx/ehyDiMQPiMQVhsQehcMrhb84hbVGhqRUho1ihXJwg1t+gEqMfUKZekKleEqud1uyd3KweI2peaSdebWNeb18eb1uebVkeqRfe41ffHJjfFtpfEpxe0B6fDyDezuLezuQejuThpgQhpgXhZghhJguhJY8hJNLhY1ahoRphnt4hXKHg2yVgGmifWmsemyyeHKxd3upd4SbeI2KeZN4eZZqeZZgeZNdeY1feoRle3ttfHJ4fGyBe2mKfGeRe2eWe2eZemeagWcRg2cYg2cjhGcxhGlAhGxQhHJghXtwhoSAho2PhZOeg5aqgJaxfZOxeo2peISbd3uId3J2eGxneWleeWlceWxgeXJoeXtyeoR9e42HfJOPfJaUfJiXfJiXfJiWfJiUfTsSfzsZgTslgzw0hEBEhEpVhFtmhHJ3hY2IhqSXhrWlhb2ug72xgLWrfaSdeo2KeHJ2d1tnd0pdeEJceUJheUpreVt2eXKCeY2MeqSSe7WVe7+VfcOSfcSOfcSJfsSGehwTfRwbgBwngh43hCNIhDJahEpshGx+hJOPhbWehs2qhtqvhdqrg82fgLWNfZN4emxneEpedzJcdyVieCVteTJ6eUqGeWyReZOWebWWes2Te9yNfeGFfuN/gON5geN2egwUfAwcfwwpgQ46gxVMhCZfhEFyhGqFhJWWhL6khdmthuithuiihdmRg758gJVqfWpfekFceCZidxdtdxd8eCaJeUGUeWqaeZWZeb6SedmJeup/fPF3fvNxgfNug/NsfAwVfQwefwwrgA49ghVQgyZkhEF4hGqLhJWchL6ohNmsheimhuiXhtmChb5ug5VggGpcfUFheiZseBd8dxeKdyaWeEGceWqbeZWUeb6Jedl8eepze/FtffNrgPNtg/NufxwWgBwfgBwugB5AgiNUgjJpg0p+hGyRhJOhhLWqhM2phNqehdqKhs11hrVkhZNdg2xggEprfTJ6eiWJeCWWdzKdd0qdeGyWeZOKebV9ec1xedxseuFsfONvfuN1gON5gTsXgTshgTswgTxDgUBYgUpugluDg3KWhI2khKSphLWjhL2UhL1+hbVrhqRfho1fhXJog1t3gEqGfUKUekKceEqdd1uXd3KMeI1/eaRzebVteb9uecNzesR6esSBfMSGg2cYgmcigmcygWdGgmlcgWxzgXKIgnuag4SlhI2mhJObhJaJhJZzhJNlhY1fhoRlhntyhXKCg2yQgGmZfWmbemyWeHKMd3t/d4R1eI1veZNveZZ2eZh9eJiFd5iLd5iPg5gZgpgkgpg0gZhJgpZggZN4gY2NgYSdgnukg3KhhGyShGl+hGlrhGxihHJjhXtuhoR9ho2MhZOWg5aZgJaUfZOKeo1+eIR1d3twd3JxeGx4eGmAeGeId2eMdWeNdWeNg8QbgsQmgcQ3gcNMgb9kgbV8gaSQgY2fgXKigluag0qIhEJ1hEJmhEpjhFtqhHJ4hY2HhqSShrWXhb2Sg72JgLV9faRzeo1veHJxd1t5d0qCeECJeDyMdzuLdTuGdDuDg+McguMngOM5gOJPgdxogc6AgbWTgZOfgWyfgUqTgjGAgyVthCVkhDFmhEpyhGyBhJOPhbWWhs6ThtqJhdp8g85ygLVtfZNwemx4eEqCdzGLdyOOdx2LdhyEdRx8dBx2gvUdgfUof/U7f/NSf+xsgNuEgb+WgZaegWmbgUCMgSR4ghVpgxVlhCRshEB7hGmKhJaUhL+VhduNhup/hupyhdtsg79tgJZ1fGmAekCKeCSOdxOMdgyFdQp7dApydApsf/0ef/0qfv09fvtVfvNvf+GHgMOXgJedgGiWgDyFgB5zgQ5ngg5ogx5zgzyDg2iRg5eXg8OShOGGhfF2hvFtheFshMNzgpd9f2iIfDyNeh6LeAyFdgR8dAJ0cwJucgJreP8fef8rev8/fP1YfvVyf+OKf8SZf5icfmeTfzuAfxxvgQxnggxsghx6gjuLgWeWgpiXgsSOhON/hfNxhfNrheNwhMR6gpiFgWeMgDuLfRyEegp7dgJ0cgBwcABwbwByb/8fcv8sdv9Aev1affV1fuOMfsSZfZibfGeQfTt9fhxtgQxogQxwgRx/gDuQf2eYgJiWgcSJhON5hPNuhPNsg+N1gsSCgpiLgmeNgjuHgBx7fApydgJucQBwbQB2awB8Z/8gbP8tcv9BeP1bffV2f+ONfcSae5iaemeOezt7fRxsgQxpggxygByDfjuTfWeafpiVgMSGhON2hfNtg/NugeN5gMSHgZiOg2eNhDuCghx1fgpsdwJrcABxawB8aQCE")!

@Suite struct ProcessorPixelTests {
    @Test func circleIsTransparentOutsideOpaqueInsideAndAntialiasedBetween() throws {
        let out = try ImageProcessor.circle.process(solid(64, 40, 200, 100, 50))
        #expect(out.width == 40 && out.height == 40)
        var partial = 0
        for y in 0..<40 {
            for x in 0..<40 {
                let dx = Double(x) + 0.5 - 20, dy = Double(y) + 0.5 - 20
                let d = (dx * dx + dy * dy).squareRoot()
                let a = out.pixel(x: x, y: y).a
                if d > 20.5 { #expect(a == 0, "outside at \(x),\(y)") }
                if d < 19.5 { #expect(a == 255, "inside at \(x),\(y)") }
                if a > 0 && a < 255 { partial += 1 }
            }
        }
        #expect(partial > 40)  // an antialiased rim, not a staircase
        #expect(isPremultiplied(out))
        #expect(out.pixel(x: 20, y: 20) == (200, 100, 50, 255))
    }

    @Test func roundedCornersClearOnlyTheCorners() throws {
        let out = try ImageProcessor.roundedCorners(radius: 10).process(solid(50, 30, 10, 200, 30))
        #expect(out.width == 50 && out.height == 30)
        for (x, y) in [(0, 0), (49, 0), (0, 29), (49, 29), (1, 1)] { #expect(out.pixel(x: x, y: y).a == 0) }
        for (x, y) in [(25, 0), (0, 15), (49, 15), (25, 29), (10, 10), (5, 5)] {
            #expect(out.pixel(x: x, y: y) == (10, 200, 30, 255), "at \(x),\(y)")
        }
        #expect((1...254).contains(out.pixel(x: 3, y: 3).a) || (1...254).contains(out.pixel(x: 2, y: 3).a))
        #expect(isPremultiplied(out))
        // A radius over half the short side is clamped to a pill, not an error.
        let pill = try ImageProcessor.roundedCorners(radius: 1000).process(solid(50, 30, 10, 200, 30))
        #expect(pill.pixel(x: 0, y: 15).a > 0 && pill.pixel(x: 25, y: 0).a == 255)
        #expect(throws: ImageProcessingError.self) { try ImageProcessor.roundedCorners(radius: .nan).process(solid(4, 4, 0, 0, 0)) }
    }

    @Test func grayscaleIsRec709LumaOnPremultipliedValues() throws {
        let red = try ImageProcessor.grayscale.process(solid(2, 2, 255, 0, 0))
        #expect(red.pixel(x: 1, y: 1) == (54, 54, 54, 255))
        let green = try ImageProcessor.grayscale.process(solid(1, 1, 0, 255, 0))
        #expect(green.pixel(x: 0, y: 0) == (182, 182, 182, 255))
        let halfRed = try ImageProcessor.grayscale.process(solid(1, 1, 255, 0, 0, 128))
        #expect(halfRed.pixel(x: 0, y: 0) == (27, 27, 27, 128))
    }

    @Test func cropKeepsTheRectangleAndRejectsOneOutside() throws {
        var bytes = [UInt8]()
        for y in 0..<8 { for x in 0..<8 { bytes += [UInt8(x), UInt8(y), 0, 255] } }
        let bitmap = Bitmap(width: 8, height: 8, bytesPerRow: 32, bytes: bytes)!
        let out = try ImageProcessor.crop(PixelRect(x: 2, y: 3, width: 4, height: 10)).process(bitmap)
        #expect(out.width == 4 && out.height == 5)
        #expect(out.pixel(x: 0, y: 0) == (2, 3, 0, 255) && out.pixel(x: 3, y: 4) == (5, 7, 0, 255))
        #expect(throws: ImageProcessingError.self) {
            try ImageProcessor.crop(PixelRect(x: 20, y: 0, width: 4, height: 4)).process(bitmap)
        }
    }

    @Test func gaussianBlurMatchesPillowAwayFromTheEdges() throws {
        let out = try ImageProcessor.gaussianBlur(radius: 2).process(pattern32())
        let reference = [UInt8](pillowBlur2)
        var maxInterior = 0, total = 0
        for y in 0..<32 {
            for x in 0..<32 {
                let p = out.pixel(x: x, y: y)
                #expect(p.a == 255)
                for (c, v) in [p.r, p.g, p.b].enumerated() {
                    let d = abs(Int(v) - Int(reference[(y * 32 + x) * 3 + c]))
                    total += d
                    if (2..<30).contains(x) && (2..<30).contains(y) { maxInterior = max(maxInterior, d) }
                }
            }
        }
        // Pillow approximates with extended boxes and treats the border differently; the exact
        // kernel (rounded to the nearest level) is within 2 of it inside, 0.93 on average.
        #expect(maxInterior <= 2, "max difference \(maxInterior)")
        #expect(Double(total) / Double(32 * 32 * 3) <= 1.0)
    }

    @Test func largeBlurRadiiStayCloseToTheExactGaussian() throws {
        // Above a standard deviation of 12 the box approximation runs: compare it (forced, at a
        // radius that fits this picture) with the exact 2-D Gaussian (edges extended) in Double.
        let input = pattern32(), sigma = 4.0, reach = 12
        let out = BoxBlurApproximation.blur(input, sigma: sigma)
        let k = (-reach...reach).map { exp(-Double($0 * $0) / (2 * sigma * sigma)) }
        let total = k.reduce(0, +)
        var worst = 0.0
        for y in 8..<24 {
            for x in 8..<24 {
                var exact = 0.0
                for j in -reach...reach {
                    for i in -reach...reach {
                        let p = input.pixel(x: min(max(x + i, 0), 31), y: min(max(y + j, 0), 31))
                        exact += k[j + reach] * k[i + reach] * Double(p.r)
                    }
                }
                worst = max(worst, abs(exact / (total * total) - Double(out.pixel(x: x, y: y).r)))
            }
        }
        #expect(worst <= 1.5, "worst difference \(worst)")
    }

    @Test func gaussianBlurDoesNotDarkenTransparentEdges() throws {
        // Left half opaque red, right half transparent: with premultiplied pixels the fringe
        // fades in alpha but stays red (straight blur of RGBA would darken it towards black).
        var bytes = [UInt8]()
        for _ in 0..<16 { for x in 0..<16 { bytes += x < 8 ? [255, 0, 0, 255] : [0, 0, 0, 0] } }
        let out = try ImageProcessor.gaussianBlur(radius: 2).process(Bitmap(width: 16, height: 16, bytesPerRow: 64, bytes: bytes)!)
        #expect(isPremultiplied(out))
        let straight = out.unpremultipliedBytes()
        for x in 0..<16 {
            let i = (8 * 16 + x) * 4
            guard straight[i + 3] >= 8 else { continue }
            #expect(straight[i] >= 250 && straight[i + 1] <= 4, "x=\(x): \(straight[i..<(i + 4)])")
        }
        #expect(out.pixel(x: 7, y: 8).a < 255 && out.pixel(x: 8, y: 8).a > 0)
    }

    @Test func identifiersNameTheParameters() {
        #expect(ImageProcessor.gaussianBlur(radius: 2) == .gaussianBlur(radius: 2))
        #expect(ImageProcessor.gaussianBlur(radius: 2) != .gaussianBlur(radius: 3))
        #expect(ImageProcessor.roundedCorners(radius: 4).identifier != ImageProcessor.circle.identifier)
    }
}

/// The custom processor of the Processors and renditions article (same body): sepia by the classic matrix, clamped to alpha.
struct Sepia: ImageProcessing {
    var identifier: String { "sepia" }
    func process(_ bitmap: Bitmap) throws -> Bitmap {
        var out = bitmap
        out.withUnsafeMutableBytes { p in
            for i in stride(from: 0, to: p.count, by: 4) {
                let (r, g, b, a) = (Double(p[i]), Double(p[i + 1]), Double(p[i + 2]), Double(p[i + 3]))
                p[i] = UInt8(min(a, 0.393 * r + 0.769 * g + 0.189 * b).rounded())
                p[i + 1] = UInt8(min(a, 0.349 * r + 0.686 * g + 0.168 * b).rounded())
                p[i + 2] = UInt8(min(a, 0.272 * r + 0.534 * g + 0.131 * b).rounded())
            }
        }
        return out
    }
}

extension ImageProcessing where Self == Sepia {
    /// `.sepia`, as an app would spell its own processor beside `.circle`.
    static var sepia: Sepia { Sepia() }
}

/// Counts its runs and optionally fails; identifies itself by `name`.
final class CountingProcessor: ImageProcessing {
    let name: String, fails: Bool
    private let runs = Mutex(0)
    init(_ name: String, fails: Bool = false) { self.name = name; self.fails = fails }
    var identifier: String { name }
    var runCount: Int { runs.withLock { $0 } }
    struct Failure: Error, Equatable {}
    func process(_ bitmap: Bitmap) throws -> Bitmap {
        runs.withLock { $0 += 1 }
        if fails { throw Failure() }
        return bitmap
    }
}

/// A processor whose failure says it is temporary (`isPermanent` false).
final class TemporaryFailureProcessor: ImageProcessing {
    private let runs = Mutex(0)
    var identifier: String { "flaky" }
    var runCount: Int { runs.withLock { $0 } }
    struct Failure: Error, PipelineFailure { var isPermanent: Bool { false } }
    func process(_ bitmap: Bitmap) throws -> Bitmap {
        runs.withLock { $0 += 1 }
        throw Failure()
    }
}

@Suite struct ProcessorPipelineTests {
    @Test func equalListsShareOneEntryAndDifferentListsNever() async throws {
        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]))
        let url = testURL(64, 64, 3)
        let round = ImageRequest(url: url, width: 32, height: 32, processors: [.circle])
        let roundBlur = ImageRequest(url: url, width: 32, height: 32, processors: [.circle, .gaussianBlur(radius: 1)])
        let blurRound = ImageRequest(url: url, width: 32, height: 32, processors: [.gaussianBlur(radius: 1), .circle])
        let sepia = ImageRequest(url: url, width: 32, height: 32, processors: [Sepia()])
        let keys = [round, roundBlur, blurRound, sepia].map { pipeline.key(for: $0) }
        #expect(Set(keys).count == 4)
        #expect(keys[3].processors.map(\.identifier) == ["sepia"])
        #expect(pipeline.key(for: round) == pipeline.key(for: ImageRequest(url: url, width: 32, height: 32, processors: [.circle])))

        let a = try await pipeline.image(for: round)
        let b = try await pipeline.image(for: roundBlur)
        let c = try await pipeline.image(for: sepia)
        let again = try await pipeline.image(for: ImageRequest(url: url, width: 32, height: 32, processors: [.circle]))
        #expect(a.bitmap.pixel(x: 0, y: 0).a == 0 && c.bitmap.pixel(x: 0, y: 0).a == 255)
        #expect(b.bitmap != a.bitmap)
        #expect(again.source == .memory && again.bitmap == a.bitmap)
        // One download and one decode served all three processor lists.
        #expect(loader.totalLoads == 1 && decoder.decodeCount == 1)
    }

    @Test func concurrentRequestsShareOneProcessingRunPerList() async throws {
        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder(delay: 0.01)
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]))
        let p1 = CountingProcessor("p1"), p2 = CountingProcessor("p2")
        let url = testURL(40, 40, 9)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<40 {
                let processor = i % 2 == 0 ? p1 : p2
                group.addTask { _ = try await pipeline.image(for: ImageRequest(url: url, width: 20, height: 20, processors: [processor])) }
            }
            try await group.waitForAll()
        }
        #expect(p1.runCount == 1 && p2.runCount == 1)
        #expect(loader.totalLoads == 1 && decoder.decodeCount == 1)
    }

    @Test func aProcessorsErrorIsWrappedWithTheURL() async throws {
        let pipeline = makePipeline(loader: HeldLoader.immediate())
        let url = testURL(16, 16, 1)
        let failing = CountingProcessor("broken", fails: true)
        await #expect(throws: ImagePipelineError.processingFailed(url, underlying: CountingProcessor.Failure())) {
            _ = try await pipeline.image(for: ImageRequest(url: url, width: 8, height: 8, processors: [failing]))
        }
        // The unprocessed decode still serves a request without the processor.
        let plain = try await pipeline.image(for: ImageRequest(url: url, width: 8, height: 8))
        #expect(plain.source == .memory)
    }

    /// A processor that throws for a key is remembered like a decode failure: the next request
    /// for that key fails at once without running it again; other keys and a temporary error
    /// (a `PipelineFailure` that says so) are not affected; `removeAllFailures()` forgets it.
    @Test func aProcessorsFailureIsRememberedForItsKey() async throws {
        let loader = HeldLoader.immediate()
        let decoder = CountingDecoder()
        let pipeline = makePipeline(loader: loader, decoders: DecoderRegistry([decoder]))
        let url = testURL(16, 16, 2)
        let failing = CountingProcessor("broken", fails: true)
        let request = ImageRequest(url: url, width: 8, height: 8, processors: [failing])
        for _ in 0..<3 {
            await #expect(throws: ImagePipelineError.processingFailed(url, underlying: CountingProcessor.Failure())) {
                _ = try await pipeline.image(for: request)
            }
        }
        #expect(failing.runCount == 1)
        #expect(pipeline.rememberedFailureCount == 1)
        // Another size is another key: it runs.
        _ = try? await pipeline.image(for: ImageRequest(url: url, width: 4, height: 4, processors: [failing]))
        #expect(failing.runCount == 2)
        await pipeline.removeAllFailures()
        _ = try? await pipeline.image(for: request)
        #expect(failing.runCount == 3)

        let flaky = TemporaryFailureProcessor()
        let retried = ImageRequest(url: url, width: 8, height: 8, processors: [flaky])
        _ = try? await pipeline.image(for: retried)
        _ = try? await pipeline.image(for: retried)
        #expect(flaky.runCount == 2, "a temporary failure is not remembered")
        // Two sizes, two decodes (no disk cache: two downloads); the unprocessed results stay in memory.
        #expect(loader.totalLoads == 2 && decoder.decodeCount == 2)
    }

    /// Bytes that do not decode are remembered for a processed request too: its base decode
    /// is not tried again (no second download) while the failure is remembered.
    @Test func aBaseDecodeFailureIsRememberedForAProcessedRequest() async throws {
        let loader = HeldLoader { _ in .success(.data(Data("not an image".utf8), ResponseMetadata())) }
        let pipeline = makePipeline(loader: loader)
        let url = testURL(16, 16, 3)
        let request = ImageRequest(url: url, width: 8, height: 8, processors: [.grayscale])
        for _ in 0..<2 { _ = try? await pipeline.image(for: request) }
        #expect(loader.totalLoads == 1)
    }
}

@Suite struct ProcessorListTests {
    /// A custom processor sits beside the built-ins in every initialiser and assignment, with
    /// no `ImageProcessor(…)` around it; the key is the same as with the wrapper.
    @Test func customAndBuiltInProcessorsMixWithoutAWrapper() {
        let url = testURL(64, 64, 1)
        let plain = ImageRequest(url: url, processors: [Sepia(), .circle])
        let sized = ImageRequest(url: url, width: 32, height: 32, processors: [Sepia(), .gaussianBlur(radius: 2), .circle])
        var assigned = ImageRequest(url: url)
        assigned.processors = [Sepia(), .circle]
        #expect(assigned == plain && assigned.hashValue == plain.hashValue)
        assigned.processors.append(.grayscale)
        #expect(assigned.processors.map(\.identifier) == ["sepia", "circle", "grayscale"])
        #expect(assigned != plain)
        #expect(plain.processors.first is Sepia, "the processors read back as given")
        let pipeline = makePipeline(loader: HeldLoader.immediate())
        let wrapped = ImageRequest(url: url, processors: [ImageProcessor(Sepia()), ImageProcessor.circle])
        #expect(pipeline.key(for: plain) == pipeline.key(for: wrapped))
        #expect(pipeline.key(for: plain).processors == [ImageProcessor(Sepia()), .circle])
        #expect(pipeline.key(for: sized).processors.map(\.identifier) == ["sepia", "gaussianBlur(2.0)", "circle"])
        #expect(ImageProcessor(ImageProcessor(Sepia())).base is Sepia, "never wrapped twice")
        // A custom static member, declared as the built-ins are, reads like them.
        #expect(ImageRequest(url: url, processors: [.sepia, .circle]) == plain)
    }

    /// A closure processor runs like any other, and its identifier is all the caches know of
    /// it: a second closure under the same id is answered from memory, a new id runs.
    @Test func aClosureProcessorIsKeyedByItsIdentifier() async throws {
        let loader = HeldLoader.immediate()
        let pipeline = makePipeline(loader: loader)
        let url = testURL(16, 16, 2)
        let runs = Mutex(0)
        let invert = { @Sendable (bitmap: Bitmap) throws -> Bitmap in
            runs.withLock { $0 += 1 }
            var out = bitmap
            out.withUnsafeMutableBytes { p in
                for i in stride(from: 0, to: p.count, by: 4) { for c in 0..<3 { p[i + c] = p[i + 3] - p[i + c] } }
            }
            return out
        }
        let plain = try await pipeline.image(for: ImageRequest(url: url, width: 8, height: 8))
        let inverted = try await pipeline.image(for: ImageRequest(url: url, width: 8, height: 8, processors: [.process(id: "invert", invert)]))
        let p = plain.bitmap.pixel(x: 0, y: 0), q = inverted.bitmap.pixel(x: 0, y: 0)
        #expect([q.r, q.g, q.b] == [p.a - p.r, p.a - p.g, p.a - p.b])
        #expect(runs.withLock { $0 } == 1)

        let sameID = ImageRequest(url: url, width: 8, height: 8, processors: [.process(id: "invert") { _ in throw CountingProcessor.Failure() }])
        let again = try await pipeline.image(for: sameID)
        #expect(again.source == .memory && again.bitmap == inverted.bitmap, "one id, one cached result")
        let newID = ImageRequest(url: url, width: 8, height: 8, processors: [.process(id: "invert-v2", invert), .circle])
        _ = try await pipeline.image(for: newID)
        #expect(runs.withLock { $0 } == 2)
        #expect(pipeline.key(for: newID).processors.map(\.identifier) == ["invert-v2", "circle"])
        #expect(loader.totalLoads == 1)
    }
}
