import PipelineCore

/// A 5×7 pixel font for the contact sheet's captions: upper-case letters, digits and a little
/// punctuation (lower case is drawn as upper case; unknown characters as a blank).
enum TinyFont {
    static let glyphWidth = 5, glyphHeight = 7, advance = 6

    /// Draws `text` at (`x`, `y`) into `bitmap` in `color` (premultiplied RGBA), scaled by
    /// `scale`, clipped to the bitmap and to `maxWidth` pixels (ending in "…" dots if cut).
    static func draw(_ text: String, into bitmap: inout Bitmap, x: Int, y: Int, scale: Int = 1,
                     color: (UInt8, UInt8, UInt8, UInt8), maxWidth: Int = .max) {
        var characters = Array(text.uppercased())
        let fits = max(0, maxWidth / (advance * scale))
        if characters.count > fits {
            characters = Array(characters.prefix(max(0, fits - 2))) + [".", "."]
        }
        for (index, character) in characters.enumerated() {
            guard let rows = glyphs[character] else { continue }
            for (row, line) in rows.enumerated() {
                for (column, pixel) in line.enumerated() where pixel == "#" {
                    fill(&bitmap, x: x + (index * advance + column) * scale, y: y + row * scale, size: scale, color: color)
                }
            }
        }
    }

    /// The width in pixels of `text` at `scale`.
    static func width(of text: String, scale: Int = 1) -> Int { text.count * advance * scale }

    private static func fill(_ bitmap: inout Bitmap, x: Int, y: Int, size: Int, color: (UInt8, UInt8, UInt8, UInt8)) {
        let width = bitmap.width, height = bitmap.height, stride = bitmap.bytesPerRow
        bitmap.withUnsafeMutableBytes { bytes in
            for py in y..<(y + size) where py >= 0 && py < height {
                for px in x..<(x + size) where px >= 0 && px < width {
                    let i = py * stride + px * 4
                    bytes[i] = color.0; bytes[i + 1] = color.1; bytes[i + 2] = color.2; bytes[i + 3] = color.3
                }
            }
        }
    }

    private static let glyphs: [Character: [String]] = {
        let table: [(Character, [String])] = [
            ("A", [" ### ", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"]),
            ("B", ["#### ", "#   #", "#   #", "#### ", "#   #", "#   #", "#### "]),
            ("C", [" ### ", "#   #", "#    ", "#    ", "#    ", "#   #", " ### "]),
            ("D", ["#### ", "#   #", "#   #", "#   #", "#   #", "#   #", "#### "]),
            ("E", ["#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#####"]),
            ("F", ["#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#    "]),
            ("G", [" ### ", "#   #", "#    ", "# ###", "#   #", "#   #", " ####"]),
            ("H", ["#   #", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"]),
            ("I", [" ### ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "]),
            ("J", ["  ###", "   # ", "   # ", "   # ", "   # ", "#  # ", " ##  "]),
            ("K", ["#   #", "#  # ", "# #  ", "##   ", "# #  ", "#  # ", "#   #"]),
            ("L", ["#    ", "#    ", "#    ", "#    ", "#    ", "#    ", "#####"]),
            ("M", ["#   #", "## ##", "# # #", "# # #", "#   #", "#   #", "#   #"]),
            ("N", ["#   #", "#   #", "##  #", "# # #", "#  ##", "#   #", "#   #"]),
            ("O", [" ### ", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "]),
            ("P", ["#### ", "#   #", "#   #", "#### ", "#    ", "#    ", "#    "]),
            ("Q", [" ### ", "#   #", "#   #", "#   #", "# # #", "#  # ", " ## #"]),
            ("R", ["#### ", "#   #", "#   #", "#### ", "# #  ", "#  # ", "#   #"]),
            ("S", [" ####", "#    ", "#    ", " ### ", "    #", "    #", "#### "]),
            ("T", ["#####", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  "]),
            ("U", ["#   #", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "]),
            ("V", ["#   #", "#   #", "#   #", "#   #", "#   #", " # # ", "  #  "]),
            ("W", ["#   #", "#   #", "#   #", "# # #", "# # #", "# # #", " # # "]),
            ("X", ["#   #", "#   #", " # # ", "  #  ", " # # ", "#   #", "#   #"]),
            ("Y", ["#   #", "#   #", " # # ", "  #  ", "  #  ", "  #  ", "  #  "]),
            ("Z", ["#####", "    #", "   # ", "  #  ", " #   ", "#    ", "#####"]),
            ("0", [" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "]),
            ("1", ["  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "]),
            ("2", [" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"]),
            ("3", ["#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "]),
            ("4", ["   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "]),
            ("5", ["#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "]),
            ("6", ["  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "]),
            ("7", ["#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "]),
            ("8", [" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "]),
            ("9", [" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "]),
            (".", ["     ", "     ", "     ", "     ", "     ", " ##  ", " ##  "]),
            (",", ["     ", "     ", "     ", "     ", " ##  ", "  #  ", " #   "]),
            ("-", ["     ", "     ", "     ", "#####", "     ", "     ", "     "]),
            ("_", ["     ", "     ", "     ", "     ", "     ", "     ", "#####"]),
            (":", ["     ", " ##  ", " ##  ", "     ", " ##  ", " ##  ", "     "]),
            ("/", ["     ", "    #", "   # ", "  #  ", " #   ", "#    ", "     "]),
            ("(", ["   # ", "  #  ", " #   ", " #   ", " #   ", "  #  ", "   # "]),
            (")", [" #   ", "  #  ", "   # ", "   # ", "   # ", "  #  ", " #   "]),
            ("%", ["##   ", "##  #", "   # ", "  #  ", " #   ", "#  ##", "   ##"]),
            ("×", ["     ", "#   #", " # # ", "  #  ", " # # ", "#   #", "     "]),
            ("·", ["     ", "     ", "     ", " ##  ", " ##  ", "     ", "     "]),
        ]
        return Dictionary(uniqueKeysWithValues: table)
    }()
}
