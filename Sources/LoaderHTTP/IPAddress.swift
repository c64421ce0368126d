import CCurl  // sockaddr: curl.h brings the socket headers, and a whole-module build finds the struct there

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address, as a URL spells it or as a socket connects to it.
///
/// The value is the bytes and nothing else: an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is
/// a ``Family/v6`` address and not equal to `1.2.3.4` (``embeddedIPv4`` gives the one it
/// stands for, and ``range`` classifies both alike), and a zone (`%eth0`) is not kept.
public struct IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// The IP version of an address.
    public enum Family: Sendable, Hashable {
        /// IPv4: 4 bytes.
        case v4
        /// IPv6: 16 bytes.
        case v6
    }

    /// IPv4 or IPv6, from the number of ``bytes``.
    public let family: Family
    /// The address in network order: 4 bytes for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// The address of 4 (IPv4) or 16 (IPv6) bytes in network order; `nil` for any other count.
    public init?(bytes: [UInt8]) {
        switch bytes.count {
        case 4: family = .v4
        case 16: family = .v6
        default: return nil
        }
        self.bytes = bytes
    }

    /// The address `text` spells, or `nil` when it spells none.
    ///
    /// - IPv4 is a strict dotted quad: four decimal parts 0...255 without leading zeros. The
    ///   shorter, octal and hex spellings that `inet_aton` and URL parsers accept (`127.1`,
    ///   `0x7f.0.0.1`, `0177.0.0.1`, `2130706433`) are not parsed here: they are what a URL
    ///   host may say, not what a socket reports (`parseLenientIPv4(_:)` reads those).
    /// - IPv6 is RFC 4291 text, hex in either case: eight groups of 1 to 4 hex digits, one `::`
    ///   standing for one or more zero groups, and the last 32 bits optionally a strict dotted
    ///   quad (`::ffff:1.2.3.4`).
    /// - An IPv6 address may be in brackets as in a URL host (`[::1]`), and may carry a zone
    ///   (`fe80::1%eth0`, `[fe80::1%25eth0]`), which is dropped.
    /// - Nothing else: no surrounding whitespace, no trailing dot, no prefix length.
    public init?(_ text: String) {
        var utf8 = Array(text.utf8)
        var bracketed = false
        if utf8.first == UInt8(ascii: "[") {
            guard utf8.count >= 2, utf8.last == UInt8(ascii: "]") else { return nil }
            utf8 = Array(utf8.dropFirst().dropLast())
            bracketed = true
        }
        if let percent = utf8.firstIndex(of: UInt8(ascii: "%")) {
            let zone = utf8[(percent + 1)...]
            guard !zone.isEmpty, zone.allSatisfy({ (0x21...0x7e).contains($0) && !"[]%/".utf8.contains($0) }) else { return nil }
            utf8 = Array(utf8[..<percent])
            guard let bytes = Self.parseIPv6(utf8[...]) else { return nil }
            self.init(uncheckedBytes: bytes)
        } else if let bytes = Self.parseIPv6(utf8[...]) {
            self.init(uncheckedBytes: bytes)
        } else if !bracketed, let bytes = Self.parseStrictIPv4(utf8[...]) {
            self.init(uncheckedBytes: bytes)
        } else {
            return nil
        }
    }

    /// An address of bytes that a parser has already counted (4 or 16).
    private init(uncheckedBytes bytes: [UInt8]) {
        self.family = bytes.count == 4 ? .v4 : .v6
        self.bytes = bytes
    }

    /// The kind of network the address belongs to (see ``AddressRange``).
    public var range: AddressRange { AddressRange(classifying: self) }

    /// The IPv4 address an IPv6 address stands for, else `nil` (and `nil` for an IPv4 address):
    ///
    /// - IPv4-mapped `::ffff:a.b.c.d` (how a dual-stack socket names an IPv4 peer);
    /// - IPv4-compatible `::a.b.c.d` (deprecated by RFC 4291), except `::` and `::1`;
    /// - NAT64 with the well-known prefix `64:ff9b::a.b.c.d` (RFC 6052, `64:ff9b::/96`);
    /// - 6to4 `2002:aabb:ccdd::/48` (RFC 3056): `aa.bb.cc.dd`, whatever the rest says.
    ///
    /// Teredo (`2001::/32`) also carries IPv4 addresses (its server's and the client's), but it
    /// is not followed: the range classifies all of `2001::/23` as reserved.
    public var embeddedIPv4: IPAddress? {
        guard family == .v6 else { return nil }
        let head = bytes[0..<10]
        if head.allSatisfy({ $0 == 0 }) {
            if bytes[10] == 0xff, bytes[11] == 0xff { return IPAddress(uncheckedBytes: Array(bytes[12..<16])) }
            if bytes[10] == 0, bytes[11] == 0, bytes[12..<15].contains(where: { $0 != 0 }) || bytes[15] > 1 {
                return IPAddress(uncheckedBytes: Array(bytes[12..<16]))
            }
            return nil
        }
        if bytes[0..<4] == [0x00, 0x64, 0xff, 0x9b], bytes[4..<12].allSatisfy({ $0 == 0 }) {
            return IPAddress(uncheckedBytes: Array(bytes[12..<16]))
        }
        if bytes[0] == 0x20, bytes[1] == 0x02 { return IPAddress(uncheckedBytes: Array(bytes[2..<6])) }
        return nil
    }

    /// IPv4 as a dotted quad; IPv6 in RFC 5952's canonical form: lower-case hex without
    /// leading zeros, the longest run of two or more zero groups (the first of equal runs)
    /// written `::`, and an IPv4-mapped address as `::ffff:1.2.3.4`, the only mixed form (as
    /// Go's `netip` writes them: `::1.2.3.4` is `::102:304`, `64:ff9b::1.2.3.4` is `64:ff9b::102:304`).
    public var description: String {
        if family == .v4 { return Self.dottedQuad(bytes[...]) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
            return "::ffff:" + Self.dottedQuad(bytes[12..<16])
        }
        let groups = (0..<8).map { UInt16(bytes[2 * $0]) << 8 | UInt16(bytes[2 * $0 + 1]) }
        var best = (start: -1, length: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8, groups[end] == 0 { end += 1 }
            if end - index > best.length { best = (index, end - index) }
            index = end
        }
        func hex(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        guard best.length >= 2 else { return hex(0..<8) }
        return hex(0..<best.start) + "::" + hex((best.start + best.length)..<8)
    }

    private static func dottedQuad(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.map { String($0) }.joined(separator: ".")
    }

    // MARK: - Socket addresses

    /// The address and port of a `sockaddr_in` or `sockaddr_in6` (the family read from the
    /// struct), as libcurl's `CURLOPT_OPENSOCKETFUNCTION` hands it over; `nil` for another
    /// family or a `length` too short for the family's struct. An IPv6 scope id is not kept.
    static func fromSocketAddress(_ address: UnsafeRawPointer, length: Int) -> (address: IPAddress, port: Int)? {
        // Both structs are at least a `sockaddr` long, so a shorter one is neither.
        guard length >= MemoryLayout<sockaddr>.size else { return nil }
        switch Int32(address.loadUnaligned(as: sockaddr.self).sa_family) {
        case AF_INET:
            guard length >= MemoryLayout<sockaddr_in>.size else { return nil }
            let socket = address.loadUnaligned(as: sockaddr_in.self)
            let bytes = withUnsafeBytes(of: socket.sin_addr) { Array($0) }
            return (IPAddress(uncheckedBytes: bytes), Int(UInt16(bigEndian: socket.sin_port)))
        case AF_INET6:
            guard length >= MemoryLayout<sockaddr_in6>.size else { return nil }
            let socket = address.loadUnaligned(as: sockaddr_in6.self)
            let bytes = withUnsafeBytes(of: socket.sin6_addr) { Array($0) }
            return (IPAddress(uncheckedBytes: bytes), Int(UInt16(bigEndian: socket.sin6_port)))
        default:
            return nil
        }
    }

    // MARK: - Parsers

    /// Four decimal parts 0...255, no leading zeros, nothing around them.
    private static func parseStrictIPv4(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy(isDecimalDigit),
                  part.count == 1 || part.first != UInt8(ascii: "0") else { return nil }
            let value = part.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
            guard value <= 255 else { return nil }
            bytes.append(UInt8(value))
        }
        return bytes
    }

    /// RFC 4291 §2.2 text (without brackets or zone) as 16 bytes.
    private static func parseIPv6(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        let colon = UInt8(ascii: ":")
        var groups: [UInt16] = []
        var ellipsis: Int?  // the index in `groups` where `::` stands
        var index = text.startIndex
        if text.starts(with: [colon, colon]) {
            ellipsis = 0
            index += 2
        }
        while index < text.endIndex {
            let fieldStart = index
            var value: UInt32 = 0
            while index < text.endIndex, let digit = hexValue(text[index]), index - fieldStart < 5 {
                value = value << 4 | UInt32(digit)
                index += 1
            }
            let digits = index - fieldStart
            if index < text.endIndex, text[index] == UInt8(ascii: ".") {
                // A dotted quad fills the last 32 bits, and nothing may follow it.
                guard groups.count <= (ellipsis == nil ? 6 : 5), let quad = parseStrictIPv4(text[fieldStart...]) else { return nil }
                groups.append(UInt16(quad[0]) << 8 | UInt16(quad[1]))
                groups.append(UInt16(quad[2]) << 8 | UInt16(quad[3]))
                index = text.endIndex
                break
            }
            guard (1...4).contains(digits), groups.count < 8 else { return nil }
            groups.append(UInt16(value))
            if index == text.endIndex { break }
            guard text[index] == colon else { return nil }
            index += 1
            guard index < text.endIndex else { return nil }  // a single trailing colon
            if text[index] == colon {
                guard ellipsis == nil else { return nil }
                ellipsis = groups.count
                index += 1
            }
        }
        if let ellipsis {
            guard groups.count <= 7 else { return nil }  // `::` stands for at least one group
            groups.insert(contentsOf: repeatElement(0, count: 8 - groups.count), at: ellipsis)
        } else {
            guard groups.count == 8 else { return nil }
        }
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }

    /// The IPv4 address a URL host names in any spelling the WHATWG URL Standard's IPv4 parser
    /// (and curl's URL parser and `inet_aton`) accepts, or `nil` when the host is not one.
    ///
    /// One to four parts separated by dots, each decimal, `0x` hex or leading-`0` octal (`0x`
    /// alone is 0); every part but the last is one byte, and the last fills the bytes left:
    /// `127.1`, `127.0.1`, `2130706433`, `0x7f.0.0.1` and `0177.0.0.1` are all `127.0.0.1`.
    /// One trailing dot is allowed (`127.0.0.1.`), as WHATWG allows it. A part out of range
    /// (`256.0.0.1`, `4294967296`) or an empty part gives `nil`.
    ///
    /// A first filter on a URL's host, before any connection (the check that counts is on the
    /// socket address curl connects to): the host should be percent-decoded as a URL parser
    /// does; hex digits and `0X` are accepted in either case. IPv6 hosts are not read here
    /// (`IPAddress("[::1]")` reads those).
    static func parseLenientIPv4(_ host: String) -> IPAddress? {
        var parts = Array(host.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        if parts.count > 1, parts.last?.isEmpty == true { parts.removeLast() }
        guard (1...4).contains(parts.count) else { return nil }
        var numbers: [UInt64] = []
        for part in parts {
            guard let number = lenientIPv4Number(part) else { return nil }
            numbers.append(number)
        }
        guard let last = numbers.popLast(), numbers.allSatisfy({ $0 <= 255 }),
              last < UInt64(1) << (8 * (4 - numbers.count)) else { return nil }
        var value = last
        for (position, number) in numbers.enumerated() { value += number << (8 * (3 - position)) }
        return IPAddress(uncheckedBytes: [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) })
    }

    /// One part of a lenient IPv4 address; `nil` for an empty part, a digit outside the radix,
    /// or a value of more than 32 bits.
    private static func lenientIPv4Number(_ part: ArraySlice<UInt8>) -> UInt64? {
        guard !part.isEmpty else { return nil }
        var digits = part
        var radix: UInt64 = 10
        if digits.count >= 2, digits.first == UInt8(ascii: "0"), digits.dropFirst().first.map({ $0 | 0x20 }) == UInt8(ascii: "x") {
            radix = 16
            digits = digits.dropFirst(2)
        } else if digits.count >= 2, digits.first == UInt8(ascii: "0") {
            radix = 8
            digits = digits.dropFirst()
        }
        var value: UInt64 = 0
        for byte in digits {
            guard let digit = hexValue(byte), UInt64(digit) < radix else { return nil }
            value = value * radix + UInt64(digit)
            guard value <= UInt64(UInt32.max) else { return nil }
        }
        return value
    }

    private static func isDecimalDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
