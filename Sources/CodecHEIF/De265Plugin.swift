import CHEIF
import PipelineCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An HEVC decoder plugin for libheif: libde265, as libheif 1.15's own plugin
/// (`heif_decoder_libde265.cc`, its libde265 1.x path) drives it, but with the worker threads
/// ``HEIFDecoder/threadCount`` asks for (``withWorkerThreads(_:_:)``) instead of one.
///
/// x265 (what `heif-enc` and most cameras' encoders use) turns on wavefront parallel processing
/// by default (`entropy_coding_sync_enabled_flag`): libde265 then decodes each row of coding
/// tree blocks as a task of its thread pool, two blocks behind the row above. libheif's plugin
/// starts one worker, so the rows run one after another while the calling thread waits; with
/// two, a 6000x4000 HEIC decodes in a little over half the time on two cores (the same work on
/// more threads: WPP adds none). A stream without WPP or tiles decodes on one worker as before.
///
/// Registered once per process with priority 110 (libheif's libde265 plugin has 100), so libheif
/// picks it for every HEVC item: primary images, alpha planes, thumbnails and grid tiles.
/// Everything else is libheif's plugin's: the same NAL feeding (4-byte lengths), the same
/// plane copy for every chroma format and bit depth, the same nclx profile from the VUI, the
/// same errors (with libheif's empty messages) and strict-decoding warnings. One difference: on
/// a strict-decoding nclx failure the half-made image is released (libheif's plugin leaves it).
/// libde265 1.0.11 logs nothing unless built with logging, and has no hook for the few
/// diagnostics it prints to stderr (see ``HEIFDecoder/StandardError``).
enum De265Plugin {
    /// Above libheif's libde265 plugin (100).
    static let priority: Int32 = 110

    /// The plugin's `id_name`, for `heif_decoding_options.decoder_id`.
    static let idName = "imagepipeline-libde265"

