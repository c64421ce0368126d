import Foundation

/// The capture failed: a temporary file could not be made, or fd 2 could not be saved.
public struct StandardErrorCaptureFailed: Error {}

/// What was written to fd 2 while `body` ran (fd 2 points at a temporary file meanwhile), with
/// `body`'s result. fd 2 is shared with every test running in parallel, so what others wrote
/// meanwhile lands in the capture too: the lines for which `givesBack` is true (all, unless
/// told) are written back to stderr afterwards. Callers look for text only the code under test
/// writes, never for "nothing at all".
public func capturingStandardError<T>(givesBack: (Substring) -> Bool = { _ in true },
                                      _ body: () throws -> T) throws -> (T, String) {
    // One capture at a time: two that overlap would each restore the other's saved fd 2, and
    // the later restore would point fd 2 at a deleted file (every later line, Swift Testing's
    // own issue reports included, lost).
    standardErrorCapture.lock()
    defer { standardErrorCapture.unlock() }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("stderr-\(UUID().uuidString)").path
    let file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard file >= 0 else { throw StandardErrorCaptureFailed() }
    defer { close(file); unlink(path) }
    let saved = dup(STDERR_FILENO)
    guard saved >= 0 else { throw StandardErrorCaptureFailed() }
    dup2(file, STDERR_FILENO)
    let result = Result { try body() }
    dup2(saved, STDERR_FILENO)
    close(saved)
    let captured = try String(decoding: Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
    let others = captured.split(separator: "\n", omittingEmptySubsequences: false).filter(givesBack)
    FileHandle.standardError.write(Data(others.joined(separator: "\n").utf8))
    return (try result.get(), captured)
}

/// Held by ``capturingStandardError(givesBack:_:)`` while fd 2 points at its file.
private let standardErrorCapture = NSLock()
