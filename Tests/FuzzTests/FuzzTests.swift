import Foundation
import FuzzSupport
import PipelineTestSupport
import Testing

/// A deterministic fuzzing pass: seeded mutations of every corpus format through a real
/// pipeline with all four decoders. Each case must return or throw an error with a message,
/// within its deadline, and keep the process's memory bounded.
@Suite(.enabled(if: FuzzCorpus.isPresent, Corpus.missing("")))
struct FuzzTests {
    static let settings = FuzzHarness.Settings(pixelLimit: 4_000_000, deadline: 30, memoryLimit: 1 << 30)

    @Test func smoke() async throws {
        let harness = FuzzHarness(settings: Self.settings)
        for format in FuzzFormat.allCases {
            let seeds = FuzzCorpus.seeds(format, maxBytes: 256 << 10)
            var seconds = 0.0
            for index in 0..<20 {
                let c = FuzzCase(format: format, index: UInt64(index), runSeed: 1, seeds: seeds)
                let report = await harness.run(c.bytes, variant: c.mutationSeed)
                seconds += report.seconds
                #expect(report.problems.isEmpty, "\(c.name): \(report.problems)")
                print(c.name, report.thumbnail, report.original, report.seconds)
            }
            print(format, seeds.count, seconds)
        }
    }
}