    /// libde265's worker threads for a decoder libheif creates on a thread inside
    /// ``withWorkerThreads(_:_:)`` (the thread that runs `heif_decode_image`); elsewhere one, as
    /// libheif's plugin starts: libheif decodes a grid's tiles up to four at a time on threads
    /// of its own, which already keeps the cores busy.
    static func withWorkerThreads<R, E: Error>(_ count: Int, _ body: () throws(E) -> R) throws(E) -> R {
        guard let key = workerThreadsKey else { return try body() }
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: min(max(count, 1), maxWorkerThreads)))
        defer { pthread_setspecific(key, previous) }
        return try body()
    }

    /// libde265 1.0's `MAX_THREADS`.
    static let maxWorkerThreads = 32

    /// The calling thread's worker count, stored as the pointer's bit pattern (nil: unset).
    private static let workerThreadsKey: pthread_key_t? = {
        var key = pthread_key_t()
        return pthread_key_create(&key, nil) == 0 ? key : nil
    }()

    private static var workerThreads: Int32 {
        guard let key = workerThreadsKey, let value = pthread_getspecific(key) else { return 1 }
        return Int32(Int(bitPattern: value))
    }

    /// Registers the plugin with libheif (after `heif_init`); false if libheif refused it.
    static func register() -> Bool {
        heif_register_decoder_plugin(plugin).code == heif_error_Ok
    }

    /// The plugin table; libheif keeps the pointer for the life of the process.
    nonisolated(unsafe) private static let plugin = DecoderPlugin.table(idName: idName) {
        $0.get_plugin_name = { De265Plugin.name }
        // As libheif's plugin: libde265's static tables, set up once and freed at heif_deinit.
        $0.init_plugin = { _ = de265_init() }
        $0.deinit_plugin = { _ = de265_free() }
        $0.does_support_format = { $0 == heif_compression_HEVC ? De265Plugin.priority : 0 }
        $0.new_decoder = { out in De265Plugin.newDecoder(out) }
    }

    /// "libde265 HEVC decoder, version <version> (ImagePipeline)", as `get_plugin_name` returns it.
    nonisolated(unsafe) private static let name: UnsafePointer<CChar> =
        DecoderPlugin.immortal("libde265 HEVC decoder, version \(String(cString: de265_get_version())) (ImagePipeline)")

    /// libheif's plugin's `kEmptyString`: its errors carry no text.
    nonisolated(unsafe) private static let empty: UnsafePointer<CChar> = DecoderPlugin.immortal("")

    static func failure(_ code: heif_error_code, _ subcode: heif_suberror_code) -> heif_error {
        heif_error(code: code, subcode: subcode, message: empty)
    }

    private static func newDecoder(_ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> heif_error {
        guard let out else { return failure(heif_error_Usage_error, heif_suberror_Unspecified) }
        guard let context = de265_new_decoder() else { return failure(heif_error_Memory_allocation_error, heif_suberror_Unspecified) }
        // libheif's plugin ignores this result too: without workers libde265 decodes on the calling thread.
        _ = de265_start_worker_threads(context, workerThreads)
        out.pointee = Unmanaged.passRetained(Session(context)).toOpaque()
        return DecoderPlugin.success
    }

    /// One libde265 context fed with one item's data.
    final class Session: DecoderPluginSession {
        let context: UnsafeMutableRawPointer

        init(_ context: UnsafeMutableRawPointer) { self.context = context }

        /// Frees the context, its worker threads and any picture still queued in it.
        deinit { _ = de265_free_decoder(context) }

        /// Pushes each NAL unit (a 4-byte big-endian length, then the unit), as libheif's plugin
        /// does; a length running past the data is `End_of_data`.
        override func push(_ bytes: UnsafeRawPointer?, _ count: Int) -> heif_error {
            guard count > 0 else { return DecoderPlugin.success }
            guard let bytes else { return De265Plugin.failure(heif_error_Usage_error, heif_suberror_Unspecified) }
            let data = bytes.assumingMemoryBound(to: UInt8.self)
            var position = 0
            while position < count {
                guard count - position >= 4 else { return De265Plugin.failure(heif_error_Decoder_plugin_error, heif_suberror_End_of_data) }
                let size = Int(data[position]) << 24 | Int(data[position + 1]) << 16 | Int(data[position + 2]) << 8 | Int(data[position + 3])
                position += 4
                guard size <= count - position else { return De265Plugin.failure(heif_error_Decoder_plugin_error, heif_suberror_End_of_data) }
                _ = de265_push_NAL(context, data + position, Int32(truncatingIfNeeded: size), 0, nil)
                position += size
            }
            return DecoderPlugin.success
        }

        /// Flushes and decodes until libde265 has no more; every picture it returns replaces the
        /// previous one (libheif's plugin keeps the last), with its nclx profile.
        override func decode(into out: UnsafeMutablePointer<OpaquePointer?>) -> heif_error {
            _ = de265_flush_data(context)
            out.pointee = nil
            var more: Int32 = 0
            repeat {
                more = 0
                guard de265_decode(context, &more) == DE265_OK else { break }
                guard let picture = de265_get_next_picture(context) else { continue }
                if let previous = out.pointee {
                    heif_image_release(previous)
                    out.pointee = nil
                }
                let converted = De265Plugin.copy(picture)
                guard let image = converted.image else { return converted.error }
                if let failed = De265Plugin.setProfile(of: picture, on: image, strict: strict) {
                    heif_image_release(image)
                    return failed
                }
                out.pointee = image
                de265_release_next_picture(context)
            } while more != 0
            return DecoderPlugin.success
        }
    }

    /// libheif's `convert_libde265_image_to_heif_image`: a `heif_image` of libde265's chroma
    /// format (its values are libheif's) with each plane copied row by row at its bit depth.
    private static func copy(_ picture: OpaquePointer) -> (image: OpaquePointer?, error: heif_error) {
        let mono = de265_get_chroma_format(picture) == de265_chroma_mono
        var created: OpaquePointer?
        let error = heif_image_create(de265_get_image_width(picture, 0), de265_get_image_height(picture, 0),
                                      mono ? heif_colorspace_monochrome : heif_colorspace_YCbCr,
                                      heif_chroma(rawValue: de265_get_chroma_format(picture).rawValue), &created)
        guard error.code == heif_error_Ok, let image = created else { return (nil, error) }
        let channels = [heif_channel_Y, heif_channel_Cb, heif_channel_Cr]
        let bits = de265_get_bits_per_pixel(picture, 0)
        for plane in 0..<(mono ? 1 : 3) {
            let channel = channels[plane]
            guard de265_get_bits_per_pixel(picture, Int32(plane)) == bits else {
                heif_image_release(image)
                return (nil, heif_error(code: heif_error_Unsupported_feature, subcode: heif_suberror_Unsupported_color_conversion,
                                        message: differentDepths))
            }
            var stride: Int32 = 0
            let source = de265_get_image_plane(picture, Int32(plane), &stride)
            let width = de265_get_image_width(picture, Int32(plane)), height = de265_get_image_height(picture, Int32(plane))
            guard width > 0, height > 0 else {
                heif_image_release(image)
                return (nil, failure(heif_error_Decoder_plugin_error, heif_suberror_Invalid_image_size))
            }
            let added = heif_image_add_plane(image, channel, width, height, bits)
            guard added.code == heif_error_Ok else {
                heif_image_release(image)
                return (nil, added)
            }
            var targetStride: Int32 = 0
            guard let source, let target = heif_image_get_plane(image, channel, &targetStride) else {
                heif_image_release(image)
                return (nil, failure(heif_error_Decoder_plugin_error, heif_suberror_Unspecified))
            }
            let rowBytes = Int(width) * ((Int(bits) + 7) / 8)
            for row in 0..<Int(height) {
                (target + row * Int(targetStride)).update(from: source + row * Int(stride), count: rowBytes)
            }
        }
        return (image, DecoderPlugin.success)
    }

    nonisolated(unsafe) private static let differentDepths: UnsafePointer<CChar> =
        DecoderPlugin.immortal("Channels with different number of bits per pixel are not supported")

    /// The picture's VUI colour description as the image's nclx profile; a value libheif does not
    /// know is an error when decoding strictly (returned), else a decoding warning on the image
    /// (libheif's `HEIF_WARN_OR_FAIL`).
    private static func setProfile(of picture: OpaquePointer, on image: OpaquePointer, strict: Bool) -> heif_error? {
        guard let nclx = heif_nclx_color_profile_alloc() else { return nil }
        defer { heif_nclx_color_profile_free(nclx) }
        let steps = [heif_nclx_color_profile_set_color_primaries(nclx, UInt16(truncatingIfNeeded: de265_get_image_colour_primaries(picture))),
                     heif_nclx_color_profile_set_transfer_characteristics(nclx, UInt16(truncatingIfNeeded: de265_get_image_transfer_characteristics(picture))),
                     heif_nclx_color_profile_set_matrix_coefficients(nclx, UInt16(truncatingIfNeeded: de265_get_image_matrix_coefficients(picture)))]
        for step in steps where step.code != heif_error_Ok {
            if strict { return step }
            heif_image_add_decoding_warning(image, step)
        }
        nclx.pointee.full_range_flag = de265_get_image_full_range_flag(picture) != 0 ? 1 : 0
        _ = heif_image_set_nclx_color_profile(image, nclx)
        return nil
    }
}
