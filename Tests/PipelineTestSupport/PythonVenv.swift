import Foundation

/// A Python virtual environment with PyPI packages, made once by `scripts/python-venv` (the
/// clients and peers we are checked against: PyPI's `imgproxy` URL builder): its python, or
/// why it cannot be had (no PyPI), for the test to skip with that reason printed.
public enum PythonVenv {
    /// The python of `.build/venvs/<name>` with `packages` installed, or a one-line reason.
    public static func python(_ name: String, _ packages: [String]) -> Result<String, VenvError> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/python-venv").path
        do {
            let outcome = try ExternalTool.runBlocking(script, [name] + packages, timeout: 90)
            let path = outcome.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            if outcome.status == 0, ExternalTool.exists(path) { return .success(path) }
            return .failure(VenvError(reason: "scripts/python-venv could not install \(packages.joined(separator: " ")) (no PyPI?): "
                                      + outcome.stderr.split(separator: "\n").suffix(2).joined(separator: " | ")))
        } catch {
            return .failure(VenvError(reason: "scripts/python-venv did not run: \(error)"))
        }
    }

    /// Why a venv could not be made.
    public struct VenvError: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }
}
