import CLCMS2

/// A fast path for the common case, an RGB matrix-shaper profile (Adobe RGB, ProPhoto, Display
/// P3, most camera profiles) converted relative colorimetric to sRGB: three input curves as
/// 256-entry tables, one 3×3 matrix (profile → PCS → sRGB, both D50-adapted), clipped, and
/// sRGB's inverse curve as a 16 384-entry table. The same computation as lcms's matrix-shaper
/// pipeline (which clips in linear light the same way), about 5× faster than
/// `cmsDoTransform` on 8-bit RGBA with lcms 2.14; within a level of it (tested against the
/// corpus's lcms references).
struct MatrixShaper: Sendable {
    /// Linear light of each stored 8-bit value, per channel (`3 × 256`), times ``one``.
    private let curves: [Int32]
    /// Row-major profile-linear → sRGB-linear matrix, times ``one``.
    private let matrix: [Int]
    /// sRGB-encoded 8-bit value of linear light `i / one`, `i` in `0...one`.
    private let encode: [UInt8]
    private static let fractionBits = 14
    private static let one = 1 << fractionBits

    /// The fast path for `profile` towards `srgb`, or `nil` when the profile is not a plain
    /// matrix-shaper (it has lookup tables for `intent`, or a tag is missing).
    init?(profile: cmsHPROFILE, srgb: cmsHPROFILE, intent: cmsUInt32Number) {
        guard cmsIsMatrixShaper(profile) != 0, cmsIsCLUT(profile, intent, cmsUInt32Number(LCMS_USED_AS_INPUT)) == 0,
              intent == cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC) || intent == cmsUInt32Number(INTENT_PERCEPTUAL),
              let source = MatrixShaper.colorants(profile), let target = MatrixShaper.colorants(srgb),
              let inverse = MatrixShaper.inverted(target) else { return nil }
        var curves = [Int32](repeating: 0, count: 3 * 256)
        for (channel, tag) in [cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag].enumerated() {
            guard let raw = cmsReadTag(profile, tag) else { return nil }
            let curve = OpaquePointer(raw)
            for value in 0..<256 {
                let linear = cmsEvalToneCurveFloat(curve, Float(value) / 255)
                curves[channel * 256 + value] = linear.isFinite ? Int32((max(0, min(1, linear)) * Float(MatrixShaper.one)).rounded()) : 0
            }
        }
        guard let raw = cmsReadTag(srgb, cmsSigRedTRCTag),
              let reversed = cmsReverseToneCurve(OpaquePointer(raw)) else { return nil }
        defer { cmsFreeToneCurve(reversed) }
        var encode = [UInt8](repeating: 0, count: MatrixShaper.one + 1)
        for index in encode.indices {
            let value = cmsEvalToneCurveFloat(reversed, Float(index) / Float(MatrixShaper.one))
            encode[index] = UInt8(max(0, min(255, (value * 255).rounded())))
        }
        var product = [Double](repeating: 0, count: 9)
        for row in 0..<3 {
            for column in 0..<3 {
                product[row * 3 + column] = (0..<3).reduce(0.0) { $0 + inverse[row * 3 + $1] * source[$1 * 3 + column] }
            }
        }
        // A real profile's coefficients are within ±4; a fuzzed one's may be anything.
        guard product.allSatisfy({ $0.isFinite && abs($0) < 64 }) else { return nil }
        let matrix = product.map { Int(($0 * Double(MatrixShaper.one)).rounded()) }
        self.curves = curves
        self.matrix = matrix
        self.encode = encode
    }

    /// Converts `count` straight RGBA8 pixels in place; alpha untouched. Fixed point, 14
    /// fractional bits (like lcms's own 8-bit matrix-shaper): integer arithmetic only.
    func convert(_ pixels: UnsafeMutablePointer<UInt8>, count: Int) {
        curves.withUnsafeBufferPointer { curves in
            encode.withUnsafeBufferPointer { encode in
                let m = matrix
                let (m0, m1, m2, m3, m4, m5, m6, m7, m8) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
                let one = MatrixShaper.one, half = one >> 1
                @inline(__always) func encoded(_ x: Int) -> UInt8 {
                    encode[min(one, max(0, (x + half) >> MatrixShaper.fractionBits))]
                }
                var p = pixels
                for _ in 0..<count {
                    let r = Int(curves[Int(p[0])]), g = Int(curves[256 + Int(p[1])]), b = Int(curves[512 + Int(p[2])])
                    p[0] = encoded(m0 * r + m1 * g + m2 * b)
                    p[1] = encoded(m3 * r + m4 * g + m5 * b)
                    p[2] = encoded(m6 * r + m7 * g + m8 * b)
                    p += 4
                }
            }
        }
    }

    /// The colorant matrix (columns rXYZ, gXYZ, bXYZ), row-major, or nil when a tag is missing.
    private static func colorants(_ profile: cmsHPROFILE) -> [Double]? {
        var columns: [cmsCIEXYZ] = []
        for tag in [cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag] {
            guard let raw = cmsReadTag(profile, tag) else { return nil }
            columns.append(raw.assumingMemoryBound(to: cmsCIEXYZ.self).pointee)
        }
        return [columns[0].X, columns[1].X, columns[2].X,
                columns[0].Y, columns[1].Y, columns[2].Y,
                columns[0].Z, columns[1].Z, columns[2].Z]
    }

    /// The inverse of a row-major 3×3 matrix, or nil when it is singular.
    private static func inverted(_ m: [Double]) -> [Double]? {
        let a = m[4] * m[8] - m[5] * m[7], b = m[5] * m[6] - m[3] * m[8], c = m[3] * m[7] - m[4] * m[6]
        let determinant = m[0] * a + m[1] * b + m[2] * c
        guard abs(determinant) > 1e-12, determinant.isFinite else { return nil }
        let inverse = [a, m[2] * m[7] - m[1] * m[8], m[1] * m[5] - m[2] * m[4],
                       b, m[0] * m[8] - m[2] * m[6], m[2] * m[3] - m[0] * m[5],
                       c, m[1] * m[6] - m[0] * m[7], m[0] * m[4] - m[1] * m[3]]
        return inverse.map { $0 / determinant }
    }
}
