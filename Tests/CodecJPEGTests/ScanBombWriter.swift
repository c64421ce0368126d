import Foundation

/// Writes the progressive JPEG of `../shared/hostile/tools/mkscans.py`: a gray picture whose
/// scans cost almost nothing to store but each walk every block. Scan 1 is a DC scan (one 1-bit
/// code a block), scan 2 the first AC scan (EOB runs), every further one an AC refinement of
/// 1...63 (EOB runs again; libjpeg only warns about the "bogus progression").
enum ScanBombWriter {
    static func jpeg(width: Int, height: Int, scans: Int) -> Data {
        let blocks = ((width + 7) / 8) * ((height + 7) / 8)
        var file: [UInt8] = [0xFF, 0xD8]
        func segment(_ marker: UInt8, _ payload: [UInt8]) {
            let length = payload.count + 2
            file += [0xFF, marker, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        }
        segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
        segment(0xC2, [8, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF), 1, 1, 0x11, 0])
        // DC: one symbol (category 0), code "0". AC: EOB0...EOB14, 4-bit codes 0000...1110.
        segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])
        segment(0xC4, [0x10, 0, 0, 0, 15] + [UInt8](repeating: 0, count: 12) + (0..<15).map { UInt8($0 << 4) })
        var dc = Bits()
        for _ in 0..<blocks { dc.put(0, 1) }
        let dcData = dc.flushed()
        var ac = Bits()
        var left = blocks
        while left > 0 {
            let run = min(left, 32767)
            let r = Int.bitWidth - 1 - run.leadingZeroBitCount
            ac.put(r, 4)
            if r > 0 { ac.put(run - (1 << r), r) }
            left -= run
        }
        let acData = ac.flushed()
        func scan(_ start: UInt8, _ end: UInt8, high: UInt8, low: UInt8, _ data: [UInt8]) {
            segment(0xDA, [1, 1, 0, start, end, high << 4 | low])
            file += data
        }
        scan(0, 0, high: 0, low: 0, dcData)
        if scans > 1 { scan(1, 63, high: 0, low: 1, acData) }
        for _ in 0..<max(0, scans - 2) { scan(1, 63, high: 1, low: 0, acData) }
        file += [0xFF, 0xD9]
        return Data(file)
    }

    /// MSB-first bits with JPEG's byte stuffing (a 0 after every FF), padded with 1s.
    private struct Bits {
        var bytes: [UInt8] = []
        var accumulator = 0, count = 0

        mutating func put(_ value: Int, _ length: Int) {
            for shift in stride(from: length - 1, through: 0, by: -1) {
                accumulator = accumulator << 1 | (value >> shift & 1)
                count += 1
                if count == 8 {
                    bytes.append(UInt8(accumulator))
                    if accumulator == 0xFF { bytes.append(0) }
                    accumulator = 0
                    count = 0
                }
            }
        }

        mutating func flushed() -> [UInt8] {
            while count != 0 { put(1, 1) }
            return bytes
        }
    }
}
