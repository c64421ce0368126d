/// Why a ``MemoryPressureWatcher`` cannot use PSI triggers (and, when the averages cannot be
/// read either, cannot watch at all).
public enum MemoryPressureUnavailable: Error, Sendable, Hashable {
    /// None of `paths` exists: not Linux, or a kernel without PSI (`CONFIG_PSI`).
    case notFound(paths: [String])
    /// The pressure file could not be opened for writing (a read-only mount, or a kernel before
    /// 6.5, which lets only `CAP_SYS_RESOURCE` set triggers) or read (`EOPNOTSUPP`: PSI is off, `psi=0`).
    case cannotOpen(path: String, errno: Int32)
    /// The kernel refused the trigger text (`EINVAL` for a window it does not take).
    case triggerRejected(path: String, trigger: String, errno: Int32)
    /// The file is no kernel pressure file (a regular file has a size, or reads nothing), so a
    /// trigger on it would never fire; nothing was written to it.
    case notAPressureFile(path: String)
    /// Setting up the watcher failed (`call` returned `errno`).
    case systemError(call: String, errno: Int32)
}
