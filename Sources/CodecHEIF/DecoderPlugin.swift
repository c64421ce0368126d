import CHEIF

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What our libheif decoder plugins (``Dav1dPlugin``, ``De265Plugin``) share: the plugin table,
/// whose per-decoder calls go to a ``DecoderPluginSession``, and its C strings.
enum DecoderPlugin {
    /// A plugin table (API version 3) for libheif, which keeps the pointer for the life of the
    /// process: `fill` sets the plugin's own entries (name, init and deinit, format support,
    /// `new_decoder`, which must hand libheif a retained ``DecoderPluginSession``); freeing,
    /// pushing, decoding and strictness go to that session.
    static func table(idName: String, _ fill: (inout heif_decoder_plugin) -> Void) -> UnsafePointer<heif_decoder_plugin> {
        let table = UnsafeMutablePointer<heif_decoder_plugin>.allocate(capacity: 1)
        table.initialize(to: heif_decoder_plugin())
        table.pointee.plugin_api_version = 3
        fill(&table.pointee)
        table.pointee.free_decoder = { raw in
            guard let raw else { return }
            Unmanaged<DecoderPluginSession>.fromOpaque(raw).release()
        }
        table.pointee.push_data = { raw, bytes, count in
            guard let raw else { return DecoderPlugin.noDecoder }
            return Unmanaged<DecoderPluginSession>.fromOpaque(raw).takeUnretainedValue().push(bytes, count)
        }
        table.pointee.decode_image = { raw, out in
            guard let raw, let out else { return DecoderPlugin.noDecoder }
            return Unmanaged<DecoderPluginSession>.fromOpaque(raw).takeUnretainedValue().decode(into: out)
        }
        table.pointee.set_strict_decoding = { raw, flag in
            guard let raw else { return }
            Unmanaged<DecoderPluginSession>.fromOpaque(raw).takeUnretainedValue().strict = flag != 0
        }
        table.pointee.id_name = immortal(idName)
        return UnsafePointer(table)
    }

    /// A C string that lives as long as the process (the plugin table's strings).
    static func immortal(_ string: String) -> UnsafePointer<CChar> {
        if let copy = strdup(string) { return UnsafePointer(copy) }
        return UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
    }

    nonisolated(unsafe) static let success = heif_error(code: heif_error_Ok, subcode: heif_suberror_Unspecified, message: immortal("Success"))

    nonisolated(unsafe) static let noDecoder = heif_error(code: heif_error_Usage_error, subcode: heif_suberror_Unspecified,
                                                          message: immortal("no decoder"))
}

/// One decoder of a ``DecoderPlugin`` table: libheif creates it with `new_decoder`, pushes one
/// item's data, decodes once and frees it.
class DecoderPluginSession {
    /// libheif's `strict_decoding`: a problem it would otherwise report as a decoding warning fails.
    var strict = false

    func push(_ bytes: UnsafeRawPointer?, _ count: Int) -> heif_error { DecoderPlugin.noDecoder }

    func decode(into out: UnsafeMutablePointer<OpaquePointer?>) -> heif_error { DecoderPlugin.noDecoder }
}
