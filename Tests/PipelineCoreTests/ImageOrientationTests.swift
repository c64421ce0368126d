import Foundation
@testable import PipelineCore
import Testing

/// The orientation algebra a requested turn is folded with: composing two orientations must
/// turn a bitmap exactly as turning it twice does (pixels compared, on a picture with no
/// symmetry), and the rotation/flip spelling must name the orientations EXIF does.
struct ImageOrientationTests {
    /// 3 × 2 pixels, each a different colour, so every one of the eight turns differs.
    static let picture: Bitmap = {
        var bytes: [UInt8] = []
        for index in 0..<6 {
            let pixel: [UInt8] = [UInt8(index * 40), UInt8(255 - index * 30), UInt8(index * 7), 255]
            bytes += pixel
        }
        return Bitmap(width: 3, height: 2, bytesPerRow: 12, bytes: bytes) ?? Bitmap(zeroed: PixelSize(width: 1, height: 1))
    }()

    @Test(arguments: ImageOrientation.allCases)
    func composingTurnsAsTurningTwice(_ first: ImageOrientation) {
        for second in ImageOrientation.allCases {
            let composed = first.followed(by: second)
            #expect(Self.picture.oriented(first).oriented(second) == Self.picture.oriented(composed), "\(first) then \(second)")
        }
        #expect(first.followed(by: first.inverse) == .up)
        #expect(Set(ImageOrientation.allCases.map { Self.picture.oriented($0) }).count == 8, "the picture has no symmetry")
    }

    @Test func rotationsAndFlipsNameTheEXIFOrientations() {
        #expect(ImageOrientation(quarterTurnsClockwise: 0) == .up)
        #expect(ImageOrientation(quarterTurnsClockwise: 1) == .right)
        #expect(ImageOrientation(quarterTurnsClockwise: 2) == .down)
        #expect(ImageOrientation(quarterTurnsClockwise: 3) == .left)
        #expect(ImageOrientation(quarterTurnsClockwise: -1) == .left)
        #expect(ImageOrientation(quarterTurnsClockwise: 5) == .right)
        #expect(ImageOrientation(quarterTurnsClockwise: 0, flop: true) == .upMirrored)
        #expect(ImageOrientation(quarterTurnsClockwise: 0, flip: true) == .downMirrored)
        #expect(ImageOrientation(quarterTurnsClockwise: 0, flop: true, flip: true) == .down)
        // A quarter turn then a flop mirrors along the main diagonal: a transpose.
        #expect(ImageOrientation(quarterTurnsClockwise: 1, flop: true) == .leftMirrored)
        #expect(ImageOrientation(quarterTurnsClockwise: 1, flip: true) == .rightMirrored)
        // The top-left pixel of a quarter turn clockwise was the stored bottom-left one.
        #expect(Self.picture.oriented(.right).pixel(x: 0, y: 0) == Self.picture.pixel(x: 0, y: 1))
    }

    /// The decode options' one turn: the file's orientation, then the transform; with the file's
    /// orientation off, the transform alone.
    @Test func decodeOptionsFoldTheFilesOrientationWithTheTransform() {
        let info = ImageInfo(format: .jpeg, size: PixelSize(width: 30, height: 20), orientation: .right)
        var options = DecodeOptions()
        options.transform = .right
        #expect(options.orientation(for: info) == .down)
        #expect(options.orientedSize(of: info) == PixelSize(width: 30, height: 20))
        options.appliesOrientation = false
        #expect(options.orientation(for: info) == .right)
        #expect(options.orientedSize(of: info) == PixelSize(width: 20, height: 30))
    }

    /// A turn and a resampling filter other than the default take part in the rendition key
    /// only when there is one: renditions stored before the fields counted keep their keys.
    @Test func theRenditionKeyNamesATurn() throws {
        let url = try #require(URL(string: "https://x/a.jpg"))
        var request = ImageRequest(url: url, width: 100, height: 100)
        let plain = ImageKey(request: request, cacheURL: url)
        request.processing.transform = .left
        let turned = ImageKey(request: request, cacheURL: url)
        request.processing.transform = .right
        let otherTurn = ImageKey(request: request, cacheURL: url)
        request.processing.transform = .up
        request.processing.resamplingFilter = .areaAverage
        let areaFiltered = ImageKey(request: request, cacheURL: url)
        let urls = [plain, turned, otherTurn, areaFiltered].map { RenditionStore.url(for: $0, encoding: "jpeg") }
        #expect(Set(urls).count == 4, "a turn or another resampling filter is another rendition")
        request.processing.resamplingFilter = .default
        #expect(RenditionStore.url(for: ImageKey(request: request, cacheURL: url), encoding: "jpeg") == urls[0],
                "the default filter and no turn keep the key of before")
    }
}
