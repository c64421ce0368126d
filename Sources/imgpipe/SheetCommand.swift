import PipelineCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Command {
    /// `imgpipe sheet [SOURCE...] [--size N] [--columns C] --out FILE.png`
    static let sheet = Command(
        name: "sheet", synopsis: "[SOURCE...] [--size N] [--columns C] --out FILE.png",
        summary: "render a contact sheet of the sources (default: the bundled samples)",
        positionals: .anySources, options: SheetOptions(),
        run: { options, invocation in
            let output = try invocation.output(options.out, allowed: ["png"])
            let size = invocation[options.size] ?? 200
            guard size <= 4096 else { throw UsageError(message: "--size must be at most 4096") }
            let urls = invocation.positionals.isEmpty ? try Sources.bundledSamples() : try Sources.urls(invocation.positionals)
            let environment = try Environment(invocation, sources: urls)
            guard !urls.isEmpty else { throw UsageError(message: "no sources given") }
            let columns = min(invocation[options.columns] ?? ContactSheet.defaultColumns(for: urls.count), urls.count)
            // The sheet is one bitmap: held to --max-pixels like any picture, before anything loads.
            let layout = ContactSheet(tileSize: size, columns: columns)
            let sheetSize = layout.size(tileCount: urls.count)
            let maxPixels = invocation[CommonOptions.declared.maxPixels] ?? CommonOptions.defaultMaxPixels
            guard sheetSize.pixelCount <= maxPixels else {
                throw UsageError(message: "a sheet of \(urls.count) pictures at --size \(size) would be \(sheetSize)"
                                 + " (\(sheetSize.pixelCount) pixels), over --max-pixels \(maxPixels);"
                                 + " use a smaller --size, fewer --columns or fewer sources")
            }
            let start = Date()
            let progress = ProgressBar(total: urls.count)
            let verbose = environment.verbose
            let requests = urls.map { ImageRequest(url: $0, width: size, height: size) }
            let results = await Loader.loadAll(requests, environment: environment) { index, result in
                progress.advance()
                if verbose, case .success(let (response, seconds)) = result {
                    printError("\(Sources.label(urls[index])): \(response.source.rawValue) in " + printfFormat("%.1f ms", seconds * 1000))
                }
            }
            progress.end()
            var tiles: [ContactSheet.Tile] = []
            for (url, result) in zip(urls, results) {
                tiles.append(ContactSheet.Tile(name: url.lastPathComponent, result: result.map { $0.0 },
                                               frames: await Self.frameCount(url, result, environment)))
            }
            let sheet = layout.render(tiles)
            try OutputFormat.write(sheet, to: output)
            await environment.finish()
            printError(environment.stats.summary(total: urls.count, seconds: Date().timeIntervalSince(start)))
            print("wrote \(output) (\(sheet.width)×\(sheet.height), \(urls.count) pictures)")
            return results.contains { if case .failure = $0 { true } else { false } } ? 1 : 0
        })
}

/// `sheet`'s options.
struct SheetOptions: OptionGroup {
    let size = Option("size", short: "s", "N", .size, "thumbnail size in pixels (default 200)", .positiveInteger)
    let columns = Option("columns", "C", .output, "thumbnails per row (default: 3 to 5, whichever fills the last row best)",
                         .positiveInteger)
    let out = OutputOptions.out("where to write the sheet (.png)")
}

extension Command {
    /// An animation's frame count for its caption: its header read again, for the formats a
    /// registered decoder reads animations of (GIF, WebP, JPEG XL…); 1 for anything else or
    /// when reading fails.
    fileprivate static func frameCount(_ url: URL, _ result: Result<(ImageResponse, TimeInterval), any Error>,
                                       _ environment: Environment) async -> Int {
        let configuration = environment.pipeline.configuration
        guard case .success(let (response, _)) = result, configuration.decoders.readsAnimations(of: response.format) else { return 1 }
        guard let loader = try? configuration.loaders.requireLoader(for: url),
              case .data(let data, _)? = try? await loader.load(DataLoadRequest(url: url)),
              let info = try? configuration.decoders.requireDecoder(for: data).readInfo(data) else { return 1 }
        return info.frameCount
    }
}

/// Lays thumbnails out on a dark sheet with captions; transparent pictures sit on a checkerboard.
struct ContactSheet {
    struct Tile {
        let name: String
        let result: Result<ImageResponse, any Error>
        /// Frames of an animation (its first is shown), 1 for a still picture.
        var frames = 1
        /// The second caption line instead of the format and size (`demo`: where it came from),
        /// and its colour.
        var caption: String?
        var captionColor: (UInt8, UInt8, UInt8, UInt8) = (140, 170, 210, 255)
    }

    let tileSize: Int
    let columns: Int
    /// The line across the top; `nil`: "IMGPIPE CONTACT SHEET · N PICTURES".
    var title: String?

    /// Up to 4 columns, or 3 or 5 when that leaves fewer empty cells in the last row
    /// (9 pictures make a 3×3 sheet, not 4 + 4 + 1).
    static func defaultColumns(for count: Int) -> Int {
        guard count > 4 else { return max(1, count) }
        func empty(_ columns: Int) -> Int { (columns - count % columns) % columns }
        return [4, 3, 5].min { empty($0) < empty($1) } ?? 4
    }
    var gap: Int { max(12, tileSize / 12) }
    var captionHeight: Int { 2 * (TinyFont.glyphHeight + 5) + 6 }
    var titleHeight: Int { 2 * TinyFont.glyphHeight + gap + 8 }

    var cellWidth: Int { tileSize + gap }
    var cellHeight: Int { tileSize + captionHeight + gap }

