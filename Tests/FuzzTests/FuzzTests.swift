import Foundation
import FuzzSupport
import PipelineTestSupport
import Testing

/// A deterministic fuzzing pass over `../shared/corpus`: seeded mutations (bit flips, byte sets,
/// truncations, chunk/box/segment duplication, deletion and swaps, length and dimension fields
/// set to extremes) of every format we decode, each run through a real pipeline with all four
/// decoders as a thumbnail and an original-size request. Every request must return a picture or
/// throw an error that says something, within its deadline, and the process's memory must stay
/// bounded. A failing case is named so that `swift run -c release ImageFuzz --case …` makes it
/// again; `scripts/fuzz` runs the same loop for as long as asked.
@Suite(.enabled(if: FuzzCorpus.isPresent, Corpus.missing("")), .tags(.cpuBound))
struct FuzzTests {
    /// A 4-megapixel limit (every corpus file used here is smaller) keeps a case that sets the
    /// dimensions huge cheap in a debug build; `scripts/fuzz` runs with the default 100 MP.
    /// The 120 s deadline is for a starved machine (a CI run with other builds on both cores
    /// stalled the first cases past 30 s): the slowest case takes well under a second alone.
    static let settings = FuzzHarness.Settings(pixelLimit: 4_000_000, deadline: 120, memoryLimit: 1 << 30)
    /// The run seed: change it to fuzz other cases.
    static let runSeed: UInt64 = 2026
    /// Cases per format, sized for about a minute in all on 2 cores in a debug build (JPEG and
    /// HEIF decodes cost tens of milliseconds each there; PNG and WebP ones about one).
    static let caseCounts: [FuzzFormat: Int] = [.jpeg: 400, .png: 2000, .webp: 2000, .heif: 400, .avif: 300]
    /// Corpus files larger than this are left to `scripts/fuzz`.
    static let maxSeedBytes = 400 << 10

    @Test(.serialized, arguments: FuzzCorpus.formats)
    func mutatedInputsReturnOrThrowInTime(_ format: FuzzFormat) async throws {
        let seeds = FuzzCorpus.seeds(format, maxBytes: Self.maxSeedBytes)
        if seeds.isEmpty { try Test.cancel("no \(format) files in \(FuzzCorpus.root.path): skipped") }
        let harness = FuzzHarness(settings: Self.settings)
        let started = ContinuousClock.now
        var failing = 0
        for index in 0..<(Self.caseCounts[format] ?? 100) {
            let c = FuzzCase(format: format, index: UInt64(index), runSeed: Self.runSeed, seeds: seeds)
            // Each case holds the memory tests' lock: they measure the process's peak, which a
            // fuzzing case running beside them would raise.
            let report = try await ResidentMemory.exclusively { await harness.run(c.bytes, variant: c.mutationSeed) }
            guard !report.problems.isEmpty else { continue }
            failing += 1
            Issue.record(Comment(rawValue: """
                case \(index): \(c.name)
                  \(report.problems.joined(separator: "\n  "))
                  thumbnail: \(report.thumbnail); original: \(report.original)
                  again: swift run -c release ImageFuzz --case \(c.reproduction) --save input.\(format.fileExtension)
                """))
            // A hang leaves a thread spinning; a few failures say enough.
            if report.hung || failing >= 5 { break }
        }
        print("FuzzTests: \(format), \(Self.caseCounts[format] ?? 100) cases in \(ContinuousClock.now - started)")
    }

