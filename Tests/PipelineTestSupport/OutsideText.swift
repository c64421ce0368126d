import Foundation

/// Whether `text` holds a character that a terminal acts on or that shows text in another
/// order: a C0 control (a line break too, unless `allowingLineBreaks`: imgpipe writes its own),
/// DEL, a C1 control, or a bidirectional override, embedding or isolate. The one "is it
/// escaped?" check of the tests that feed outside text (a server's headers, a file's name, a
/// codec's message) into an error or onto stderr. Independent of `MessageText` on purpose: a
/// test of the escaping must not ask the escaper.
public func hasRawControl(_ text: String, allowingLineBreaks: Bool = false) -> Bool {
    text.unicodeScalars.contains {
        ($0.value < 0x20 && !(allowingLineBreaks && $0 == "\n")) || (0x7F...0x9F).contains($0.value)
            || (0x202A...0x202E).contains($0.value) || (0x2066...0x2069).contains($0.value)
    }
}
