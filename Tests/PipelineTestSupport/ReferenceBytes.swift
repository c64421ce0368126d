import PipelineCore

/// A bitmap the way reference hashes in the corpus (`frames.json`, the SVG `references.json`)
/// are taken: straight RGBA8, tightly packed, colour zeroed where alpha is 0 (tools disagree on
/// the colour of a pixel nobody sees).
public func referenceBytes(_ bitmap: Bitmap) -> [UInt8] {
    var bytes = bitmap.unpremultipliedBytes()
    var i = 0
    while i + 3 < bytes.count {
        if bytes[i + 3] == 0 { bytes[i] = 0; bytes[i + 1] = 0; bytes[i + 2] = 0 }
        i += 4
    }
    return bytes
}