    /// Every input `scripts/fuzz` ever found failing, saved in `Regressions/`, passes now: with
    /// each thumbnail size and content mode the harness uses.
    @Test func regressionInputsPass() async throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Regressions")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            .filter { !$0.hasSuffix(".txt") && !$0.hasSuffix(".md") }
        let harness = FuzzHarness(settings: Self.settings)
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: folder.appendingPathComponent(name)))
            for variant: UInt64 in [0, 1, 2, 3, 256, 257, 258, 259] {
                let report = await harness.run(bytes, variant: variant)
                #expect(report.problems.isEmpty, "Regressions/\(name), variant \(variant): \(report.problems)")
                if report.hung { return }
            }
        }
    }

    /// The same seed makes the same bytes and the same description; other seeds make others.
    @Test func mutationsAreDeterministic() throws {
        for format in FuzzFormat.allCases {
            let seeds = FuzzCorpus.seeds(format, maxBytes: Self.maxSeedBytes)
            guard !seeds.isEmpty else { continue }
            let cases = (0..<50).map { FuzzCase(format: format, index: UInt64($0), runSeed: 7, seeds: seeds) }
            let again = (0..<50).map { FuzzCase(format: format, index: UInt64($0), runSeed: 7, seeds: seeds) }
            #expect(cases.map(\.bytes) == again.map(\.bytes), "\(format)")
            #expect(cases.map(\.name) == again.map(\.name), "\(format)")
            #expect(Set(cases.map(\.bytes)).count > 40, "\(format): seeds should rarely collide")
            let remade = try #require(FuzzCorpus.reproduce(cases[3].reproduction))
            #expect(remade.bytes == cases[3].bytes)
        }
    }

    /// The format-aware mutations find the units and fields they are meant to damage.
    @Test func structuresAreParsed() throws {
        let png = Mutator.structure(of: [UInt8](try Corpus.data("png-suite/png", "basn6a08.png")), as: .png)
        #expect(png.units.first == "IHDR" && png.units.contains("IDAT") && png.units.last == "IEND")
        #expect(png.fields.contains("IHDR.width") && png.fields.contains("IHDR.height"))

        let animation = Mutator.structure(of: [UInt8](try Corpus.data("webp-animated", "beacon.webp")), as: .webp)
        #expect(Array(animation.units.prefix(3)) == ["RIFF", "VP8X", "ANIM"] && animation.units.contains("ANMF"))
        #expect(animation.units.contains("VP8L"), "the frames' own chunks, inside ANMF")
        #expect(animation.fields.contains("VP8X.canvasWidth-1") && animation.fields.contains("ANMF.width-1"))
        let lossy = Mutator.structure(of: [UInt8](try Corpus.data("webp", "test.webp")), as: .webp)
        #expect(lossy.fields.contains("VP8 .width") && lossy.fields.contains("RIFF.size"))

        let heic = Mutator.structure(of: [UInt8](try Corpus.data("heif", "rainbow-451x461.heic")), as: .heif)
        for box in ["ftyp", "meta", "iinf", "infe", "iloc", "iprp", "ipco", "ispe", "ipma", "mdat"] {
            #expect(heic.units.contains(box), "\(box) in \(heic.units)")
        }
        #expect(heic.fields.contains("ispe.width") && heic.fields.contains("iloc.item0.extent0.length"))

        let jpeg = Mutator.structure(of: [UInt8](try Corpus.data("jpeg", "testorig.jpg")), as: .jpeg)
        #expect(jpeg.units.first == "SOI" && jpeg.units.contains("SOF0") && jpeg.units.contains("SOS") && jpeg.units.last == "EOI")
        #expect(jpeg.fields.contains("SOF0.width") && jpeg.fields.contains("SOF0.height"))
    }

    /// The watchdog answers at once when the work finishes and at the deadline when it does
    /// not, cancelling it.
    @Test func theWatchdogEndsAStuckCaseAndNotAFinishedOne() async {
        let started = ContinuousClock.now
        // A long deadline: a starved machine may take tens of seconds to schedule the work,
        // and a race that waited for the deadline would take all of it.
        guard case .finished(.success(7)) = await FuzzHarness.race(deadline: 300, { 7 }) else {
            Issue.record("a finished operation should win the race")
            return
        }
        #expect(ContinuousClock.now - started < .seconds(300), "a finished operation answers before the deadline")
        let (ended, end) = AsyncStream<Void>.makeStream()
        let outcome = await FuzzHarness.race(deadline: 0.2) { () async throws -> Int in
            defer { end.finish() }
            // A stand-in for a decoder that never returns: a stream nothing yields to, which ends
            // only when the race cancels this task.
            let (never, source) = AsyncStream<Void>.makeStream()
            for await _ in never {}
            withExtendedLifetime(source) {}
            return 0
        }
        guard case .timedOut = outcome else {
            Issue.record("a stuck operation should time out, got \(outcome)")
            return
        }
        let stopped = await FuzzHarness.race(deadline: 120) { () async throws -> Bool in
            for await _ in ended {}
            return true
        }
        guard case .finished(.success(true)) = stopped else {
            Issue.record("the stuck operation should be cancelled and end")
            return
        }
    }
}
