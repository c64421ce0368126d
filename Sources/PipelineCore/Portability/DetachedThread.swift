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
/// the name). With full Foundation (Apple platforms), a `Thread`.
package func startDetachedThread(name: String, _ body: @escaping @Sendable () -> Void) {
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
    if status == 0 {
        pthread_detach(thread)
    } else {  // no thread (EAGAIN: the process is at its limit): run the work here rather than lose it
        Unmanaged<Start>.fromOpaque(start).takeRetainedValue().body()
    }
    #else
    let thread = Thread(block: body)
    thread.name = name
    thread.start()
    #endif
}
