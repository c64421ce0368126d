extension Bitmap {
    /// The bitmap turned upright from stored `orientation` (rotations and mirrors by EXIF rules),
    /// in the same ``PixelFormat``.
    public func oriented(_ orientation: ImageOrientation) -> Bitmap {
        guard orientation != .up else { return self }
        let w = width, h = height
        let outSize = orientation.uprightSize(of: size)
        var out = Bitmap(zeroed: outSize, pixelFormat: pixelFormat)
        let outWidth = outSize.width
        withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                let srcRaw = UnsafeRawPointer(src.baseAddress!)
                let dstRaw = UnsafeMutableRawPointer(dst.baseAddress!)
                for sy in 0..<h {
                    let rowStart = srcRaw + sy * bytesPerRow
                    for sx in 0..<w {
                        let (x, y): (Int, Int)
                        switch orientation {
                        case .up: (x, y) = (sx, sy)
                        case .upMirrored: (x, y) = (w - 1 - sx, sy)
                        case .down: (x, y) = (w - 1 - sx, h - 1 - sy)
                        case .downMirrored: (x, y) = (sx, h - 1 - sy)
                        case .leftMirrored: (x, y) = (sy, sx)
                        case .right: (x, y) = (h - 1 - sy, sx)
                        case .rightMirrored: (x, y) = (h - 1 - sy, w - 1 - sx)
                        case .left: (x, y) = (sy, w - 1 - sx)
                        }
                        let pixel = rowStart.loadUnaligned(fromByteOffset: sx * 4, as: UInt32.self)
                        dstRaw.storeBytes(of: pixel, toByteOffset: (y * outWidth + x) * 4, as: UInt32.self)
                    }
                }
            }
        }
        return out
    }
}
