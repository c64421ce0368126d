import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes QOI: the example's encoder, so the app and the tests can make files without outside
/// tools. It makes the same op choices in the same order as the reference encoder (`qoi.h`),
/// so for the same pixels it writes the same bytes.
public struct QOIEncoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Encodes `bitmap` (premultiplied, as the pipeline hands it out) with alpha divided back
    /// out: 4 channels when some pixel is not opaque, else 3.
    public func encode(_ bitmap: Bitmap) -> Data {
        let rgba = bitmap.unpremultipliedBytes()
        var opaque = true
        for i in stride(from: 3, to: rgba.count, by: 4) where rgba[i] != 255 { opaque = false; break }
        return encodeUnchecked(rgba: rgba, size: bitmap.size, channels: opaque ? 3 : 4, colorspace: 0)
    }

    /// The pixels and header values do not fit together.
    public struct InvalidInput: Error, Sendable, CustomStringConvertible {
        /// What is wrong.
        public let description: String
    }

    /// Encodes straight (not premultiplied) RGBA8 pixels, `size.pixelCount × 4` bytes, with
    /// `channels` (3 or 4) in the header; with 3, alpha is taken as 255. Throws
    /// ``InvalidInput`` when the sizes do not fit (QOI sides are 1 to 2³² − 1).
    public func encode(rgba: [UInt8], size: PixelSize, channels: Int, colorspace: UInt8 = 0) throws -> Data {
        guard size.isValid, size.width <= Int(UInt32.max), size.height <= Int(UInt32.max),
              rgba.count / 4 == size.pixelCount, rgba.count % 4 == 0 else {
            throw InvalidInput(description: "\(rgba.count) bytes are not the RGBA8 pixels of \(size)")
        }
        guard channels == 3 || channels == 4, colorspace <= 1 else {
            throw InvalidInput(description: "channels \(channels), colorspace \(colorspace): 3 or 4 and 0 or 1 expected")
        }
        return encodeUnchecked(rgba: rgba, size: size, channels: channels, colorspace: colorspace)
    }

    private func encodeUnchecked(rgba: [UInt8], size: PixelSize, channels: Int, colorspace: UInt8) -> Data {
        var out = QOI.magic
        out.reserveCapacity(QOI.headerSize + rgba.count + QOI.endMarker.count)
        for value in [UInt32(size.width), UInt32(size.height)] {
            out += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        out += [UInt8(channels), colorspace]

        var index = [UInt8](repeating: 0, count: 64 * 4)
        var pr: UInt8 = 0, pg: UInt8 = 0, pb: UInt8 = 0, pa: UInt8 = 255
        var run = 0
        let last = rgba.count - 4
        for i in stride(from: 0, through: last, by: 4) {
            let r = rgba[i], g = rgba[i + 1], b = rgba[i + 2], a = channels == 4 ? rgba[i + 3] : 255
            if r == pr && g == pg && b == pb && a == pa {
                run += 1
                if run == QOI.maxRun || i == last {
                    out.append(QOI.opRun | UInt8(run - 1))
                    run = 0
                }
                continue
            }
            if run > 0 {
                out.append(QOI.opRun | UInt8(run - 1))
                run = 0
            }
            let slot = QOI.hash(r, g, b, a)
            if index[slot * 4] == r && index[slot * 4 + 1] == g && index[slot * 4 + 2] == b && index[slot * 4 + 3] == a {
                out.append(QOI.opIndex | UInt8(slot))
            } else {
                index[slot * 4] = r; index[slot * 4 + 1] = g; index[slot * 4 + 2] = b; index[slot * 4 + 3] = a
                if a == pa {
                    let vr = Int(Int8(bitPattern: r &- pr)), vg = Int(Int8(bitPattern: g &- pg)), vb = Int(Int8(bitPattern: b &- pb))
                    let vgr = vr - vg, vgb = vb - vg
                    if (-2...1).contains(vr) && (-2...1).contains(vg) && (-2...1).contains(vb) {
                        out.append(QOI.opDiff | UInt8(vr + 2) << 4 | UInt8(vg + 2) << 2 | UInt8(vb + 2))
                    } else if (-8...7).contains(vgr) && (-32...31).contains(vg) && (-8...7).contains(vgb) {
                        out += [QOI.opLuma | UInt8(vg + 32), UInt8(vgr + 8) << 4 | UInt8(vgb + 8)]
                    } else {
                        out += [QOI.opRGB, r, g, b]
                    }
                } else {
                    out += [QOI.opRGBA, r, g, b, a]
                }
            }
            pr = r; pg = g; pb = b; pa = a
        }
        out += QOI.endMarker
        return Data(out)
    }
}
