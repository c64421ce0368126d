import Foundation
import ImageServer
import PipelineCore
import Testing

@Suite struct PresetsTests {
    @Test func imgproxysPresetsTextIsRead() throws {
        let presets = try Presets(parsing: " thumb=rs:fill:100:100/q:70 , # a comment,\nsmall=w:50, ,big=w:2000/el:1")
        #expect(presets.byName == ["thumb": ["rs:fill:100:100", "q:70"], "small": ["w:50"], "big": ["w:2000", "el:1"]])
        #expect(try Presets(parsing: "") == Presets())
    }

    @Test func theDefaultPresetAppliesFirstAndOthersInPlace() throws {
        let presets = try Presets(parsing: "default=q:60/w:10,thumb=rs:fill:100:100/q:70,grey=bg:808080")
        #expect(try options("", presets: presets).quality == 60)
        #expect(try options("", presets: presets).width == 10)
        #expect(try options("q:90", presets: presets).quality == 90)  // the URL's come after the default
        let thumb = try options("q:90/pr:thumb", presets: presets)  // in place: the preset's quality wins
        #expect(thumb.quality == 70 && thumb.width == 100 && thumb.resizingType == .fill)
        #expect(try options("preset:thumb/q:90", presets: presets).quality == 90)
        let two = try options("pr:thumb:grey", presets: presets)
        #expect(two.width == 100 && two.background?.description == "#808080")
        #expect(try options("pr:thumb", presets: presets) == options("q:60/w:10/rs:fill:100:100/q:70", presets: Presets()))
    }

    @Test func presetsMayNamePresets() throws {
        let presets = try Presets(parsing: "a=w:1/pr:b,b=h:2/pr:c,c=q:3")
        let a = try options("pr:a", presets: presets)
        #expect(a.width == 1 && a.height == 2 && a.quality == 3)
    }

    @Test(arguments: [
        ("a=pr:a", "names itself"), ("a=pr:b,b=pr:a", "names itself"), ("a=w:1/pr:b,b=pr:c,c=pr:a", "names itself"),
        ("a=pr:nope", "unknown preset"), ("a=pixelate:4", "pixelate is not supported"), ("a=w:-1", "w"), ("a=w:10000/dpr:2", "dpr"),
        ("a=bogus:1", "unknown option"), ("a", "not name=options"), ("=w:1", "no name"), ("a=", "no options"), ("a=w:1=2", "not name=options"),
        ("a=w:1,a=h:1", "defined twice"), ("a=w:1/plain", "is not an option"), ("a=w:1//q:1", "is not an option"),
    ])
    func aBadPresetFailsAtInit(text: String, message: String) {
        let error = #expect(throws: Presets.ConfigurationError.self) { try Presets(parsing: text) }
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
    }

    @Test func deepChainsAreRefusedNotFollowed() throws {
        let chain = (0..<20).map { "p\($0)=w:\($0)/pr:p\($0 + 1)" }.joined(separator: ",") + ",p20=q:1"
        let error = #expect(throws: Presets.ConfigurationError.self) { try Presets(parsing: chain) }
        #expect(error?.message.contains("deeper than") == true)
        // Presets that name others several times each would expand exponentially: refused at a bound, at once.
        let fan = (0..<7).map { "f\($0)=pr:" + Array(repeating: "f\($0 + 1)", count: 10).joined(separator: ":") }.joined(separator: ",") + ",f7=q:1"
        let start = ContinuousClock.now
        let fanError = #expect(throws: Presets.ConfigurationError.self) { try Presets(parsing: fan) }
        #expect(fanError?.message.contains("more than 1000 options") == true, "\(fanError?.message ?? "")")
        #expect(ContinuousClock.now - start < .seconds(5))
        // Presets set by hand are not checked at init: a loop among them is still an error, not a hang.
        var byHand = Presets()
        byHand.byName = ["a": ["pr:b"], "b": ["pr:a"], "c": ["plain"]]
        #expect(refusal("pr:a", presets: byHand)?.message.contains("names itself") == true)
        #expect(refusal("pr:c", presets: byHand)?.kind == .badRequest)
        #expect(refusal("pr:zzz", presets: byHand)?.message == "unknown preset \"zzz\"")
    }
}

