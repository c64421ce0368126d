import CProcessSpawn

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A process that could not be started: the errno value `posix_spawn` returned.
public struct SpawnFailure: Error, Sendable {
    /// The errno value.
    public let code: Int32

    /// The C library's words for ``code``.
    public var reason: String { String(cString: strerror(code)) }
}

/// Starts `path` with `arguments` (after `path` as argv[0]) and exactly `environment`, in
/// `directory` when given, by `posix_spawn` (`process_spawn`: never `fork` without `exec` in a
/// multithreaded process, never Foundation's `Process`), its stdin, stdout and stderr on the given
/// descriptors and every other descriptor closed. Returns the child's pid; the caller reaps it.
public func spawnProcess(_ path: String, _ arguments: [String], environment: [String: String], directory: String?,
                         stdin: Int32, stdout: Int32, stderr: Int32) throws(SpawnFailure) -> pid_t {
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let status = argv.withUnsafeBufferPointer { argv in
        envp.withUnsafeBufferPointer { envp in
            process_spawn(path, argv.baseAddress, envp.baseAddress, directory, stdin, stdout, stderr, &pid)
        }
    }
    guard status == 0 else { throw SpawnFailure(code: status) }
    return pid
}
