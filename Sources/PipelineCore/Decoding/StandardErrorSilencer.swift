import Synchronization

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

/// Points the process's file descriptor 2 at `/dev/null` while at least one caller is inside
/// ``silenced(_:)``, and back at the original stderr when the last one leaves.
///
/// Why this exists: libde265 1.0.11 (libheif's HEVC decoder) writes some diagnostics with a
/// plain `fprintf(stderr, …)` ("SPS error: CB alignment") and has no setting that stops it
/// (`de265_set_verbosity` only governs its debug logging), and libheif 1.15 passes decoders
/// no logger; libjxl 0.7 as Debian builds it prints every failure's trace
/// (`./lib/jxl/decode.cc:2143: missing input`) the same way. The only way to keep those lines
/// off the terminal is the file descriptor itself. It lives in the core, not in each codec, so
/// every codec that needs it shares one count: two silencers of their own, overlapping, would
/// save and restore each other's `/dev/null` and lose stderr for good.
///
/// Why it is opt-in (`HEIFDecoder.StandardError.discardedWhileDecoding`,
/// `JXLDecoder.StandardError.discardedWhileDecoding`): fd 2 belongs to the
/// whole process. While any HEIF decode runs, whatever *any* thread writes to fd 2 is lost: the
/// host's own messages, and a crash report of the Swift runtime. A command-line tool that
/// writes its own messages to a duplicate of fd 2 taken at start-up (as `imgpipe` does) can
/// afford that; a library cannot decide it for its host.
///
/// Thread safety: entering and leaving are serialised by a mutex and counted, so overlapping
/// decodes on several threads share one redirection; `dup2` replaces the descriptor atomically
/// for writers on other threads (each write goes wholly to the old or the new file).
public enum StandardErrorSilencer {
    private struct State {
        var depth = 0
        var saved: Int32 = -1
    }

    private static let state = Mutex(State())

    /// Runs `body` with fd 2 pointing at `/dev/null` (nested and concurrent calls share it).
    public static func silenced<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        enter()
        defer { leave() }
        return try body()
    }

    private static func enter() {
        state.withLock { state in
            state.depth += 1
            guard state.depth == 1 else { return }
            let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
            guard null >= 0 else { return }
            defer { close(null) }
            state.saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0)
            if state.saved >= 0, dup2(null, STDERR_FILENO) < 0 {
                close(state.saved)
                state.saved = -1
            }
        }
    }

    private static func leave() {
        state.withLock { state in
            state.depth -= 1
            guard state.depth == 0, state.saved >= 0 else { return }
            _ = dup2(state.saved, STDERR_FILENO)
            close(state.saved)
            state.saved = -1
        }
    }
}
