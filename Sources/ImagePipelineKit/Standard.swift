import CacheDisk
import CodecGIF
import CodecHEIF
import CodecJPEG
import CodecJXL
import CodecPNG
import CodecSVG
import CodecWebP
import LoaderFile
import LoaderHTTP
import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// ImagePipelineKit: everything this package ships, registered, for apps that want it all.
// It links every codec's C library and libcurl; an app that wants less links the modules it
// needs instead (`PipelineCore` + `CodecPNG` + `LoaderFile` links neither libjpeg nor libcurl).

extension DecoderRegistry {
    /// Every decoder this package ships, registered newest-preferred: JPEG XL, GIF, HEIC (and
    /// AVIF when libheif has an AV1 decoder), WebP, PNG, JPEG, SVG (and SVGZ). The `Accept` header of
    /// ``PipelineCore/ImagePipeline/Configuration/standard(diskCache:connectionPolicy:localSources:)`` follows this order.
    /// The C libraries' own writes to stderr are left alone (``CodecStandardError/inherited``).
    public static var standard: DecoderRegistry { standard(codecStandardError: .inherited) }

    /// ``standard`` with the C libraries' writes to the process's stderr treated as
    /// `codecStandardError` says (`imgpipe`, which owns its stderr, passes
    /// ``CodecStandardError/discardedWhileDecoding``), and `svg` as the SVG decoder (default: in
    /// this process; `imgpipe` passes one whose `isolation` is a worker process, itself).
    public static func standard(codecStandardError: CodecStandardError, svg: SVGDecoder = SVGDecoder()) -> DecoderRegistry {
        let quiet = codecStandardError == .discardedWhileDecoding
        return DecoderRegistry()
            // First, so last in `Accept`: a server that has a raster and an SVG sends the raster.
            // SVG is chosen by its root element, which no other format's data has.
            .registering(svg)
            .registering(JPEGDecoder())
            .registering(PNGDecoder())
            .registering(WebPDecoder())
            .registering(HEIFDecoder(standardError: quiet ? .discardedWhileDecoding : .inherited))
            .registering(GIFDecoder())
            // Last, so first in `Accept`: a server that has a JPEG XL sends it (smallest), and
            // only a JPEG XL's own signature selects it.
            .registering(JXLDecoder(standardError: quiet ? .discardedWhileDecoding : .inherited))
    }
}

/// What happens to what the C libraries behind the standard decoders write to the process's
/// stderr (fd 2) themselves: libde265's diagnostics of corrupt HEVC headers
/// (`HEIFDecoder.StandardError`) and libjxl's failure traces (`JXLDecoder.StandardError`).
public enum CodecStandardError: Sendable, Hashable {
    /// Left alone: the default for a library, whose host process owns fd 2.
    case inherited
    /// While a HEIF or JPEG XL decode runs, fd 2 points at `/dev/null` (restored when the last
    /// one ends): only for a program that writes its own messages to a duplicate of fd 2 made
    /// beforehand (as `imgpipe` does).
    case discardedWhileDecoding
}

extension EncoderRegistry {
    /// Every encoder this package ships, registered in this order: JPEG (libjpeg-turbo), PNG
    /// (libpng), WebP (libwebp), AVIF and HEIC through libheif (aom and x265;
    /// `HEIFEncoder.isAvailable` says whether this machine's libheif has them), GIF (giflib;
    /// stills and animations) and JPEG XL (libjxl). `imgpipe` writes exactly these, and lists
    /// their extensions in this order.
    public static var standard: EncoderRegistry {
        EncoderRegistry()
            .registering(JPEGEncoder())
            .registering(PNGEncoder())
            .registering(WebPEncoder())
            .registering(HEIFEncoder.avif)
            .registering(HEIFEncoder.heic)
            .registering(GIFEncoder())
            .registering(JXLEncoder())
    }
}

extension LoaderRegistry {
    /// Every loader this package ships: `http`/`https` (libcurl, sending `accept` as the
    /// `Accept` header, connecting as `connectionPolicy` allows), `file` and `data`.
    ///
    /// The default policy, `ConnectionPolicy.default`, suits an app: it never connects to a
    /// link-local address or any other cloud metadata address (169.254.169.254,
    /// `fd00:ec2::254`, 100.100.100.200) or to 0.0.0.0, but
    /// allows loopback and the LAN (a development server, a NAS). A server that fetches URLs its
    /// users send passes `.publicOnly`, and usually an allow-list of its sources' hosts:
    ///
    /// ```swift
    /// var policy = ConnectionPolicy.publicOnly
    /// policy.allowedHosts = ["*.cdn.example.com"]
    /// let pipeline = try ImagePipeline.standard(diskCache: .none, connectionPolicy: policy)
    /// ```
    ///
    /// `localSources` says which sources on this machine it reads besides HTTP: `nil` (the
    /// default) is ``LocalSources/all`` for the app's default policy and none for any other, a
    /// server's (`.publicOnly`): a server setup reads `file:` and `data:` URLs only when asked.
    public static func standard(accept: String, connectionPolicy: ConnectionPolicy = .default,
                                localSources: LocalSources? = nil) -> LoaderRegistry {
        var http = HTTPDataLoader.Configuration()
        http.headers["Accept"] = accept
        http.connectionPolicy = connectionPolicy
        var registry = LoaderRegistry().registering(HTTPDataLoader(configuration: http))
        let local = LocalSources.resolved(localSources, for: connectionPolicy)
        if local.contains(.files) { registry.register(FileDataLoader()) }
        if local.contains(.dataURLs) { registry.register(DataURLLoader()) }
        return registry
    }
}

