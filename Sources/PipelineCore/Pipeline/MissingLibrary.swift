/// A shared library that a codec, loader or server opens on first use (as libvips loads its heavy
/// loaders) and that could not be opened: not installed, or not the version this was built
/// against. It names the package that provides it, so the message says what to install.
///
/// It arrives inside ``ImagePipelineError/libraryUnavailable(_:)`` from a decoder or encoder,
/// and inside the HTTP loader's and the HTTP server's own errors.
public struct MissingLibrary: Error, Sendable, Hashable, CustomStringConvertible {
    /// The library's name (`libheif`).
    public let library: String
    /// The file that was looked for (`libheif.so.1`).
    public let soname: String
    /// The Debian package that ships it (`libheif1`).
    public let package: String
    /// Why it did not load: the dynamic loader's message, or the function it lacks.
    public let reason: String

    public init(library: String, soname: String, package: String, reason: String) {
        self.library = library
        self.soname = soname
        self.package = package
        self.reason = reason
    }

    public var description: String {
        "\(library) could not be loaded (\(MessageText.escaped(reason))): install the package \(package)"
    }
}
