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

/// PyPI's `imgproxy` URL builder (klen/imgproxy 1.0.0; the newer `imgproxykit` needs Python
/// 3.12, Debian 12 has 3.11), which the server tests use as someone else's signer, and
/// imgproxy's documentation's example key and salt to sign with.
public enum ImgproxyPythonClient {
    /// The documentation's key, hex.
    public static let key = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    /// The documentation's salt, hex.
    public static let salt = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    /// The venv's python with the library, made once; `nil` (and the reason printed) where it
    /// cannot be.
    public static let python: String? = {
        switch PythonVenv.python("imgproxy-client", ["imgproxy==1.0.0"]) {
        case .success(let path): return path
        case .failure(let error):
            print("the tests of PyPI's imgproxy URLs are skipped: \(error)")
            return nil
        }
    }()
}
