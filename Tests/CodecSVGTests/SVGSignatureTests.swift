import CodecSVG
import Foundation
import PipelineCore
import PipelineTestSupport
import Testing

/// The signature: XML whose root element is `svg`, whatever comes before it; never other XML.
@Suite(.tags(.cpuBound))
struct SVGSignatureTests {
    static func data(_ text: String) -> Data { Data(text.utf8) }

    @Test(arguments: [
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\"/>",
        "\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
        "  \n\t<!-- a comment with <html> in it -->\n<svg>",
        "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\"><svg>",
        "<!DOCTYPE svg [ <!ENTITY ns \"]>\"> <!-- ' --> <!ENTITY x 'y'> ]>\n<svg>",
        "<?xml-stylesheet href=\"a.css\"?><svg:svg xmlns:svg=\"http://www.w3.org/2000/svg\">",
        "<svg\nwidth=\"1\">",
    ])
    func takesSVG(_ text: String) {
        #expect(SVGDecoder().canDecode(Self.data(text)), "\(text)")
        #expect(DecoderRegistry().registering(SVGDecoder()).format(of: Self.data(text)) == .svg, "\(text)")
    }

    @Test(arguments: [
        "<html><body><svg></svg></body></html>",
        "<?xml version=\"1.0\"?>\n<!DOCTYPE html><html xmlns=\"http://www.w3.org/1999/xhtml\"><svg/></html>",
        "<?xml version=\"1.0\"?><svgfoo/>",
        "<?xml version=\"1.0\"?><rss version=\"2.0\"><channel/></rss>",
        "<!-- <svg> --><feed xmlns=\"http://www.w3.org/2005/Atom\"/>",
        "<![CDATA[<svg>]]>",
        "{\"svg\": true}",
        "svg",
        "",
        "<?xml version=\"1.0\"",  // ends before any root
        "<!-- never closed <svg>",
    ])
    func neverTakesOtherXML(_ text: String) {
        #expect(!SVGDecoder().canDecode(Self.data(text)), "\(text)")
    }

    @Test func neverTakesOtherFormats() {
        for bytes: [UInt8] in [[0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0], [0xFF, 0xD8, 0xFF, 0xE0], Array("GIF89a<svg>".utf8),
                               [0x1F, 0x8B, 0x08, 0x00, 0x00]] {
            #expect(!SVGDecoder().canDecode(Data(bytes)), "\(bytes)")
        }
    }

    /// A decoder asked for data it does not take fails typed, naming the format.
    @Test func aSessionOverOtherXMLIsATypedError() {
        #expect(throws: ImagePipelineError.self) { _ = try SVGDecoder().readInfo(Self.data("<html/>")) }
    }

    /// gzip data is taken only when what it inflates to is an SVG document.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/bin/gzip"), "gzip is not installed: skipped"))
    func gzipIsTakenOnlyForAnSVGRoot() throws {
        #expect(SVGDecoder().canDecode(try Self.gzip("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>")))
        #expect(!SVGDecoder().canDecode(try Self.gzip("<?xml version=\"1.0\"?>\n<html/>")))
        // The root after 300 KiB of comment: past the 256 KiB the sniff inflates, so not taken.
        #expect(!SVGDecoder().canDecode(try Self.gzip("<!--" + String(repeating: " ", count: 300 << 10) + "--><svg/>")))
    }

    static func gzip(_ text: String) throws -> Data {
        try ExternalTool.runBlocking("/bin/gzip", ["-c", "-n"], input: Data(text.utf8)).output
    }
}
