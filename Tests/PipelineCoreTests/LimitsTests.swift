import Foundation
import PipelineCore
import Testing

@Suite("Limits declared once, one vocabulary of limit names")
struct LimitsTests {
    /// The configuration and the decode options hold one `Limits`; the members users set
    /// (`maxPixelCount`, the animation limits) are its values, and an initialiser's argument
    /// replaces its one value only.
    @Test func theOldMembersAreTheLimitsValues() {
        var configuration = ImagePipeline.Configuration(decoders: DecoderRegistry(), loaders: LoaderRegistry(), maxPixelCount: 1_000)
        #expect(configuration.limits == Limits(maxPixelCount: 1_000))
        configuration.maxAnimationFrameCount = 7
        #expect(configuration.limits.maxAnimationFrameCount == 7)
        let options = DecodeOptions(limits: configuration.limits, maxAnimationPixelCount: 99)
        #expect(options.maxPixelCount == 1_000 && options.maxAnimationFrameCount == 7 && options.limits.maxAnimationPixelCount == 99)
        #expect(DecodeOptions().limits == .default && DecodeOptions.defaultMaxAnimationFrameCount == Limits.default.maxAnimationFrameCount)
    }

    /// A name is its limit: what a message or a loader spells finds the one declared, with what
    /// it counts; an unknown name is a limit of its own.
    @Test func aLimitIsItsName() {
        #expect(Limit(rawValue: "scans") == .scans && Limit(rawValue: "scans").counting == Limit.scans.counting)
        #expect(Limit(rawValue: "requests in flight") == .requestsInFlight)
        #expect(Limit("custom") == Limit(rawValue: "custom") && Limit("custom").counting == "the custom")
        #expect(Set(Limit.sourceLimits).count == 9 && !Limit.sourceLimits.contains(.queueTime))
        let error = ImagePipelineError.overLimit(.animationFrames, limit: 10, actual: 11)
        if case .overLimit(.animationFrames, _, _) = error {} else { Issue.record("\(error) does not match .animationFrames") }
    }
}
