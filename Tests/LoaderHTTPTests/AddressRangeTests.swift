@testable import LoaderHTTP
import PipelineTestSupport
import Testing

/// The classifier the SSRF guard decides on: every range on its edges (first and last address
/// inside, the neighbours just outside), the IPv6 spellings of IPv4 addresses, and the
/// borderline blocks as ``AddressRange`` documents them. Nothing here connects anywhere.
@Suite("AddressRange")
struct AddressRangeTests {
    static let ipv4Edges: [(String, AddressRange)] = [
        ("0.0.0.0", .unspecified), ("0.255.255.255", .unspecified), ("1.0.0.0", .publicInternet),
        ("9.255.255.255", .publicInternet), ("10.0.0.0", .privateNetwork), ("10.255.255.255", .privateNetwork), ("11.0.0.0", .publicInternet),
        ("100.63.255.255", .publicInternet), ("100.64.0.0", .sharedAddressSpace), ("100.127.255.255", .sharedAddressSpace),
        ("100.128.0.0", .publicInternet),
        ("100.100.100.199", .sharedAddressSpace), ("100.100.100.200", .cloudMetadata), ("100.100.100.201", .sharedAddressSpace),
        ("192.0.0.191", .reserved), ("192.0.0.192", .cloudMetadata), ("192.0.0.193", .reserved),
        ("126.255.255.255", .publicInternet), ("127.0.0.0", .loopback), ("127.0.0.1", .loopback), ("127.255.255.255", .loopback),
        ("128.0.0.0", .publicInternet),
        ("169.253.255.255", .publicInternet), ("169.254.0.0", .linkLocal), ("169.254.169.254", .linkLocal),
        ("169.254.255.255", .linkLocal), ("169.255.0.0", .publicInternet),
        ("172.15.255.255", .publicInternet), ("172.16.0.0", .privateNetwork), ("172.31.255.255", .privateNetwork),
        ("172.32.0.0", .publicInternet),
        ("191.255.255.255", .publicInternet), ("192.0.0.0", .reserved), ("192.0.0.8", .reserved), ("192.0.0.9", .reserved),
        ("192.0.0.10", .reserved), ("192.0.0.170", .reserved), ("192.0.0.255", .reserved), ("192.0.1.0", .publicInternet),
        ("192.0.1.255", .publicInternet), ("192.0.2.0", .documentation), ("192.0.2.255", .documentation), ("192.0.3.0", .publicInternet),
        ("192.31.195.255", .publicInternet), ("192.31.196.0", .reserved), ("192.31.196.255", .reserved), ("192.31.197.0", .publicInternet),
        ("192.52.192.255", .publicInternet), ("192.52.193.0", .reserved), ("192.52.193.255", .reserved), ("192.52.194.0", .publicInternet),
        ("192.88.98.255", .publicInternet), ("192.88.99.0", .reserved), ("192.88.99.2", .reserved), ("192.88.99.255", .reserved),
        ("192.88.100.0", .publicInternet),
        ("192.167.255.255", .publicInternet), ("192.168.0.0", .privateNetwork), ("192.168.255.255", .privateNetwork),
        ("192.169.0.0", .publicInternet),
        ("192.175.47.255", .publicInternet), ("192.175.48.0", .reserved), ("192.175.48.255", .reserved), ("192.175.49.0", .publicInternet),
        ("198.17.255.255", .publicInternet), ("198.18.0.0", .benchmarking), ("198.19.255.255", .benchmarking), ("198.20.0.0", .publicInternet),
        ("198.51.99.255", .publicInternet), ("198.51.100.0", .documentation), ("198.51.100.255", .documentation),
        ("198.51.101.0", .publicInternet),
        ("203.0.112.255", .publicInternet), ("203.0.113.0", .documentation), ("203.0.113.255", .documentation), ("203.0.114.0", .publicInternet),
        ("8.8.8.8", .publicInternet), ("1.1.1.1", .publicInternet),
        ("223.255.255.255", .publicInternet), ("224.0.0.0", .multicast), ("239.255.255.255", .multicast), ("240.0.0.0", .reserved),
        ("255.255.255.254", .reserved), ("255.255.255.255", .broadcast),
    ]