/// The sources on this machine a standard loader list reads besides HTTP(S).
///
/// An app's pipeline (the default `ConnectionPolicy`) reads both; a server's
/// (any other policy, `.publicOnly` above all) reads neither unless asked: a request's URL
/// comes from a client there, and `file:///etc/shadow` must not be a source. Pass
/// `localSources: .files` (or build the `LoaderRegistry` yourself) to serve local files on
/// purpose; `imgpipe serve --local-root DIR` serves `local:///path` below one folder instead.
public struct LocalSources: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// `file:` URLs (`FileDataLoader`).
    public static let files = LocalSources(rawValue: 1 << 0)
    /// `data:` URLs (`DataURLLoader`).
    public static let dataURLs = LocalSources(rawValue: 1 << 1)
    /// Both.
    public static let all: LocalSources = [.files, .dataURLs]

    /// `asked`, or the default for `policy`: all for the app's default policy, none otherwise.
    static func resolved(_ asked: LocalSources?, for policy: ConnectionPolicy) -> LocalSources {
        asked ?? (policy == .default ? .all : [])
    }
}

extension ImagePipeline.Configuration {
    /// A configuration with every shipped decoder (``PipelineCore/DecoderRegistry/standard``) and
    /// loader (``PipelineCore/LoaderRegistry/standard(accept:connectionPolicy:localSources:)``), an HTTP `Accept` header
    /// derived from those decoders' formats (`DecoderRegistry.acceptHeader(fallback:)`),
    /// and the disk cache `diskCache` names: ``DiskCacheLocation/named(_:)`` (the user's cache
    /// directory), ``DiskCacheLocation/directory(_:)`` or ``DiskCacheLocation/none``. The HTTP
    /// loader connects as `connectionPolicy` allows (default `ConnectionPolicy.default`: loopback
    /// and the LAN, no cloud metadata address; a server passes `.publicOnly`), and reads `file:`
    /// and `data:` URLs as `localSources` says (by default only with the default policy: a
    /// server setup reads neither unless asked, ``LocalSources``). Renditions, when an
    /// app opts in with `diskCachePolicy`, are JPEG (q85) when opaque and WebP (q85, exact alpha)
    /// otherwise (`RenditionEncoder` over ``PipelineCore/EncoderRegistry/standard``).
    ///
    /// Change any field before building the pipeline:
    ///
    /// ```swift
    /// var configuration = try ImagePipeline.Configuration.standard(diskCache: .named("MyApp"))
    /// configuration.urlBuilder = WidthBucketURLBuilder()
    /// let pipeline = ImagePipeline(configuration: configuration)
    /// ```
    ///
    /// - Throws: the disk cache's error when its directory cannot be created or used.
    public static func standard(diskCache: DiskCacheLocation, connectionPolicy: ConnectionPolicy = .default,
                                localSources: LocalSources? = nil) throws -> ImagePipeline.Configuration {
        let decoders = DecoderRegistry.standard
        var configuration = ImagePipeline.Configuration(
            decoders: decoders,
            loaders: .standard(accept: decoders.acceptHeader(), connectionPolicy: connectionPolicy, localSources: localSources),
            diskCache: try diskCache.makeDiskCache())
        // Renditions (opt-in through `diskCachePolicy`): JPEG for opaque results, WebP otherwise.
        configuration.renditionEncoder = RenditionEncoder(encoders: .standard)
        return configuration
    }
}

extension ImagePipeline {
    /// A pipeline with ``Configuration/standard(diskCache:connectionPolicy:localSources:)``: every shipped
    /// codec and loader, and the disk cache `diskCache` names.
    ///
    /// ```swift
    /// let pipeline = try ImagePipeline.standard(diskCache: .named("MyApp"))   // ~/.cache/MyApp
    /// ```
    ///
    /// - Throws: the disk cache's error when its directory cannot be created or used.
    public static func standard(diskCache: DiskCacheLocation, connectionPolicy: ConnectionPolicy = .default,
                                localSources: LocalSources? = nil) throws -> ImagePipeline {
        ImagePipeline(configuration: try .standard(diskCache: diskCache, connectionPolicy: connectionPolicy,
                                                   localSources: localSources))
    }
}
