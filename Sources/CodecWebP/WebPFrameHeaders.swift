/// The frames of an animated WebP as its container's `ANMF` chunk headers give them, read in
/// one pass over the top-level RIFF chunks, no pixel decoded.
///
/// libwebp has no linear way to read them: its demuxer looks a frame up by number from the
/// head of a list, so `WebPDemuxNextFrame` is O(n) per step and summing the durations of a
/// 100,000-frame file that way took 28 s. This walk is O(n) in the chunk count, skipping each
/// chunk by its declared length. Every length is checked against the bytes before it is used
/// (and the walk ends at the RIFF size, as libwebp's does); a chunk that runs past them ends
/// the walk as damaged, and the caller then reports no duration rather than a wrong one.
enum WebPFrameHeaders {
    /// The ANMF payload's fixed header: X, Y, width − 1, height − 1, duration (24 bits each),
    /// then one flags byte; the duration is at offset 12.
    static let frameHeaderLength = 16

    /// Calls `body` with each `ANMF` chunk's frame duration in milliseconds, in order; returns
    /// whether the walk reached the end of the container without a damaged chunk.
    static func walk(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (Int) -> Void) -> Bool {
        func le(_ offset: Int, _ count: Int) -> Int {
            (0..<count).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
        }
        guard bytes.count >= 12, bytes.starts(with: "RIFF".utf8), bytes[8..<12].elementsEqual("WEBP".utf8) else {
            return false
        }
        let end = min(bytes.count, 8 + le(4, 4))
        var offset = 12
        while offset + 8 <= end {
            let size = le(offset + 4, 4)
            let payload = offset + 8
            guard size <= end - payload else { return false }  // runs past the container: damaged
            if bytes[offset..<offset + 4].elementsEqual("ANMF".utf8) {
                guard size >= frameHeaderLength else { return false }
                body(le(payload + 12, 3))
            }
            offset = payload + size + size % 2
        }
        return true
    }

    /// The sum of the frames' durations when the walk is complete and finds `frameCount`
    /// frames (the demuxer's count), else `nil`; 0 for a still picture (one frame and no
    /// `ANMF` chunk), as libwebp's iterator gives. O(n) in the chunk count, no allocation.
    static func totalDuration(_ bytes: UnsafeBufferPointer<UInt8>, frameCount: Int) -> Int? {
        var total = 0, count = 0
        let complete = walk(bytes) {
            total += $0
            count += 1
        }
        if complete && count == 0 && frameCount == 1 { return 0 }
        return complete && count == frameCount ? total : nil
    }
}