    /// The size of the sheet for `tileCount` tiles.
    func size(tileCount: Int) -> PixelSize {
        let rows = (tileCount + columns - 1) / columns
        return PixelSize(width: columns * cellWidth + gap, height: titleHeight + rows * cellHeight + gap / 2)
    }

    func render(_ tiles: [Tile]) -> Bitmap {
        let size = size(tileCount: tiles.count)
        var sheet = Bitmap(zeroed: size)
        fillRect(&sheet, x: 0, y: 0, width: size.width, height: size.height, color: (28, 30, 34, 255))
        TinyFont.draw(title ?? "IMGPIPE CONTACT SHEET · \(tiles.count) PICTURES", into: &sheet, x: gap, y: gap, scale: 2,
                      color: (235, 235, 240, 255), maxWidth: size.width - 2 * gap)
        for (index, tile) in tiles.enumerated() {
            let x0 = gap + (index % columns) * cellWidth
            let y0 = titleHeight + (index / columns) * cellHeight
            fillRect(&sheet, x: x0, y: y0, width: tileSize, height: tileSize, color: (44, 47, 53, 255))
            let caption: String
            switch tile.result {
            case .success(let response):
                let bitmap = response.bitmap
                let x = x0 + (tileSize - bitmap.width) / 2, y = y0 + (tileSize - bitmap.height) / 2
                if response.format == .png || bitmap.bytes.enumerated().contains(where: { $0.offset % 4 == 3 && $0.element < 255 }) {
                    checkerboard(&sheet, x: x, y: y, width: bitmap.width, height: bitmap.height)
                }
                composite(bitmap, onto: &sheet, x: x, y: y)
                caption = tile.caption ?? "\(response.format) \(response.originalSize)" + (tile.frames > 1 ? " · \(tile.frames) frames" : "")
            case .failure(let error):
                drawCross(&sheet, x: x0, y: y0)
                caption = "FAILED: \(error)"
            }
            let textWidth = tileSize
            TinyFont.draw(tile.name, into: &sheet, x: x0, y: y0 + tileSize + 6, color: (230, 230, 235, 255), maxWidth: textWidth)
            TinyFont.draw(caption, into: &sheet, x: x0, y: y0 + tileSize + 6 + TinyFont.glyphHeight + 5,
                          color: tile.captionColor, maxWidth: textWidth)
        }
        return sheet
    }

    /// `sheets` one below the other, left-aligned on the sheet's background (`demo`: one sheet
    /// per step, each rendered by the process that ran it).
    static func stacked(_ sheets: [Bitmap]) -> Bitmap {
        let size = PixelSize(width: sheets.map(\.width).max() ?? 1, height: max(1, sheets.map(\.height).reduce(0, +)))
        var result = Bitmap(zeroed: size)
        let layout = ContactSheet(tileSize: 1, columns: 1)
        layout.fillRect(&result, x: 0, y: 0, width: size.width, height: size.height, color: (28, 30, 34, 255))
        var y = 0
        for sheet in sheets {
            layout.composite(sheet, onto: &result, x: 0, y: y)
            y += sheet.height
        }
        return result
    }

    private func fillRect(_ bitmap: inout Bitmap, x: Int, y: Int, width: Int, height: Int, color: (UInt8, UInt8, UInt8, UInt8)) {
        let stride = bitmap.bytesPerRow, maxX = min(bitmap.width, x + width), maxY = min(bitmap.height, y + height)
        bitmap.withUnsafeMutableBytes { bytes in
            for py in max(0, y)..<max(max(0, y), maxY) {
                for px in max(0, x)..<max(max(0, x), maxX) {
                    let i = py * stride + px * 4
                    bytes[i] = color.0; bytes[i + 1] = color.1; bytes[i + 2] = color.2; bytes[i + 3] = color.3
                }
            }
        }
    }

    private func checkerboard(_ bitmap: inout Bitmap, x: Int, y: Int, width: Int, height: Int) {
        let square = 8
        for cy in stride(from: 0, to: height, by: square) {
            for cx in stride(from: 0, to: width, by: square) {
                let light = ((cx / square) + (cy / square)) % 2 == 0
                fillRect(&bitmap, x: x + cx, y: y + cy, width: min(square, width - cx), height: min(square, height - cy),
                         color: light ? (200, 200, 205, 255) : (150, 150, 158, 255))
            }
        }
    }

    /// Premultiplied "over": dst = src + dst × (1 − src alpha).
    private func composite(_ source: Bitmap, onto sheet: inout Bitmap, x: Int, y: Int) {
        let sheetStride = sheet.bytesPerRow, sheetWidth = sheet.width, sheetHeight = sheet.height
        source.withUnsafeBytes { src in
            sheet.withUnsafeMutableBytes { dst in
                for sy in 0..<source.height where y + sy >= 0 && y + sy < sheetHeight {
                    for sx in 0..<source.width where x + sx >= 0 && x + sx < sheetWidth {
                        let s = sy * source.bytesPerRow + sx * 4, d = (y + sy) * sheetStride + (x + sx) * 4
                        let inverse = 255 - Int(src[s + 3])
                        for c in 0..<4 {
                            dst[d + c] = UInt8(min(255, Int(src[s + c]) + (Int(dst[d + c]) * inverse + 127) / 255))
                        }
                    }
                }
            }
        }
    }

    private func drawCross(_ bitmap: inout Bitmap, x: Int, y: Int) {
        for i in 0..<tileSize {
            for t in -1...1 {
                fillRect(&bitmap, x: x + i, y: y + i + t, width: 1, height: 1, color: (200, 60, 60, 255))
                fillRect(&bitmap, x: x + tileSize - 1 - i, y: y + i + t, width: 1, height: 1, color: (200, 60, 60, 255))
            }
        }
    }
}
