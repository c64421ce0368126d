/// `NSString`'s path operations (`lastPathComponent`, `deletingLastPathComponent`,
/// `appendingPathComponent(_:)`, `pathExtension`) on plain strings, for modules that link only
/// FoundationEssentials: the same answers as swift-corelibs-foundation's (PortableTextTests
/// compares them), where it answers (its `deletingLastPathComponent` traps on a one-character
/// name such as `a`; this answers `""`, as for every other bare name).
package enum PathText {
    /// The last component: trailing slashes ignored, `/` for `/`.
    package static func lastComponent(_ path: String) -> String {
        if path == "/" { return path }
        let trimmed = path.utf8.reversed().drop { $0 == UInt8(ascii: "/") }.count
        let body = path.utf8.prefix(trimmed)
        let start = body.lastIndex(of: UInt8(ascii: "/")).map { body.index(after: $0) } ?? body.startIndex
        return String(decoding: body[start...], as: UTF8.self)
    }

    /// The path without its last component: `""` for a bare name, `/` for a component of the root.
    package static func deletingLastComponent(_ path: String) -> String {
        if path == "/" { return path }
        let bytes = Array(path.utf8)
        var end = bytes.count
        while end > 0 && bytes[end - 1] == UInt8(ascii: "/") { end -= 1 }
        guard end > 0, let slash = bytes[..<end].lastIndex(of: UInt8(ascii: "/")) else { return "" }
        var parent = slash
        while parent > 0 && bytes[parent - 1] == UInt8(ascii: "/") { parent -= 1 }
        return parent == 0 ? "/" : String(decoding: bytes[..<parent], as: UTF8.self)
    }

    /// `component` after `path`, with one `/` between them unless `path` ends with one.
    package static func appending(_ path: String, _ component: String) -> String {
        if path.isEmpty { return component }
        if component.isEmpty { return path }
        return path.utf8.last == UInt8(ascii: "/") ? path + component : path + "/" + component
    }

    /// The last component's text after its last `.`; `""` when there is none, the name starts
    /// with its only dot (`.hidden`) or ends with one.
    package static func pathExtension(_ path: String) -> String {
        let name = Array(lastComponent(path).utf8)
        guard let dot = name.lastIndex(of: UInt8(ascii: ".")), dot > 0, dot < name.count - 1 else { return "" }
        return String(decoding: name[(dot + 1)...], as: UTF8.self)
    }
}
