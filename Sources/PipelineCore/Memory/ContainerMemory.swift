#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The memory this process may use, as its container sets it: the cgroup probe behind the
/// container-aware defaults (``MemoryCache/defaultCostLimit(cgroupRoot:physicalMemory:)``,
/// ``ImagePipeline/Configuration/defaultDecodeMemoryBudget(cgroupRoot:physicalMemory:)``).
///
/// It reads a few bytes of the cgroup file system with Foundation; off Linux, or outside a
/// container, the files are missing and there is no limit.
public enum ContainerMemory {
    /// The memory limit of this process's container in bytes, or `nil` when there is none.
    ///
    /// Reads cgroup v2 `<cgroupRoot>/memory.max` (`max` means no limit) and falls back to
    /// cgroup v1 `<cgroupRoot>/memory/memory.limit_in_bytes` (then `<cgroupRoot>/memory.limit_in_bytes`).
    /// A missing, unreadable or malformed file counts as no limit. Inside a container the
    /// cgroup namespace makes the mounted root the container's own group.
    /// - Parameter cgroupRoot: where the cgroup file system is mounted; a test passes a fake directory.
    public static func limit(cgroupRoot: String = "/sys/fs/cgroup") -> UInt64? {
        let root = URL(fileURLWithPath: cgroupRoot, isDirectory: true)
        let candidates = ["memory.max", "memory/memory.limit_in_bytes", "memory.limit_in_bytes"]
        for name in candidates {
            // A cgroup file is a few bytes; refuse anything larger rather than read it.
            guard let data = readPrefix(of: root.appendingPathComponent(name).path, upTo: 64) else { continue }
            let text = String(decoding: data, as: UTF8.self).trimmingWhitespace()
            if text == "max" { return nil }
            // cgroup v1 spells "no limit" as a page-rounded Int64.max; callers take the minimum
            // with physical memory, so such a value is harmless.
            if let bytes = UInt64(text), bytes > 0 { return bytes }
        }
        return nil
    }

    /// The memory this process may use in bytes: the smaller of `physicalMemory` and the
    /// container's ``limit(cgroupRoot:)``.
    /// - Parameters:
    ///   - cgroupRoot: where the cgroup file system is mounted; a test passes a fake directory.
    ///   - physicalMemory: the machine's memory in bytes; default `ProcessInfo`'s.
    public static func available(cgroupRoot: String = "/sys/fs/cgroup",
                                 physicalMemory: UInt64 = ProcessInfo.processInfo.physicalMemory) -> UInt64 {
        min(physicalMemory, limit(cgroupRoot: cgroupRoot) ?? .max)
    }
}
