import CHEIF
import PipelineCore
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

/// An AV1 decoder plugin for libheif: dav1d, as libheif 1.15's own plugin drives it, but with a
/// logger, so dav1d's messages end up in the error instead of on the process's stderr.
///
/// libheif 1.15 offers no logging hook for its decoder plugins, and its dav1d plugin opens
/// dav1d with `dav1d_default_settings`, whose logger prints to stderr ("Unknown OBU type 0 of
/// size 113323"). libheif's public plugin API (`heif_register_decoder_plugin`) is the one way to
/// reach `Dav1dSettings.logger`: this plugin is registered once per process, with priority 160
/// (libheif's dav1d plugin has 150, libaom's 100), so libheif picks it for every AV1 item:
/// primary images, alpha planes and grid tiles (which libheif decodes without the caller's
/// decoding options, so choosing a plugin by `decoder_id` would not reach them).
///
/// It decodes exactly as libheif's plugin does (same settings, same plane copy, same nclx
/// from the sequence header), so the pixels are unchanged. Differences: the lines dav1d logs
/// while a decode fails become that error's message ("dav1d: Unknown OBU type 0 …"); lines
/// logged by a decode that succeeds are dropped (libheif's decoding warnings carry no text);
/// and the picture is released on every path.
enum Dav1dPlugin {
    /// Above libheif's dav1d (150) and libaom (100) plugins.
    static let priority: Int32 = 160

    /// The plugin's `id_name`, for `heif_decoding_options.decoder_id`.
    static let idName = "imagepipeline-dav1d"

    /// Registers the plugin with libheif (after `heif_init`); false if libheif refused it.
    static func register() -> Bool {
        heif_register_decoder_plugin(plugin).code == heif_error_Ok
    }

    /// The plugin table; libheif keeps the pointer for the life of the process.
    nonisolated(unsafe) private static let plugin = DecoderPlugin.table(idName: idName) {
        $0.get_plugin_name = { Dav1dPlugin.name }
        $0.init_plugin = {}
        $0.deinit_plugin = {}
        $0.does_support_format = { $0 == heif_compression_AV1 ? Dav1dPlugin.priority : 0 }
        $0.new_decoder = { out in Dav1dPlugin.newDecoder(out) }
    }

    /// "dav1d <version> (ImagePipeline)", as `get_plugin_name` returns it.
    nonisolated(unsafe) private static let name: UnsafePointer<CChar> = DecoderPlugin.immortal("dav1d \(String(cString: dav1d_version())) (ImagePipeline)")

