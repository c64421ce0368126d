import PipelineCore

/// Finds the EXIF orientation tag (0x0112) in a JPEG's APP1 `Exif` segment.
///
/// The parser walks the marker segments before the first scan and reads IFD0 of the TIFF
/// structure inside APP1; every offset is bounds-checked, so hostile bytes give `nil`, never
/// a crash. It allocates nothing.
enum EXIFOrientation {
    /// The orientation stored in `jpeg`, or `nil` when there is none (or it is invalid).
    static func read(fromJPEG jpeg: UnsafeRawBufferPointer) -> ImageOrientation? {
        guard jpeg.count >= 4, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { return nil }
        var i = 2
        while i + 4 <= jpeg.count {
            guard jpeg[i] == 0xFF else { return nil }
            let marker = jpeg[i + 1]
            switch marker {
            case 0xFF:  // fill byte before a marker
                i += 1
                continue
            case 0x01, 0xD0...0xD8:  // markers without a length
                i += 2
                continue
            case 0xDA, 0xD9:  // start of scan or end of image: no more headers
                return nil
            default:
                break
            }
            let length = Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3])
            guard length >= 2, i + 2 + length <= jpeg.count else { return nil }
            let body = UnsafeRawBufferPointer(rebasing: jpeg[(i + 4)..<(i + 2 + length)])
            if marker == 0xE1, body.count >= 6, Array(body.prefix(6)) == [0x45, 0x78, 0x69, 0x66, 0, 0] {
                if let orientation = read(fromTIFF: UnsafeRawBufferPointer(rebasing: body[6...])) {
                    return orientation
                }
            }
            i += 2 + length
        }
        return nil
    }

    /// The orientation in IFD0 of a TIFF structure (the body of an Exif segment after `Exif\0\0`).
    static func read(fromTIFF tiff: UnsafeRawBufferPointer) -> ImageOrientation? {
        guard tiff.count >= 8 else { return nil }
        let littleEndian: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= tiff.count else { return nil }
            let a = Int(tiff[at]), b = Int(tiff[at + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }
        func u32(_ at: Int) -> Int? {
            guard let low = u16(littleEndian ? at : at + 2), let high = u16(littleEndian ? at + 2 : at) else { return nil }
            return high << 16 | low
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for entry in 0..<count {
            let at = ifd + 2 + entry * 12
            guard let tag = u16(at), let type = u16(at + 2) else { return nil }
            guard tag == 0x0112 else { continue }
            // SHORT (3) is what the standard says; some writers use LONG (4).
            let value = type == 4 ? u32(at + 8) : u16(at + 8)
            return value.flatMap { ImageOrientation(rawValue: $0) }
        }
        return nil
    }
}
