#if canImport(Glibc)
import Glibc
#endif
@testable import LoaderHTTP
import PipelineTestSupport
import Testing

/// How the SSRF guard reads addresses: the strict spellings a socket or a bracketed URL host
/// gives, RFC 5952 text, `sockaddr` structs, and the lenient IPv4 spellings of URL hosts.
/// Nothing here opens a socket.
@Suite("IPAddress")
struct IPAddressTests {
    // MARK: Parsing and text

    /// Canonical text parses and prints back unchanged.
    @Test(arguments: [
        "0.0.0.0", "127.0.0.1", "255.255.255.255", "1.2.3.4", "10.0.0.255", "169.254.169.254",
        "::", "::1", "1::", "2001:db8::1", "fe80::1", "ff02::1", "2001:db8:0:1:1:1:1:1", "2001:db8::1:0:0:1",
        "1:0:0:2::3", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4", "::ffff:0.0.0.0", "64:ff9b::a00:1", "2002:a9fe:a9fe::",
        "::7f00:1", "abcd:ef01:2345:6789:abcd:ef01:2345:6789", "1::8", "0:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:0",
    ])
    func canonicalTextRoundTrips(_ text: String) throws {
        #expect(try #require(IPAddress(text)).description == text)
    }

    /// Other spellings of the same address print in RFC 5952's canonical form.
    @Test(arguments: [
        ("2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),  // lower case, no leading zeros, `::`
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),  // of equal runs, the first is compressed
        ("1:0:0:2:0:0:0:3", "1:0:0:2::3"),  // the longest run is, wherever it is
        ("2001:db8::0:1", "2001:db8::1"),
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),  // a single zero group stays
        ("2001:db8:1:1:1:1:1::", "2001:db8:1:1:1:1:1:0"),  // so does one that `::` stood for
        ("::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8"), ("1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"),
        ("0:0:0:0:0:0:0:0", "::"), ("0:0:0:0:0:0:0:1", "::1"), ("1:0:0:0:0:0:0:0", "1::"),
        ("::ffff:7f00:1", "::ffff:127.0.0.1"), ("0:0:0:0:0:ffff:127.0.0.1", "::ffff:127.0.0.1"),
        ("[::FFFF:10.0.0.1]", "::ffff:10.0.0.1"), ("::127.0.0.1", "::7f00:1"), ("64:ff9b::1.2.3.4", "64:ff9b::102:304"),
        ("1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304"), ("1:2:3:4:5::1.2.3.4", "1:2:3:4:5:0:102:304"),
        ("[::1]", "::1"), ("[2001:DB8::A]", "2001:db8::a"), ("fe80::1%eth0", "fe80::1"), ("[fe80::1%25eth0]", "fe80::1"),
        ("FE80::0001%2", "fe80::1"),
    ])
    func otherSpellingsPrintCanonically(_ text: String, _ canonical: String) throws {
        let address = try #require(IPAddress(text))
        #expect(address.description == canonical)
        #expect(IPAddress(canonical) == address)
    }

    /// Anything that is not exactly an address is refused, including the lenient IPv4 forms.
    static let malformed = [
        "", " ", "1.2.3", "1.2.3.4.5", "256.0.0.1", "1.2.3.256", "1.2.3.4.", ".1.2.3.4", "1..2.3", "1.2.3.-4",
        "01.2.3.4", "1.2.3.04", "0x7f.0.0.1", "0177.0.0.1", "127.1", "2130706433", " 1.2.3.4", "1.2.3.4 ", "1.2.3.4/32",
        "1234.1.1.1", "1.2.3.a",
        "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1::2::3", "::1::", ":::", ":1::2", "1::2:", "1:2:3:4:5:6:7:8::",
        "::1:2:3:4:5:6:7:8", "12345::", "g::1", "1:2:3:4:5:6:7:8:", ":", "1:", "::ffff:1.2.3", "::ffff:1.2.3.4.5",
        "::ffff:256.1.1.1", "::ffff:01.2.3.4", "1.2.3.4::", "::1.2.3.4:5", "1:2:3:4:5:6:7:1.2.3.4", "::ffff:1.2.3.4.",
        "2001:db8::1/64", "2001:db8:: 1",
    ]

    @Test(arguments: malformed)
    func malformedTextIsRefused(_ text: String) {
        #expect(IPAddress(text) == nil)
    }

    /// glibc's `inet_pton` agrees that the malformed texts are no addresses of either family.
    @Test func inetPtonRefusesTheMalformedTextsToo() {
        var buffer = [UInt8](repeating: 0, count: 16)
        for text in Self.malformed {
            #expect(inet_pton(AF_INET, text, &buffer) == 0, "\(text)")
            #expect(inet_pton(AF_INET6, text, &buffer) == 0, "\(text)")
        }
    }

    /// Brackets, zones and mixed IPv4 tails belong to IPv6 only.
    @Test(arguments: ["[1.2.3.4]", "1.2.3.4%eth0", "[::1", "::1]", "[]", "[", "[[::1]]", "fe80::1%", "[fe80::1%]", "fe80::1%eth 0", "fe80::1%a%b"])
    func bracketsAndZonesAreIPv6Only(_ text: String) {
        #expect(IPAddress(text) == nil)
    }

    /// Random addresses, many with runs of zero groups: our text is glibc's (`inet_ntop`),
    /// `inet_pton` reads it back to the same bytes, and so does our parser. IPv4-compatible
    /// addresses are left out of the text comparison: glibc writes them `::1.2.3.4`, RFC 5952
    /// only mixes IPv4-mapped ones.
    @Test func textAgreesWithGlibcOnRandomAddresses() throws {
        var generator = SeededGenerator(seed: 21)
        for _ in 0..<5000 {
            var bytes = [UInt8](repeating: 0, count: 16)
            for group in 0..<8 where Bool.random(using: &generator) {
                let value = UInt16.random(in: 0...(Bool.random(using: &generator) ? 0xf : 0xffff), using: &generator)
                bytes[2 * group] = UInt8(value >> 8)
                bytes[2 * group + 1] = UInt8(value & 0xff)
            }
            if Int.random(in: 0..<8, using: &generator) == 0 { bytes.replaceSubrange(0..<12, with: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]) }
            let address = try #require(IPAddress(bytes: bytes))
            let text = address.description
            var parsed = [UInt8](repeating: 0, count: 16)
            #expect(inet_pton(AF_INET6, text, &parsed) == 1, "\(text)")
            #expect(parsed == bytes, "\(text)")
            #expect(IPAddress(text) == address, "\(text)")
            #expect(IPAddress(text.uppercased()) == address, "\(text)")
            #expect(IPAddress("[\(text)]") == address, "\(text)")
            if !bytes[0..<12].allSatisfy({ $0 == 0 }) {
                var characters = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                #expect(inet_ntop(AF_INET6, bytes, &characters, socklen_t(characters.count)) != nil)
                #expect(String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) == text)
            }
        }
    }

    @Test func bytesSetTheFamily() throws {
        #expect(try #require(IPAddress(bytes: [127, 0, 0, 1])).family == .v4)
        #expect(try #require(IPAddress(bytes: [UInt8](repeating: 0, count: 16))).family == .v6)
        #expect(IPAddress(bytes: []) == nil)
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 5)) == nil)
        #expect(IPAddress(bytes: [UInt8](repeating: 0, count: 17)) == nil)
        #expect(IPAddress("10.1.2.3")?.bytes == [10, 1, 2, 3])
        #expect(IPAddress("2001:db8::ff")?.bytes == [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [0xff])
    }

    /// An address is its bytes: spellings of one address are equal, a mapped address is not its IPv4 one.
    @Test func equalityIsByBytes() {
        #expect(IPAddress("::1") == IPAddress("0:0:0:0:0:0:0:1"))
        #expect(IPAddress("[::1]") == IPAddress("::1"))
        #expect(IPAddress("::ffff:1.2.3.4") != IPAddress("1.2.3.4"))
        #expect(Set(["fe80::1", "FE80::1", "fe80::1%eth0", "fe80::2"].compactMap(IPAddress.init)).count == 2)
    }

    // MARK: Embedded IPv4

    @Test(arguments: [
        ("::ffff:127.0.0.1", "127.0.0.1"), ("::ffff:0.0.0.0", "0.0.0.0"), ("::ffff:a9fe:a9fe", "169.254.169.254"),
        ("::127.0.0.1", "127.0.0.1"), ("::0.0.0.2", "0.0.0.2"), ("::1.0.0.0", "1.0.0.0"), ("::0.0.1.0", "0.0.1.0"),
        ("64:ff9b::10.0.0.1", "10.0.0.1"), ("64:ff9b::", "0.0.0.0"), ("64:ff9b::ffff:ffff", "255.255.255.255"),
        ("2002:a9fe:a9fe::", "169.254.169.254"), ("2002:0808:0808:1:2:3:4:5", "8.8.8.8"), ("2002::", "0.0.0.0"),
    ])
    func embeddedIPv4IsFound(_ text: String, _ embedded: String) throws {
        #expect(try #require(IPAddress(text)).embeddedIPv4 == IPAddress(embedded))
    }

    @Test(arguments: [
        "127.0.0.1", "::", "::1", "::ffff:0:1.2.3.4", "0:0:0:0:1:ffff:1.2.3.4", "64:ff9b:1::1.2.3.4", "64:ff9b:0:0:1::1.2.3.4",
        "2001::1.2.3.4", "2001:db8::1.2.3.4", "2003::", "fe80::1.2.3.4",
    ])
    func noEmbeddedIPv4Elsewhere(_ text: String) throws {
        #expect(try #require(IPAddress(text)).embeddedIPv4 == nil)
    }

    // MARK: Socket addresses

    @Test func socketAddressInIsRead() throws {
        var socket = sockaddr_in()
        socket.sin_family = sa_family_t(AF_INET)
        socket.sin_port = UInt16(8080).bigEndian
        socket.sin_addr = in_addr(s_addr: UInt32(0xa9fe_a9fe).bigEndian)
        let read = try #require(readSocketAddress(&socket))
        #expect(read.address == IPAddress("169.254.169.254"))
        #expect(read.port == 8080)
        #expect(read.address.range == .linkLocal)
    }

    @Test func socketAddressIn6IsReadWithoutItsScope() throws {
        var socket = sockaddr_in6()
        socket.sin6_family = sa_family_t(AF_INET6)
        socket.sin6_port = UInt16(65535).bigEndian
        socket.sin6_scope_id = 2
        let bytes = try #require(IPAddress("fe80::1:2")).bytes
        withUnsafeMutableBytes(of: &socket.sin6_addr) { $0.copyBytes(from: bytes) }
        let read = try #require(readSocketAddress(&socket))
        #expect(read.address == IPAddress("fe80::1:2"))
        #expect(read.port == 65535)
    }

    /// A dual-stack socket's IPv4 peer, in a `sockaddr_storage` as large as curl's.
    @Test func mappedAddressInAStorageIsRead() throws {
        var storage = sockaddr_storage()
        let bytes = try #require(IPAddress("::ffff:127.0.0.1")).bytes
        withUnsafeMutableBytes(of: &storage) { raw in
            var socket = sockaddr_in6()
            socket.sin6_family = sa_family_t(AF_INET6)
            socket.sin6_port = UInt16(80).bigEndian
            withUnsafeMutableBytes(of: &socket.sin6_addr) { $0.copyBytes(from: bytes) }
            withUnsafeBytes(of: &socket) { raw.copyMemory(from: $0) }
        }
        let read = try #require(readSocketAddress(&storage))
        #expect(read.address.description == "::ffff:127.0.0.1")
        #expect(read.port == 80)
        #expect(read.address.range == .loopback)
    }

    @Test func otherFamiliesAndShortLengthsAreRefused() throws {
        var unix = sockaddr_un()
        unix.sun_family = sa_family_t(AF_UNIX)
        #expect(readSocketAddress(&unix) == nil)

        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        for length in [0, 1, 2, MemoryLayout<sockaddr_in>.size - 1] {
            #expect(readSocketAddress(&v4, length: length) == nil, "\(length)")
        }
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        for length in [2, MemoryLayout<sockaddr_in>.size, MemoryLayout<sockaddr_in6>.size - 1] {
            #expect(readSocketAddress(&v6, length: length) == nil, "\(length)")
        }
        #expect(readSocketAddress(&v6) != nil)
    }

    // MARK: Lenient IPv4 (URL hosts)

    @Test(arguments: [
        ("127.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"), ("127.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"), ("0X7F.0.0.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("0x7f000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"), ("127.0.0.1.", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("00000000177.0.0.01", "127.0.0.1"),
        ("0", "0.0.0.0"), ("0x", "0.0.0.0"), ("0x.0x.0x.0x", "0.0.0.0"), ("0.0.0.0", "0.0.0.0"),
        ("4294967295", "255.255.255.255"), ("0xffffffff", "255.255.255.255"), ("037777777777", "255.255.255.255"),
        ("169.254.43518", "169.254.169.254"), ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"), ("2852039166", "169.254.169.254"),
        ("10.16777215", "10.255.255.255"), ("192.168.65535", "192.168.255.255"), ("1.2.3.4", "1.2.3.4"),
    ])
    func lenientIPv4SpellingsAreRead(_ host: String, _ address: String) {
        #expect(IPAddress.parseLenientIPv4(host) == IPAddress(address))
    }

    @Test(arguments: [
        "", ".", "..", "1..1", ".1.2.3", "1.2.3.4.5", "1.2.3.4..", "256.0.0.1", "1.256.0.1", "4294967296", "0x100000000",
        "1.16777216", "1.2.65536", "1.2.3.256", "08", "0x7g.0.0.1", "09.0.0.1", "localhost", "example.com", "1.2.3.foo",
        "::1", "[127.0.0.1]", " 127.0.0.1", "127.0.0.1 ", "+1", "-1", "1e3", "0x-1", "99999999999999999999999",
    ])
    func nonIPv4HostsAreNotRead(_ host: String) {
        #expect(IPAddress.parseLenientIPv4(host) == nil)
    }

    /// glibc's `inet_aton` reads every lenient spelling above to the same address (it differs
    /// from WHATWG only on `0x` alone and a trailing dot, left out here).
    @Test func inetAtonAgreesOnLenientSpellings() {
        for host in ["127.1", "127.0.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "0x7f000001", "169.254.43518", "037777777777"] {
            var address = in_addr()
            #expect(inet_aton(host, &address) == 1, "\(host)")
            #expect(IPAddress.parseLenientIPv4(host).map(\.bytes) == withUnsafeBytes(of: address) { Array($0) }, "\(host)")
        }
    }
}

/// `IPAddress.fromSocketAddress` on the bytes of `value`, read as `length` bytes (all of them by default).
private func readSocketAddress<T>(_ value: inout T, length: Int? = nil) -> (address: IPAddress, port: Int)? {
    withUnsafeBytes(of: &value) { raw in raw.baseAddress.flatMap { IPAddress.fromSocketAddress($0, length: length ?? raw.count) } }
}