    private static func newDecoder(_ out: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> heif_error {
        guard let out else { return failure(heif_error_Usage_error, "no output pointer") }
        let session = Session()
        var settings = Dav1dSettings()
        dav1d_default_settings(&settings)
        settings.frame_size_limit = 32768 * 32768  // libheif's MAX_IMAGE_WIDTH × MAX_IMAGE_HEIGHT, as its plugin sets
        settings.all_layers = 0
        // One frame in flight: a still picture has one frame, and dav1d's frame threading (on by
        // default with 2+ threads) keeps the whole frame's coefficients besides the picture.
        settings.max_frame_delay = 1
        settings.logger.cookie = Unmanaged.passUnretained(session).toOpaque()
        settings.logger.callback = { cookie, format, arguments in
            guard let cookie, let format, let arguments else { return }
            var line = [CChar](repeating: 0, count: 512)
            _ = vsnprintf(&line, line.count, format, arguments)
            let bytes = line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            Unmanaged<Session>.fromOpaque(cookie).takeUnretainedValue().log(String(decoding: bytes, as: UTF8.self))
        }
        var context: OpaquePointer?
        guard dav1d_open(&context, &settings) == 0, let context else {
            return failure(heif_error_Decoder_plugin_error, "dav1d_open failed")
        }
        session.context = context
        out.pointee = Unmanaged.passRetained(session).toOpaque()
        return DecoderPlugin.success
    }

    /// An error whose message lives in a per-thread buffer until this thread's next failure:
    /// libheif copies it (on this thread) right after the call returns, once it has already
    /// freed the decoder, so the message cannot live in the decoder.
    static func failure(_ code: heif_error_code, _ message: String) -> heif_error {
        heif_error(code: code, subcode: heif_suberror_Unspecified, message: MessageBuffer.store(message))
    }

    /// One dav1d context fed with one item's data, and the lines dav1d logged meanwhile.
    final class Session: DecoderPluginSession {
        var context: OpaquePointer?
        var data = Dav1dData()
        /// dav1d may log from its own threads.
        private let lines = Mutex<[String]>([])

        deinit {
            if data.sz > 0 { dav1d_data_unref(&data) }
            if context != nil { dav1d_close(&context) }
        }

        func log(_ line: String) {
            let trimmed = line.trimmingWhitespace()
            guard !trimmed.isEmpty else { return }
            lines.withLock { if $0.count < 8 { $0.append(trimmed) } }
        }

        /// The logged lines as one message, or `fallback` when dav1d logged nothing.
        func message(_ fallback: String) -> String {
            let logged = lines.withLock { $0 }
            return logged.isEmpty ? fallback : "dav1d: " + logged.joined(separator: "; ")
        }

        override func push(_ bytes: UnsafeRawPointer?, _ count: Int) -> heif_error {
            guard data.sz == 0 else { return Dav1dPlugin.failure(heif_error_Usage_error, "data pushed twice") }
            guard let bytes, count > 0 else { return Dav1dPlugin.failure(heif_error_Invalid_input, "the AV1 item is empty") }
            guard let target = dav1d_data_create(&data, count) else {
                return Dav1dPlugin.failure(heif_error_Memory_allocation_error, "dav1d could not allocate \(count) bytes")
            }
            target.update(from: bytes.assumingMemoryBound(to: UInt8.self), count: count)
            return DecoderPlugin.success
        }

        /// Sends the data and takes the first picture, as libheif's plugin does, then copies
        /// its planes into a new `heif_image`.
        override func decode(into out: UnsafeMutablePointer<OpaquePointer?>) -> heif_error {
            var picture = Dav1dPicture()
            var flushed = false
            while true {
                let sent = dav1d_send_data(context, &data)
                if sent < 0 && sent != -EAGAIN { return Dav1dPlugin.failure(heif_error_Decoder_plugin_error, message("dav1d could not decode the AV1 data")) }
                let got = dav1d_get_picture(context, &picture)
                if !flushed && got == -EAGAIN {
                    if data.sz == 0 { flushed = true }
                    continue
                }
                if got < 0 { return Dav1dPlugin.failure(heif_error_Decoder_plugin_error, message("dav1d returned no picture")) }
                break
            }
            defer { dav1d_picture_unref(&picture) }
            return copy(&picture, into: out)
        }

        private func copy(_ picture: inout Dav1dPicture, into out: UnsafeMutablePointer<OpaquePointer?>) -> heif_error {
            let colorspace: heif_colorspace, chroma: heif_chroma
            switch picture.p.layout {
            case DAV1D_PIXEL_LAYOUT_I420: (colorspace, chroma) = (heif_colorspace_YCbCr, heif_chroma_420)
            case DAV1D_PIXEL_LAYOUT_I422: (colorspace, chroma) = (heif_colorspace_YCbCr, heif_chroma_422)
            case DAV1D_PIXEL_LAYOUT_I444: (colorspace, chroma) = (heif_colorspace_YCbCr, heif_chroma_444)
            case DAV1D_PIXEL_LAYOUT_I400: (colorspace, chroma) = (heif_colorspace_monochrome, heif_chroma_monochrome)
            default: return Dav1dPlugin.failure(heif_error_Decoder_plugin_error, "dav1d returned an unknown pixel layout")
            }
            let width = Int(picture.p.w), height = Int(picture.p.h), bits = Int(picture.p.bpc)
            var image: OpaquePointer?
            let created = heif_image_create(Int32(width), Int32(height), colorspace, chroma, &image)
            guard created.code == heif_error_Ok, let image else { return created }

            if let header = picture.seq_hdr, let nclx = heif_nclx_color_profile_alloc() {
                defer { heif_nclx_color_profile_free(nclx) }
                let steps = [heif_nclx_color_profile_set_color_primaries(nclx, UInt16(truncatingIfNeeded: header.pointee.pri.rawValue)),
                             heif_nclx_color_profile_set_transfer_characteristics(nclx, UInt16(truncatingIfNeeded: header.pointee.trc.rawValue)),
                             heif_nclx_color_profile_set_matrix_coefficients(nclx, UInt16(truncatingIfNeeded: header.pointee.mtrx.rawValue))]
                for step in steps where step.code != heif_error_Ok {
                    // As libheif's HEIF_WARN_OR_FAIL: an error when strict, else a decoding warning.
                    if strict {
                        heif_image_release(image)
                        return step
                    }
                    heif_image_add_decoding_warning(image, step)
                }
                nclx.pointee.full_range_flag = header.pointee.color_range != 0 ? 1 : 0
                _ = heif_image_set_nclx_color_profile(image, nclx)
            }

            let channels = chroma == heif_chroma_monochrome ? [heif_channel_Y] : [heif_channel_Y, heif_channel_Cb, heif_channel_Cr]
            let sources = [picture.data.0, picture.data.1, picture.data.2]
            let bytesPerSample = (bits + 7) / 8
            for (index, channel) in channels.enumerated() {
                let (planeWidth, planeHeight) = Self.planeSize(width, height, channel: channel, chroma: chroma)
                let stride = index == 0 ? picture.stride.0 : picture.stride.1
                let added = heif_image_add_plane(image, channel, Int32(planeWidth), Int32(planeHeight), Int32(bits))
                var targetStride: Int32 = 0
                guard added.code == heif_error_Ok else {
                    heif_image_release(image)
                    return added
                }
                guard let source = sources[index], let target = heif_image_get_plane(image, channel, &targetStride) else {
                    heif_image_release(image)
                    return Dav1dPlugin.failure(heif_error_Decoder_plugin_error, "dav1d returned a picture without plane \(index)")
                }
                for row in 0..<planeHeight {
                    (target + row * Int(targetStride)).update(from: (source + row * stride).assumingMemoryBound(to: UInt8.self),
                                                               count: planeWidth * bytesPerSample)
                }
            }
            out.pointee = image
            return DecoderPlugin.success
        }

        /// A plane's size under chroma subsampling (libheif's `get_subsampled_size`).
        private static func planeSize(_ width: Int, _ height: Int, channel: heif_channel, chroma: heif_chroma) -> (Int, Int) {
            guard channel == heif_channel_Cb || channel == heif_channel_Cr else { return (width, height) }
            switch chroma {
            case heif_chroma_420: return ((width + 1) / 2, (height + 1) / 2)
            case heif_chroma_422: return ((width + 1) / 2, height)
            default: return (width, height)
            }
        }
    }

    /// A per-thread C string buffer for error messages, freed when the thread exits.
    private enum MessageBuffer {
        static let key: pthread_key_t? = {
            var key = pthread_key_t()
            return pthread_key_create(&key, { free($0) }) == 0 ? key : nil
        }()

        nonisolated(unsafe) static let fallback: UnsafePointer<CChar> = DecoderPlugin.immortal("dav1d failed (no message buffer)")

        static func store(_ message: String) -> UnsafePointer<CChar> {
            guard let key else { return fallback }
            let bytes = Array(message.utf8CString)
            guard let buffer = realloc(pthread_getspecific(key), bytes.count)?.assumingMemoryBound(to: CChar.self) else {
                return fallback
            }
            pthread_setspecific(key, buffer)
            buffer.update(from: bytes, count: bytes.count)
            return UnsafePointer(buffer)
        }
    }
}