    @Test(arguments: ipv4Edges)
    func ipv4RangesOnTheirEdges(_ text: String, _ range: AddressRange) throws {
        #expect(try #require(IPAddress(text)).range == range)
    }

    static let ipv6Edges: [(String, AddressRange)] = [
        ("::", .unspecified), ("::1", .loopback), ("::2", .unspecified),  // `::2` is IPv4-compatible 0.0.0.2
        ("::1:0:0", .reserved), ("::ffff:0:0:0", .reserved), ("::ffff:0:1.2.3.4", .reserved),  // IPv4-translated, not mapped
        ("1:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved),
        ("64:ff9b:1::", .reserved), ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", .reserved), ("64:ff9b:0:0:1::", .reserved),
        ("100::", .reserved), ("100::ffff:ffff:ffff:ffff", .reserved), ("100:0:0:1::", .reserved),
        ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("2000::", .publicInternet),
        ("2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .publicInternet),
        ("2001::", .reserved), ("2001::1", .reserved), ("2001:0:4136:e378:8000:63bf:3fff:fdd2", .reserved),  // Teredo
        ("2001:1::1", .reserved), ("2001:1::2", .reserved), ("2001:1::3", .reserved), ("2001:3::", .reserved),
        ("2001:4:112::", .reserved), ("2001:10::", .reserved), ("2001:20::", .reserved), ("2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", .reserved),
        ("2001:30::", .reserved), ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("2001:200::", .publicInternet),
        ("2001:1:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("2001:2::", .benchmarking), ("2001:2:0:ffff:ffff:ffff:ffff:ffff", .benchmarking),
        ("2001:2:1::", .reserved),
        ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", .publicInternet), ("2001:db8::", .documentation),
        ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", .documentation), ("2001:db9::", .publicInternet),
        ("2001:4860:4860::8888", .publicInternet), ("2606:4700:4700::1111", .publicInternet),
        ("2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", .publicInternet), ("2620:4f:8000::", .reserved),
        ("2620:4f:8000:ffff:ffff:ffff:ffff:ffff", .reserved), ("2620:4f:8001::", .publicInternet),
        ("3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .publicInternet), ("3fff::", .documentation),
        ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", .documentation), ("3fff:1000::", .publicInternet),
        ("3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .publicInternet), ("4000::", .reserved), ("5f00::1", .reserved),
        ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("fc00::", .privateNetwork), ("fd12:3456:789a::1", .privateNetwork),
        ("fd00:ec2::253", .privateNetwork), ("fd00:ec2::254", .cloudMetadata), ("fd00:ec2::255", .privateNetwork),
        ("fd00:ec2::23", .cloudMetadata), ("fd20:ce::254", .cloudMetadata), ("fd20:ce::253", .privateNetwork),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .privateNetwork), ("fe00::", .reserved),
        ("fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .reserved), ("fe80::", .linkLocal), ("fe80::1%eth0", .linkLocal),
        ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .linkLocal), ("fec0::", .privateNetwork),
        ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .privateNetwork), ("ff00::", .multicast), ("ff02::1", .multicast),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", .multicast),
    ]

    @Test(arguments: ipv6Edges)
    func ipv6RangesOnTheirEdges(_ text: String, _ range: AddressRange) throws {
        #expect(try #require(IPAddress(text)).range == range)
    }

    /// The brief's examples: each IPv6 spelling of an IPv4 address is classified as that address.
    @Test(arguments: [
        ("::ffff:127.0.0.1", AddressRange.loopback), ("::ffff:7f00:1", .loopback), ("[::FFFF:127.0.0.1]", .loopback),
        ("0:0:0:0:0:ffff:127.0.0.1", .loopback), ("::127.0.0.1", .loopback), ("64:ff9b::127.0.0.1", .loopback),
        ("64:ff9b::7f00:1", .loopback), ("2002:7f00:1::", .loopback), ("2002:7f00:0001:ffff::1", .loopback),
        ("::ffff:169.254.169.254", .linkLocal), ("2002:a9fe:a9fe::", .linkLocal), ("64:ff9b::a9fe:a9fe", .linkLocal),
        ("::169.254.169.254", .linkLocal),
        ("64:ff9b::10.0.0.1", .privateNetwork), ("::ffff:192.168.1.1", .privateNetwork), ("2002:ac10::", .privateNetwork),
        ("::ffff:100.64.0.1", .sharedAddressSpace), ("::ffff:0.0.0.0", .unspecified), ("64:ff9b::", .unspecified),
        ("2002::", .unspecified), ("::ffff:224.0.0.1", .multicast), ("::ffff:255.255.255.255", .broadcast),
        ("2002:c000:0201::", .documentation), ("::ffff:198.18.0.1", .benchmarking), ("2002:c058:6301::", .reserved),
        ("::ffff:8.8.8.8", .publicInternet), ("64:ff9b::8.8.8.8", .publicInternet), ("2002:808:808::1", .publicInternet),
        ("::8.8.8.8", .reserved),  // IPv4-compatible: deprecated, never routed to the IPv4 host
    ])
    func ipv6SpellingsOfIPv4AreClassifiedAsTheIPv4Address(_ text: String, _ range: AddressRange) throws {
        #expect(try #require(IPAddress(text)).range == range)
    }

    /// Over a sample of the whole IPv4 space with every edge above: the mapped, NAT64 and 6to4
    /// forms share the IPv4 address's range, and the IPv4-compatible form too unless that is public.
    @Test func everyEmbeddingSharesTheIPv4Range() throws {
        var samples = try Self.ipv4Edges.map { try #require(IPAddress($0.0)).bytes }
        var generator = SeededGenerator(seed: 6890)
        for _ in 0..<5000 {
            let value = UInt32.random(in: 0...UInt32.max, using: &generator)
            samples.append([24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) })
        }
        for v4 in samples {
            let range = try #require(IPAddress(bytes: v4)).range
            let zeros = [UInt8](repeating: 0, count: 10)
            let mapped = try #require(IPAddress(bytes: zeros + [0xff, 0xff] + v4))
            let nat64 = try #require(IPAddress(bytes: [0, 0x64, 0xff, 0x9b] + [UInt8](repeating: 0, count: 8) + v4))
            let sixToFour = try #require(IPAddress(bytes: [0x20, 0x02] + v4 + [UInt8](repeating: 0xab, count: 10)))
            let compatible = try #require(IPAddress(bytes: zeros + [0, 0] + v4))
            #expect(mapped.range == range, "\(mapped)")
            #expect(nat64.range == range, "\(nat64)")
            #expect(sixToFour.range == range, "\(sixToFour)")
            if compatible.embeddedIPv4 != nil {
                #expect(compatible.range == (range == .publicInternet ? .reserved : range), "\(compatible)")
            }
            #expect(mapped.embeddedIPv4?.bytes == v4)
            #expect(nat64.embeddedIPv4?.bytes == v4)
            #expect(sixToFour.embeddedIPv4?.bytes == v4)
        }
    }

    /// The names a refusal message shows.
    @Test func descriptionsAreTheRawValues() {
        #expect(AddressRange.allCases.map(\.description) == [
            "public", "loopback", "link-local", "cloud metadata", "private", "shared (CGNAT)", "unspecified", "multicast", "broadcast",
            "documentation", "benchmarking", "reserved",
        ])
        #expect(AddressRange(rawValue: "link-local") == .linkLocal)
        #expect("\(AddressRange.sharedAddressSpace)" == "shared (CGNAT)")
    }

    /// Every range is reachable from some address (the tables name no range twice by mistake
    /// and miss none).
    @Test func everyRangeHasAnAddress() throws {
        let seen = Set(try (Self.ipv4Edges + Self.ipv6Edges).map { try #require(IPAddress($0.0)).range })
        #expect(seen == Set(AddressRange.allCases))
    }
}
