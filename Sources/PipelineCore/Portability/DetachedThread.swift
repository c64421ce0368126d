#if canImport(FoundationEssentials)
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#else
import Foundation
#endif

/// Starts a thread named `name` that runs `body` and exits: Foundation's `Thread` without
/// Foundation (a detached POSIX thread with the default stack; Linux keeps the first 15 bytes of
/// the name). With full Foundation (Apple platforms), a `Thread`. `false` when no thread could
/// be made (the process is at its limit): then, as with Foundation's `Thread`, `body` does not run.
@discardableResult
package func startDetachedThread(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    #if canImport(FoundationEssentials)
    final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { context in
        guard let context else { return nil }
        let start = Unmanaged<Start>.fromOpaque(context).takeRetainedValue()
        var name = Array(start.name.utf8.prefix(15))
        while !name.isEmpty, String(validating: name, as: UTF8.self) == nil { name.removeLast() }  // whole characters only
        // pthread_setname_np's job (Glibc's module map leaves it out): the kernel's name of this thread.
        writeAll(name, toFileAt: "/proc/thread-self/comm")
        start.body()
        return nil
    }, start)
    guard status == 0 else {
        Unmanaged<Start>.fromOpaque(start).release()
        return false
    }
    pthread_detach(thread)
    return true
    #else
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
    return true
    #endif
}
