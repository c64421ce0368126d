import CLazyLibraries
import PipelineCore

/// The heavy C libraries that reach the process only on first use: each is opened with `dlopen`
/// the first time one of its functions is called (`CLazyLibraries`' generated trampolines,
/// `scripts/gen-lazy-symbols`), so a process that converts a PNG never maps libheif, librsvg,
/// libjxl, libcurl or libmicrohttpd, as libvips loads its heavy loaders as modules.
///
/// Every Swift entry point that calls one first calls ``load()``: the first call opens it (once,
/// under a lock), later calls cost one atomic load, and a library that cannot be opened throws
/// `MissingLibrary` naming the Debian package to install — the same answer every time after.
///
/// For tests, `IMGPIPE_SONAME_<LIBRARY>` (`IMGPIPE_SONAME_LIBHEIF`, …) names another file to open
/// instead of the first shared object; it is read once, at the first load.
public enum LazyLibrary: Sendable, CaseIterable {
    /// libheif (with the dav1d it loads): CodecHEIF.
    case heif
    /// librsvg (with cairo, GLib and GIO): CodecSVG.
    case rsvg
    /// libjxl and libjxl_threads: CodecJXL.
    case jxl
    /// libcurl: LoaderHTTP.
    case curl
    /// libmicrohttpd: ImageServerHTTP.
    case microhttpd

    /// Opens the library if nobody has yet; throws what is missing when it cannot be.
    public func load() throws(MissingLibrary) {
        let failure: UnsafePointer<imgpipe_lazy_failure>? =
            switch self {
            case .heif: imgpipe_lazy_load_heif()
            case .rsvg: imgpipe_lazy_load_rsvg()
            case .jxl: imgpipe_lazy_load_jxl()
            case .curl: imgpipe_lazy_load_curl()
            case .microhttpd: imgpipe_lazy_load_microhttpd()
            }
        guard let failure else { return }
        func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        throw MissingLibrary(library: text(failure.pointee.library), soname: text(failure.pointee.soname),
                             package: text(failure.pointee.package), reason: text(failure.pointee.reason))
    }

    /// `name`'s address in the loaded library or in one it loaded (`dlsym` on its handle: the
    /// library is opened `RTLD_LOCAL`, so the process's global scope does not see it); `nil` when
    /// absent or not loaded.
    public func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        switch self {
        case .heif: imgpipe_lazy_symbol_heif(name)
        case .rsvg: imgpipe_lazy_symbol_rsvg(name)
        case .jxl: imgpipe_lazy_symbol_jxl(name)
        case .curl: imgpipe_lazy_symbol_curl(name)
        case .microhttpd: imgpipe_lazy_symbol_microhttpd(name)
        }
    }
}