@Suite struct ImgproxyURLCanonicalTests {
    @Test func equalOptionsHaveOneTextHoweverSpelled() throws {
        let presets = try Presets(parsing: "thumb=rs:fill:300:200/g:sm")
        let spellings = [
            "rs:fill:300:200/g:sm/q:80/fq:webp:70:avif:50/cb:v2",
            "resizing_type:fill/width:300/height:200/gravity:sm/quality:80/format_quality:avif:50:webp:70/cachebuster:v2",
            "pr:thumb/q:80/fq:avif:50/fq:webp:70/cb:v2",
            "w:1/q:10/rs:fill:300:200/g:sm/q:80/fq:webp:70:avif:50/cb:v2/exp:4102444800/fn:x/att:1",
            "s:300:200/rt:fill/g:fp:0.5:0.5/g:sm/q:80/fq:webp:70:avif:50/cb:v2/pd:0/bg:ff0000/bg:/t:5/t:/wm:0/ex:1/ex:0",
        ]
        let texts = try spellings.map { try options($0, presets: presets).canonical }
        #expect(Set(texts).count == 1, "\(texts)")
        #expect(texts[0] == "rt:fill/w:300/h:200/g:attention:0:0/q:80/fq:avif:50:webp:70/cb:v2")
        #expect(RenderOptions().canonical == "")
        #expect(try options("f:jpg").canonical == options("format:jpeg").canonical)
        #expect(try options("g:no:-0:0").canonical == options("g:no").canonical)
    }

    /// `rot` and `fl` are one turn of the picture (``RenderOptions/transform``): spellings of the
    /// same turn share a text, so one result serves them; no turn is the empty text.
    @Test func equalTurnsHaveOneText() throws {
        #expect(try options("rot:180").canonical == options("fl:1:1").canonical)
        #expect(try options("rot:90/fl:0:1").canonical == options("rot:270/fl:1").canonical)
        #expect(try options("rot:90/fl:1:0").canonical == options("rot:270/fl:0:1").canonical)
        for none in ["rot:360", "rot:-360", "fl:0:0", "fl:0", "rot:180/fl:1:1", "rot:0/fl:false:f"] {
            #expect(try options(none).canonical == "", "\(none)")
        }
        #expect(try options("rot:-90").canonical == options("rot:270").canonical)
    }

    @Test func everyOptionThatChangesTheBytesChangesTheText() throws {
        let variants = [
            "", "rt:fill", "rt:fill-down", "rt:force", "rt:auto", "w:10", "h:10", "dpr:2", "el:1", "ex:1", "ex:1:no", "ex:1:no:1:0",
            "g:no", "g:sm", "g:no:1:0", "g:no:0:1", "g:fp:0.2:0.3", "c:10:10", "c:10:10:no", "c:10:20", "t:10", "t:10:ff0000", "t:10::1", "t:10::0:1",
            "pd:1", "pd:1:2", "ar:0", "rot:90", "rot:180", "rot:270", "fl:1", "fl:0:1", "rot:90/fl:1", "rot:270/fl:1", "bg:ff0000", "bg:fe0000", "bl:1", "bl:2", "sh:1", "sh:0.5",
            "wm:0.5", "wm:0.5:no", "wm:0.5:no:1", "wm:0.5:no:0:0:0.5",
            "sm:0", "scp:0", "q:80", "fq:webp:80", "fq:avif:80", "f:webp", "f:png", "cb:1", "cb:2", "msr:5", "maf:3",
            "cb:a%2Fw%3A5", "cb:a/w:5", "br:1", "br:-1", "co:2", "co:0.5", "sa:2", "sa:0.5", "a:1:2:3",
        ]
        var seen: [String: String] = [:]
        for variant in variants {
            let text = try options(variant).canonical
            #expect(seen[text] == nil, "\(variant) and \(seen[text] ?? "") share \(text)")
            seen[text] = variant
        }
        // Headers only: no change.
        for headerOnly in ["exp:4102444800", "fn:pic", "att:1"] { #expect(try options(headerOnly).canonical == "") }
    }
}
