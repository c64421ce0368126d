import Foundation

extension URL {
    /// What per-host fairness groups requests by: `scheme://host:port` (the port `-1` when the
    /// URL has none), so two origins on one address are two hosts. `data:` and `file:` URLs
    /// have one key per scheme.
    package var originKey: String { "\(scheme ?? "")://\(host ?? ""):\(port ?? -1)" }
}
