import Foundation
import ImageServer
import PipelineCore
import PipelineTestSupport
import Testing

/// Seeded mutations of valid URLs: the parse answers every one with a URL or a ``ServerError``
/// of 400, 403 or 404 (never a crash, a hang or another status), in time linear in the input.
@Suite struct ImgproxyURLMutationTests {
    static let seeds = [
        "/insecure/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png",
        "/insecure/s:100:100:1:1:fp:0.2:0.8/pd:1:2:3/bg:10:20:30/t:10:ffffff:1:0/plain/https://e.com/a%20b.jpg@webp",
        "/insecure/pr:thumb/c:0.5:0.5:nowe:3:4/wm:0.5:soea:1:2:0.3/fq:webp:70:avif:40/fn:bXkgcGljdHVyZQ:1/plain/local:///a.jpg",
        "/insecure/dpr:2/q:80/cb:7/exp:0/msr:20/maf:5/ar:0/sm:1/scp:0/att:1/bl:2/ex:1:no:5:5/aHR0cHM6Ly9hLmIvYy5naWY.gif",
    ]
    static let alphabet = Array("/:@.%-_~=+!$&'()*,;?#[]0123456789abcdefxyzAZ \u{0}\u{1B}\u{7F}é😀fpsmnoearsplainenc")

    @Test func mutatedURLsNeverCrashOrHang() throws {
        let presets = try Presets(parsing: "default=q:75,thumb=rs:fit:50:50/pr:inner,inner=el:1")
        let signing = try URLSigning(keys: ["aa11"], salts: ["bb22"])
        var random = SeededGenerator(seed: 0x1D6_9E37)
        var outcomes: [Int: Int] = [:]
        let start = ContinuousClock.now
        for iteration in 0..<3_000 {
            var scalars = Array(Self.seeds[iteration % Self.seeds.count])
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let at = Int.random(in: 0...scalars.count, using: &random)
                switch Int.random(in: 0..<5, using: &random) {
                case 0 where at < scalars.count: scalars.remove(at: at)
                case 1: scalars.insert(Self.alphabet.randomElement(using: &random) ?? "/", at: at)
                case 2 where at < scalars.count: scalars[at] = Self.alphabet.randomElement(using: &random) ?? ":"
                case 3:  // duplicate a run, so separators and segments repeat
                    let end = min(scalars.count, at + Int.random(in: 1...12, using: &random))
                    scalars.insert(contentsOf: scalars[at..<end], at: at)
                default:
                    scalars = Array(scalars.prefix(at))
                }
            }
            let path = String(scalars)
            for signing in [URLSigning(), signing] {
                do {
                    let url = try ImgproxyURL.parse(path, signing: signing, presets: presets)
                    _ = url.options.canonical
                    outcomes[200, default: 0] += 1
                } catch {
                    #expect([400, 403, 404].contains(error.status), "\(path.debugDescription): \(error)")
                    #expect(!error.message.contains("\u{1B}") && !error.message.contains("\u{0}"), "\(path.debugDescription)")
                    #expect(error.message.count < 300)
                    outcomes[error.status, default: 0] += 1
                }
            }
        }
        // Both outcomes are reached, so the mutations test the parse and not only its first check.
        #expect(outcomes[200, default: 0] > 100 && outcomes[400, default: 0] > 100, "\(outcomes)")
        #expect(ContinuousClock.now - start < .seconds(20))
    }

    @Test func hugeInputsStayLinear() throws {
        let many = "/insecure/" + String(repeating: "w:1/", count: 20_000) + "plain/https://e.com/a.jpg"
        #expect(try ImgproxyURL.parse(many, signing: URLSigning(), presets: Presets()).options.width == 1)
        let long = "/insecure/" + String(repeating: "QUFB", count: 50_000)
        #expect(try ImgproxyURL.parse(long, signing: URLSigning(), presets: Presets()).source.count == 150_000)
        let colons = "/insecure/w" + String(repeating: ":", count: 100_000) + "/plain/x"
        #expect(throws: ServerError.self) { try ImgproxyURL.parse(colons, signing: URLSigning(), presets: Presets()) }
    }
}
