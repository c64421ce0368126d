import Foundation

/// A reference tool run to completion (Pillow through Debian's python, `vips`, ImageMagick):
/// its exit status and output. The waiting happens on a thread of its own, never on one of
/// Swift's cooperative threads: on a 2-core machine a test blocking one of those starves every
/// other test of the run.
public enum ExternalTool {
    /// Whether `path` is an executable file.
    public static func exists(_ path: String) -> Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Runs `path` with `arguments` and waits for it without holding a cooperative thread.
    public static func run(_ path: String, _ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runBlocking(path, arguments) }) }.start()
        }
    }

    /// Runs `path` with `arguments`, blocking the calling thread. stdout comes through a pipe;
    /// stderr goes to a temporary file, so a chatty tool cannot fill a second pipe and stall
    /// while stdout is read.
    public static func runBlocking(_ path: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("tool-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errors = (try? Data(contentsOf: errorFile)) ?? Data()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self))
    }
}
