/// `JSONSerialization.data(withJSONObject:options: [.sortedKeys, …])` as swift-corelibs-foundation
/// writes it, for modules that link only FoundationEssentials (which has `JSONEncoder` but not
/// `JSONSerialization`): the same bytes for the same objects (PortableTextTests compares them).
///
/// `object` is built of `String`, `Bool`, the integer types, `Double`, `JSONNull`, arrays of
/// these and `[String: Any]` of these; ASCII keys are sorted as Foundation sorts them
/// (`foundationKeyOrder`). `prettyPrinted` indents by two spaces and writes
/// `"key" : value`; `escapingSlashes` writes `/` as `\/` (Foundation's default).
package func jsonText(_ object: Any, prettyPrinted: Bool = false, escapingSlashes: Bool = true) throws(JSONTextError) -> String {
    var writer = JSONTextWriter(pretty: prettyPrinted, escapingSlashes: escapingSlashes)
    try writer.value(object)
    return writer.text
}

/// JSON's `null` in an object for `jsonText` (`NSNull`).
package struct JSONNull: Sendable {
    package init() {}
}

/// A value `jsonText` cannot write (JSONSerialization's
/// "Invalid object cannot be serialized"), or a number that is not finite.
package struct JSONTextError: Error, CustomStringConvertible {
    package let description: String
}

private struct JSONTextWriter {
    let pretty: Bool
    let escapingSlashes: Bool
    var text = ""
    var indent = 0

    mutating func value(_ object: Any) throws(JSONTextError) {
        switch object {
        case let string as String: self.string(string)
        case let bool as Bool: text += bool.description
        case let number as Int: text += number.description
        case let number as Int64: text += number.description
        case let number as Int32: text += number.description
        case let number as UInt64: text += number.description
        case let number as UInt32: text += number.description
        case let number as UInt: text += number.description
        case let array as [Any]: try self.array(array)
        case let object as [String: Any]: try self.object(object)
        case let number as Double:
            guard number.isFinite else { throw JSONTextError(description: "Invalid number value (\(number)) in JSON write") }
            var written = number.description
            if written.hasSuffix(".0") { written.removeLast(2) }
            text += written
        case is JSONNull: text += "null"
        default: throw JSONTextError(description: "Invalid object cannot be serialized")
        }
    }

    mutating func string(_ string: String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "/": text += escapingSlashes ? "\\/" : "/"
            case "\u{8}": text += "\\b"
            case "\u{c}": text += "\\f"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{0}"..."\u{f}": text += "\\u000" + String(scalar.value, radix: 16)
            case "\u{10}"..."\u{1f}": text += "\\u00" + String(scalar.value, radix: 16)
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    mutating func array(_ array: [Any]) throws(JSONTextError) {
        text += "["
        if pretty {
            text += "\n"
            indent += 2
        }
        for (index, element) in array.enumerated() {
            if index > 0 { text += pretty ? ",\n" : "," }
            if pretty { writeIndent() }
            try value(element)
        }
        if pretty {
            text += "\n"
            indent -= 2
            writeIndent()
        }
        text += "]"
    }

    mutating func object(_ object: [String: Any]) throws(JSONTextError) {
        text += "{"
        if pretty {
            text += "\n"
            indent += 2
            if !object.isEmpty { writeIndent() }
        }
        for (index, (key, element)) in object.sorted(by: { foundationKeyOrder($0.key, $1.key) }).enumerated() {
            if index > 0 {
                text += pretty ? ",\n" : ","
                if pretty { writeIndent() }
            }
            string(key)
            text += pretty ? " : " : ":"
            try value(element)
        }
        if pretty {
            text += "\n"
            indent -= 2
            writeIndent()
        }
        text += "}"
    }

    mutating func writeIndent() {
        text += String(repeating: " ", count: indent)
    }
}

/// `a.compare(b, options: [.numeric, .caseInsensitive, .forcedOrdering]) == .orderedAscending`
/// for ASCII keys, as Foundation (ICU's collation) orders them: punctuation and spaces before
/// digits before letters, letters case-insensitively, runs of digits by their value; equal keys
/// so compared then fewer characters first, then lower case before upper case at the first
/// difference. Other scalars come after ASCII, by code point (Foundation orders them by the
/// Unicode collation; no key this package writes has one).
private func foundationKeyOrder(_ a: String, _ b: String) -> Bool {
    let left = Array(a.unicodeScalars), right = Array(b.unicodeScalars)
    var i = 0, j = 0
    while i < left.count && j < right.count {
        if isDigit(left[i]) && isDigit(right[j]) {
            var leftEnd = i, rightEnd = j
            while leftEnd < left.count && isDigit(left[leftEnd]) { leftEnd += 1 }
            while rightEnd < right.count && isDigit(right[rightEnd]) { rightEnd += 1 }
            let leftDigits = left[i..<leftEnd].drop { $0 == "0" }, rightDigits = right[j..<rightEnd].drop { $0 == "0" }
            if leftDigits.count != rightDigits.count { return leftDigits.count < rightDigits.count }
            for (l, r) in zip(leftDigits, rightDigits) where l != r { return l.value < r.value }
            i = leftEnd
            j = rightEnd
            continue
        }
        let l = collationWeight(left[i]), r = collationWeight(right[j])
        if l != r { return l < r }
        i += 1
        j += 1
    }
    if (left.count - i) != (right.count - j) { return left.count - i < right.count - j }
    if left.count != right.count { return left.count < right.count }
    for (l, r) in zip(left, right) where l != r {
        let lowerFirst = collationWeight(l) == collationWeight(r)
        return lowerFirst ? l.value > r.value : l.value < r.value  // "a" (0x61) before "A" (0x41)
    }
    return false
}

private let asciiPunctuationOrder = Array(" _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$".unicodeScalars)

private func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

/// ICU's (the Unicode collation's) primary order of ASCII: punctuation and symbols, digits,
/// letters (case folded); other scalars after, by code point.
private func collationWeight(_ scalar: Unicode.Scalar) -> UInt32 {
    if let index = asciiPunctuationOrder.firstIndex(of: scalar) { return UInt32(index) }
    if isDigit(scalar) { return 100 + scalar.value - 48 }
    if ("a"..."z").contains(scalar) { return 200 + scalar.value - 97 }
    if ("A"..."Z").contains(scalar) { return 200 + scalar.value - 65 }
    return 1000 + scalar.value
}
