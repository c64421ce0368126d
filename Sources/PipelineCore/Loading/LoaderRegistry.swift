#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The data loaders an app links, by URL scheme. Built by the app and handed to
/// ``ImagePipeline/Configuration``; a value, so tests build their own.
///
/// Rule for duplicates: **the last registration wins** for each scheme it declares; a loader
/// registered earlier keeps the schemes nobody took from it. Schemes compare case-insensitively.
public struct LoaderRegistry: Sendable {
    private var loaders: [String: any DataLoading] = [:]

    /// An empty registry.
    public init() {}

    /// A registry holding `loaders`, registered in order (so later ones win).
    public init(_ loaders: [any DataLoading]) {
        for loader in loaders { register(loader) }
    }

    /// Makes `loader` serve every scheme in its ``DataLoading/schemes``.
    public mutating func register(_ loader: any DataLoading) {
        for scheme in loader.schemes { loaders[scheme.lowercased()] = loader }
    }

    /// A copy with `loader` registered.
    public func registering(_ loader: any DataLoading) -> LoaderRegistry {
        var copy = self
        copy.register(loader)
        return copy
    }

    /// The schemes some loader serves.
    public var schemes: Set<String> { Set(loaders.keys) }

    /// The loader for `url`'s scheme, or `nil`.
    public func loader(for url: URL) -> (any DataLoading)? {
        guard let scheme = url.scheme?.lowercased() else { return nil }
        return loaders[scheme]
    }

    /// The loader for `url`, or ``ImagePipelineError/noLoader(scheme:)``.
    public func requireLoader(for url: URL) throws -> any DataLoading {
        if let loader = loader(for: url) { return loader }
        throw ImagePipelineError.noLoader(scheme: url.scheme ?? "")
    }

    /// Throws the refusal of `url`'s loader (``DataLoading/checkAllowed(_:)``), before a cache
    /// answers for it; a URL no loader serves is not refused here.
    func checkAllowed(_ url: URL) throws {
        try loader(for: url)?.checkAllowed(url)
    }
}
