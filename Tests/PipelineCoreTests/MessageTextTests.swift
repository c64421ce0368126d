import Foundation
import PipelineCore
import Testing

/// ``MessageText``: escaping and bounding outside text for messages.
@Suite("MessageText")
struct MessageTextTests {
    @Test(arguments: [
        ("\u{1B}]0;T\u{07}", "\\u{1B}]0;T\\u{07}"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\u{0}\u{7F}\u{85}\u{9B}", "\\u{00}\\u{7F}\\u{85}\\u{9B}"),
        ("abc\u{202E}gpj.exe", "abc\\u{202E}gpj.exe"),
        ("\u{2066}x\u{2069}\u{200E}\u{200F}\u{061C}", "\\u{2066}x\\u{2069}\\u{200E}\\u{200F}\\u{61C}"),
        ("line\u{2028}para\u{2029}", "line\\u{2028}para\\u{2029}"),
        ("\u{FEFF}zero\u{200B}width\u{E0041}", "\\u{FEFF}zero\\u{200B}width\\u{E0041}"),
    ])
    func controlsAndFormatCharactersAreEscaped(text: String, expected: String) {
        #expect(MessageText.escaped(text) == expected)
    }

    @Test func ordinaryTextIsKept() {
        for text in ["Adobe RGB (1998)", "café 東京 Ελλάδα עברית", "👨‍👩‍👧 family", "C:\\path\\u{1B}", "قهوه‌ای", ""] {
            #expect(MessageText.escaped(text) == text)
        }
    }

    @Test func escapingTwiceChangesNothing() {
        let hostile = "x\u{1B}]0;TITLE\u{07}\u{9B}\u{202E}" + String(repeating: "\u{1B}y", count: 500)
        for limit in [40, 100, 400, 5_000] {
            let once = MessageText.escaped(hostile, limit: limit)
            #expect(MessageText.escaped(once, limit: limit) == once, "limit \(limit)")
        }
    }

    @Test func aLongTextIsCutWithItsLengthWithinTheLimit() {
        let text = String(repeating: "a", count: 1_234_567)
        let cut = MessageText.escaped(text, limit: 100)
        #expect(cut.count == 100 && cut.hasPrefix("aaaa") && cut.hasSuffix("a… (1,234,567 characters)"), "\(cut)")
        #expect(MessageText.escaped(String(repeating: "b", count: 400)) == String(repeating: "b", count: 400))
        #expect(MessageText.escaped(String(repeating: "b", count: 401)).count == MessageText.textLimit)
        // Too small a limit still leaves room for the length.
        #expect(MessageText.escaped(text, limit: 3).count == 40)
    }

    /// A cut falls between escapes, never inside one.
    @Test func aCutNeverSplitsAnEscape() {
        for limit in 40...60 {
            let cut = MessageText.escaped(String(repeating: "\u{1B}", count: 1_000), limit: limit)
            #expect(cut.count <= limit)
            let kept = cut.prefix { $0 != "…" }
            #expect(kept.count % 6 == 0 && kept == String(repeating: "\\u{1B}", count: kept.count / 6), "\(cut)")
            #expect(cut.hasSuffix("… (1,000 characters)"))
        }
    }

    @Test func aShortURLIsShownWhole() throws {
        let url = try #require(URL(string: "https://cdn.example.com:8443/a/b.jpg?w=320"))
        #expect(MessageText.url(url) == "https://cdn.example.com:8443/a/b.jpg?w=320")
        #expect(MessageText.url(URL(fileURLWithPath: "/srv/pictures/a b.png")) == "/srv/pictures/a b.png")
    }

    @Test func aLongURLKeepsItsSchemeHostPortAndPathStart() throws {
        let data = try #require(URL(string: "data:image/png;base64,iVBORw0KGgo" + String(repeating: "A", count: 13_299_979)))
        let text = MessageText.url(data)
        #expect(text.hasPrefix("data:image/png;base64,iVBORw0KGgo") && text.hasSuffix("… (13,300,012 characters)"))
        #expect(text.count == MessageText.urlLimit)
        let long = try #require(URL(string: "https://host.example:444/a/very/long/" + String(repeating: "p", count: 2_100)))
        #expect(MessageText.url(long).hasPrefix("https://host.example:444/a/very/long/ppp"))
        #expect(MessageText.url(long, limit: 80).count == 80)
        let file = URL(fileURLWithPath: "/srv/" + String(repeating: "f", count: 1_000) + "\u{1B}[31m.png")
        #expect(MessageText.url(file).hasPrefix("/srv/fff") && MessageText.url(file).hasSuffix("(1,014 characters)"))
        #expect(MessageText.url(URL(fileURLWithPath: "/srv/\u{1B}[31m.png")) == "/srv/\\u{1B}[31m.png")
    }

    @Test func aURLsPasswordIsLeftOut() throws {
        let url = try #require(URL(string: "https://alice:s3cret@host.example/a.png"))
        let text = MessageText.url(url)
        #expect(!text.contains("s3cret") && text.contains("alice@host.example/a.png"), "\(text)")
    }
}
