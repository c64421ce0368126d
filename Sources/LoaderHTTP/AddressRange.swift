/// The kind of network an address belongs to, after the IANA IPv4 and IPv6 Special-Purpose
/// Address Registries (RFC 6890 and the registries as of 2024-10).
///
/// ``publicInternet`` is the globally routable unicast space (IPv4 outside the blocks below,
/// IPv6 inside `2000::/3`) minus every block of either special-purpose registry, whatever the
/// registry's "Globally Reachable" column says: an image server has no reason to fetch from an
/// anycast service or protocol address, so where unsure this errs on the side of not public.
/// The borderline cases, and what was chosen:
///
/// - `192.0.0.9` (PCP anycast) and `192.0.0.10` (TURN anycast), globally reachable per IANA:
///   the whole of `192.0.0.0/24` is reserved. Likewise `2001:1::1`, `2001:1::2` and `2001:1::3`
///   (PCP, TURN, DNS-SD SRP anycast), `2001:3::/32` (AMT), `2001:4:112::/48` (AS112),
///   `2001:20::/28` (ORCHIDv2, identifiers rather than locators) and `2001:30::/28` (drone
///   remote ID): the whole of `2001::/23` is reserved.
/// - Teredo `2001::/32` is reserved, not classified by the IPv4 addresses it carries: a Teredo
///   peer is reached through a relay, and nothing here can tell where that leads.
/// - `192.88.99.0/24` (the deprecated 6to4 relay anycast, with `192.88.99.2` 6a44), AS112's
///   `192.31.196.0/24`, `192.175.48.0/24` and `2620:4f:8000::/48`, and AMT's `192.52.193.0/24`
///   are reserved although globally routed: they are DNS sinks and tunnel relays, not hosts.
/// - An IPv6 address that embeds an IPv4 one (``IPAddress/embeddedIPv4``) is the embedded
///   address's range: IPv4-mapped `::ffff:127.0.0.1` is ``loopback``, NAT64 `64:ff9b::10.0.0.1`
///   ``privateNetwork``, 6to4 `2002:a9fe:a9fe::` ``linkLocal``, and a mapped, NAT64 or 6to4
///   address of a public IPv4 address is public. An IPv4-compatible address (`::a.b.c.d`,
///   deprecated) takes the embedded range only when that is not public; `::8.8.8.8` is
///   ``reserved``, as no stack routes it to `8.8.8.8`.
/// - `64:ff9b:1::/48` (local-use NAT64), `100::/64` (discard), `100:0:0:1::/64` (dummy prefix),
///   `5f00::/16` (SRv6 SIDs), IPv4-translated `::ffff:0:a.b.c.d` and all else outside
///   `2000::/3` and not named are reserved, as is `240.0.0.0/4` but for the broadcast address.
/// - The cloud metadata services that answer outside `169.254/16` are ``cloudMetadata``, a class
///   of their own that no registry has: what they hand out (machine credentials) matters more
///   than the block they sit in.
public enum AddressRange: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Globally routable unicast space outside every special-purpose block.
    case publicInternet = "public"
    /// `127.0.0.0/8` and `::1`.
    case loopback
    /// `169.254.0.0/16` (with the cloud metadata address `169.254.169.254`) and `fe80::/10`.
    case linkLocal = "link-local"
    /// A cloud provider's instance metadata service outside link-local space, which answers
    /// with machine credentials as `169.254.169.254` does: AWS's IPv6 `fd00:ec2::254` (and EKS
    /// pod identity's `fd00:ec2::23`), Google's IPv6 `fd20:ce::254`, Alibaba Cloud's
    /// `100.100.100.200` and Oracle Cloud's `192.0.0.192`. Each would otherwise be a private,
    /// shared or reserved address, which ``ConnectionPolicy/default`` allows.
    case cloudMetadata = "cloud metadata"
    /// `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`; unique local `fc00::/7` and the
    /// deprecated site-local `fec0::/10`.
    case privateNetwork = "private"
    /// `100.64.0.0/10`, carrier-grade NAT (RFC 6598).
    case sharedAddressSpace = "shared (CGNAT)"
    /// `0.0.0.0/8` ("this network": Linux connects `0.0.0.0` to the local host) and `::`.
    case unspecified
    /// `224.0.0.0/4` and `ff00::/8`.
    case multicast
    /// `255.255.255.255`, the limited broadcast address.
    case broadcast
    /// `192.0.2.0/24`, `198.51.100.0/24`, `203.0.113.0/24`, `2001:db8::/32` and `3fff::/20`.
    case documentation
    /// `198.18.0.0/15` and `2001:2::/48`.
    case benchmarking
    /// Everything else that is not public: `240.0.0.0/4`, `192.0.0.0/24`, `192.88.99.0/24`,
    /// `100::/64`, `2001::/23` (with Teredo), `64:ff9b:1::/48`, IPv6 outside `2000::/3` not
    /// named above, and the borderline blocks listed on ``AddressRange``.
    case reserved

    /// The raw value: `public`, `loopback`, `link-local`, `private`, `shared (CGNAT)`, ….
    public var description: String { rawValue }

    /// The range `address` belongs to; ``IPAddress/range`` is the way in.
    init(classifying address: IPAddress) {
        guard address.family == .v6 else {
            self = Self.ipv4Blocks.first { $0.contains(address.bytes) }?.range ?? .publicInternet
            return
        }
        if let embedded = address.embeddedIPv4 {
            let range = AddressRange(classifying: embedded)
            let compatible = address.bytes[0..<12].allSatisfy { $0 == 0 }
            self = compatible && range == .publicInternet ? .reserved : range
            return
        }
        if let block = Self.ipv6Blocks.first(where: { $0.contains(address.bytes) }) {
            self = block.range
        } else {
            self = Self.globalUnicast.contains(address.bytes) ? .publicInternet : .reserved
        }
    }

    /// IPv4's special blocks; the first that holds an address gives its range, and an address
    /// in none is public.
    private static let ipv4Blocks: [AddressBlock] = [
        AddressBlock([100, 100, 100, 200], 32, .cloudMetadata),  // Alibaba Cloud
        AddressBlock([192, 0, 0, 192], 32, .cloudMetadata),  // Oracle Cloud
        AddressBlock([0, 0, 0, 0], 8, .unspecified),
        AddressBlock([10, 0, 0, 0], 8, .privateNetwork),
        AddressBlock([100, 64, 0, 0], 10, .sharedAddressSpace),
        AddressBlock([127, 0, 0, 0], 8, .loopback),
        AddressBlock([169, 254, 0, 0], 16, .linkLocal),
        AddressBlock([172, 16, 0, 0], 12, .privateNetwork),
        AddressBlock([192, 0, 0, 0], 24, .reserved),  // IETF protocol assignments, with PCP and TURN anycast
        AddressBlock([192, 0, 2, 0], 24, .documentation),  // TEST-NET-1
        AddressBlock([192, 31, 196, 0], 24, .reserved),  // AS112-v4
        AddressBlock([192, 52, 193, 0], 24, .reserved),  // AMT
        AddressBlock([192, 88, 99, 0], 24, .reserved),  // deprecated 6to4 relay anycast, 6a44
        AddressBlock([192, 168, 0, 0], 16, .privateNetwork),
        AddressBlock([192, 175, 48, 0], 24, .reserved),  // AS112 direct delegation
        AddressBlock([198, 18, 0, 0], 15, .benchmarking),
        AddressBlock([198, 51, 100, 0], 24, .documentation),  // TEST-NET-2
        AddressBlock([203, 0, 113, 0], 24, .documentation),  // TEST-NET-3
        AddressBlock([224, 0, 0, 0], 4, .multicast),
        AddressBlock([255, 255, 255, 255], 32, .broadcast),
        AddressBlock([240, 0, 0, 0], 4, .reserved),
    ]

    /// IPv6's special blocks, after the forms that embed an IPv4 address; the first that holds
    /// an address gives its range (so a block comes before any block that contains it).
    private static let ipv6Blocks: [AddressBlock] = [
        AddressBlock([], 128, .unspecified),
        AddressBlock([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, .loopback),
        AddressBlock([0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54], 128, .cloudMetadata),  // AWS IMDS
        AddressBlock([0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x23], 128, .cloudMetadata),  // EKS pod identity
        AddressBlock([0xfd, 0x20, 0x00, 0xce, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54], 128, .cloudMetadata),  // Google
        AddressBlock([0x20, 0x01, 0x00, 0x02], 48, .benchmarking),
        AddressBlock([0x20, 0x01], 23, .reserved),  // IETF protocol assignments: Teredo, ORCHIDv2, AMT, ...
        AddressBlock([0x20, 0x01, 0x0d, 0xb8], 32, .documentation),
        AddressBlock([0x26, 0x20, 0x00, 0x4f, 0x80], 48, .reserved),  // AS112 direct delegation
        AddressBlock([0x3f, 0xff], 20, .documentation),
        AddressBlock([0xfc], 7, .privateNetwork),  // unique local
        AddressBlock([0xfe, 0x80], 10, .linkLocal),
        AddressBlock([0xfe, 0xc0], 10, .privateNetwork),  // deprecated site-local
        AddressBlock([0xff], 8, .multicast),
    ]

    /// IPv6 global unicast, `2000::/3`: public outside the blocks above; the rest is reserved.
    private static let globalUnicast = AddressBlock([0x20], 3, .publicInternet)
}

/// A prefix of an address family and the range its addresses belong to.
private struct AddressBlock {
    /// The prefix's leading bytes; the rest are zero.
    let prefix: [UInt8]
    /// How many leading bits of an address must equal the prefix's.
    let length: Int
    let range: AddressRange

    init(_ prefix: [UInt8], _ length: Int, _ range: AddressRange) {
        self.prefix = prefix
        self.length = length
        self.range = range
    }

    /// Whether `bytes` (an address of this block's family) starts with the prefix.
    func contains(_ bytes: [UInt8]) -> Bool {
        var bits = length
        for index in bytes.indices where bits > 0 {
            let mask: UInt8 = bits >= 8 ? 0xff : ~(0xff >> bits)
            let expected = index < prefix.count ? prefix[index] : 0
            guard bytes[index] & mask == expected & mask else { return false }
            bits -= 8
        }
        return true
    }
}
